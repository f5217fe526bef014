"""Step scores of a process reward model on hand-written responses to one chain problem.

    python scripts/prm_probe.py PRM_DIR "Start with 9. Add 2." "9 + 2 = 11\\n#### 11" "9 + 2 = 12"

Each response is split at the PRM card's separator (``\\n`` in a shell argument stands for a
line break) and scored after the prompt as the RL source sees it (the chain instruction, the
model's chat template); prints one line per response: its steps and their p(+).
"""

from __future__ import annotations

import argparse
import json

import torch

from lightrft.adapters.datasets.synthetic_steps import CHAIN_INSTRUCTION
from lightrft.adapters.reward_models.process import HfProcessRewardModel
from lightrft.domain.process_rewards import split_steps, step_probabilities


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prm", help="a PRM directory (lightrft rm train --kind process)")
    parser.add_argument("question", help='the chain, e.g. "Start with 9. Add 2."')
    parser.add_argument("responses", nargs="+", help="responses, lines separated by \\n")
    args = parser.parse_args()
    prm = HfProcessRewardModel.from_pretrained(args.prm, torch.device("cpu"))
    messages = [{"role": "user", "content": f"{args.question}\n{CHAIN_INSTRUCTION}"}]
    prompt = prm.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    for response in args.responses:
        text = response.replace("\\n", "\n")
        steps = [text[p.start : p.end] for p in split_steps(text, prm.card.separator)]
        scores = step_probabilities(*prm.step_logits([prm.encode(prompt, steps)]))
        print(json.dumps({"steps": steps, "p_plus": [round(float(x), 2) for x in scores]}))


if __name__ == "__main__":
    main()
