"""Step scores of a process reward model on hand-written responses to one chain problem, or
how often it tells a right step from a wrong one.

    python scripts/prm_probe.py PRM_DIR "Start with 9. Add 2." "9 + 2 = 11\\n#### 11" "9 + 2 = 12"
    python scripts/prm_probe.py PRM_DIR --right-vs-wrong 64 [--phrasing sentence]

Each response is split at the PRM card's separator (``\\n`` in a shell argument stands for a
line break) and scored after the prompt as the RL source sees it (the chain instruction, the
model's chat template); prints one line per response: its steps and their p(+).

``--right-vs-wrong N``: the first N held-out one-operation chains of ``lightrft demo prm``
(seed 10000), each worked once right and once with the result off by 1-3 (the step in
``--phrasing``, ``a op b = c`` by default, then ``#### c``); prints how often the right step
scores higher and the mean p(+) of each.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Sequence

import torch

from lightrft.adapters.datasets.synthetic_steps import (
    CHAIN_INSTRUCTION,
    PHRASINGS,
    chain_problems,
)
from lightrft.adapters.reward_models.process import HfProcessRewardModel
from lightrft.domain.process_rewards import split_steps, step_probabilities

HELD_OUT_SEED = 10_000  # the demo's held-out chains (recipes/prm.py)


def _prompt(prm: HfProcessRewardModel, user: str) -> str:
    messages = [{"role": "user", "content": user}]
    return str(
        prm.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    )


def _scores(prm: HfProcessRewardModel, prompt: str, steps: Sequence[str]) -> list[float]:
    return [float(x) for x in step_probabilities(*prm.step_logits([prm.encode(prompt, steps)]))]


def right_vs_wrong(prm: HfProcessRewardModel, n: int, phrasing: str = "symbol") -> dict[str, float]:
    """The step line's p(+) right against off by 1-3 over ``n`` held-out chains, the step
    written in ``phrasing`` (:data:`PHRASINGS`)."""
    write = PHRASINGS[phrasing].write
    rng = random.Random(0)
    higher, right, wrong = 0, 0.0, 0.0
    separator = prm.card.separator
    for row in chain_problems(n, HELD_OUT_SEED, length=1):
        start, (symbol, operand) = row["chain"]["start"], row["chain"]["ops"][0]
        result = int(row["reference"])
        off = result + rng.choice((-3, -2, -1, 1, 2, 3))
        prompt = _prompt(prm, row["prompt"])
        good, bad = (
            _scores(prm, prompt, [write(start, symbol, operand, c) + separator, f"#### {c}"])[0]
            for c in (result, off)
        )
        higher += good > bad
        right, wrong = right + good, wrong + bad
    return {"chains": n, "right_higher": higher / n, "p_right": right / n, "p_wrong": wrong / n}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prm", help="a PRM directory (lightrft rm train --kind process)")
    parser.add_argument("question", nargs="?", help='the chain, e.g. "Start with 9. Add 2."')
    parser.add_argument("responses", nargs="*", help="responses, lines separated by \\n")
    parser.add_argument("--right-vs-wrong", type=int, default=None, metavar="N")
    parser.add_argument("--phrasing", choices=sorted(PHRASINGS), default="symbol")
    args = parser.parse_args()
    prm = HfProcessRewardModel.from_pretrained(args.prm, torch.device("cpu"))
    if args.right_vs_wrong is not None:
        print(json.dumps(right_vs_wrong(prm, args.right_vs_wrong, args.phrasing)))
        return
    if args.question is None or not args.responses:
        parser.error("give a question and responses, or --right-vs-wrong N")
    prompt = _prompt(prm, f"{args.question}\n{CHAIN_INSTRUCTION}")
    for response in args.responses:
        text = response.replace("\\n", "\n")
        steps = [text[p.start : p.end] for p in split_steps(text, prm.card.separator)]
        scores = _scores(prm, prompt, steps)
        print(json.dumps({"steps": steps, "p_plus": [round(x, 2) for x in scores]}))


if __name__ == "__main__":
    main()
