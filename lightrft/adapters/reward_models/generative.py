"""``HfGenerativeRewardModel``: a judge model prompted with a template, its verdict parsed.

B samples. For each sample the template is filled with ``{prompt}`` (the policy's rendered
prompt text), ``{response}`` and ``{reference}`` (empty when the prompt has none), rendered
as one user message through the judge tokenizer's chat template (plain text when it has
none), and generated greedily by a ``RolloutEngine`` (the same machinery as rollouts:
``HfRolloutEngine`` over the judge model, or ``VllmRolloutEngine`` / ``SglangRolloutEngine``
started on the judge's directory). A strict parser
(:mod:`~lightrft.adapters.reward_models.verdict`) turns each verdict into a score; an
unparsable verdict gets ``unparsable_score`` and is counted, never guessed. ``onload`` /
``offload`` wake the engine and put it to sleep. Metrics: ``unparsable`` (count),
``unparsable_rate``, ``verdict_tokens`` (mean generated tokens).

Rows whose prompt has images or audio: a judge given ``media_encoder`` (the judge model's
prompt encoder; its engine built with the family's multimodal inputs) reads them
(:mod:`~lightrft.adapters.reward_models.judge_media`); a text judge refuses such a row with a
``ValueError`` naming it, unless ``ignore_media`` (then it judges the text alone).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import structlog
import torch

from lightrft.adapters.reward_models.judge_media import (
    media_markup,
    media_message,
    row_media,
    row_where,
)
from lightrft.adapters.reward_models.verdict import VerdictParser
from lightrft.adapters.reward_parts.source_bases import ColocatedModelSource
from lightrft.domain.ports import RolloutEngine
from lightrft.domain.types import PromptRecord, RewardResult, RewardSample, SamplingParams

log = structlog.get_logger(__name__)

DEFAULT_TEMPLATE = (
    "You are grading an answer.\n\nQuestion:\n{prompt}\n\nAnswer:\n{response}\n\n"
    "Reference answer (may be empty):\n{reference}\n\n"
    "Judge correctness and clarity, then end with one line 'Score: X/10'."
)


def check_judge_template(template: str) -> None:
    """``ValueError`` unless ``template`` uses only ``{prompt}``, ``{response}``,
    ``{reference}``."""
    try:
        template.format(prompt="", response="", reference="")
    except (KeyError, IndexError, ValueError) as error:
        raise ValueError(
            f"judge template may use only {{prompt}}, {{response}}, {{reference}}: {error}"
        ) from None


def render_judge_prompt(
    tokenizer: Any,
    template: str,
    use_chat_template: bool,
    *,
    prompt: str,
    response: str,
    reference: str,
    media: dict[str, list[Any]] | None = None,
) -> tuple[str, list[int]]:
    """(text, token ids) of the judge's prompt: the filled ``template`` as one user message
    through the chat template with the generation prompt, or plain text with the
    tokenizer's special tokens. With ``media`` (``{kind: items}``) the message starts with
    one part per item (one placeholder each; a chat template is then required). Judge
    training lays its rows out with this function too."""
    text = template.format(prompt=prompt, response=response, reference=reference)
    if media and not use_chat_template:
        raise ValueError("a judge prompt with media needs the judge's chat template")
    if use_chat_template:
        message = media_message(text, media) if media else [{"role": "user", "content": text}]
        text = str(
            tokenizer.apply_chat_template(message, tokenize=False, add_generation_prompt=True)
        )
        return text, list(tokenizer(text, add_special_tokens=False)["input_ids"])
    return text, list(tokenizer(text)["input_ids"])


class HfGenerativeRewardModel(ColocatedModelSource):
    """``RewardSource`` asking a judge engine for verdicts (see the module docstring)."""

    def __init__(
        self,
        engine: RolloutEngine,
        tokenizer: Any,
        parser: VerdictParser,
        *,
        name: str = "judge",
        template: str = DEFAULT_TEMPLATE,
        unparsable_score: float = 0.0,
        max_new_tokens: int = 256,
        use_chat_template: bool | None = None,
        media_encoder: Any | None = None,
        ignore_media: bool = False,
    ) -> None:
        if not math.isfinite(unparsable_score):
            raise ValueError(f"unparsable_score must be finite, got {unparsable_score}")
        check_judge_template(template)
        self.engine, self.tokenizer, self.parser = engine, tokenizer, parser
        self._name = name
        self.template = template
        self.unparsable_score = unparsable_score
        self.sampling = SamplingParams(n=1, temperature=0.0, max_new_tokens=max_new_tokens, seed=0)
        has_template = bool(getattr(tokenizer, "chat_template", None))
        self.use_chat_template = has_template if use_chat_template is None else use_chat_template
        self.media_encoder, self.ignore_media = media_encoder, ignore_media
        self._markups: dict[str, str] = {}
        self.last_verdicts: list[str] = []

    def judge_prompt(self, sample: RewardSample) -> PromptRecord:
        """The judge's rendered and tokenized prompt for ``sample``, its media encoded by
        the judge's encoder (see the module docstring)."""
        record = sample.prompt
        media = row_media(record)
        if media and self.media_encoder is None and not self.ignore_media:
            counts = ", ".join(f"{len(items)} {kind}(s)" for kind, items in media.items())
            raise ValueError(
                f"{row_where(record)}: the prompt has {counts} but judge {self._name!r} reads "
                "text only; use a vision- or audio-language judge (generative_rm modality) or "
                "set ignore_media to judge the text alone"
            )
        encoder = self.media_encoder
        media = media if encoder is not None else {}
        prompt = record.prompt_text
        for kind in media:  # the policy's markup: each item gets the judge's one placeholder
            prompt = prompt.replace(self._markup(kind), "")
        text, ids = render_judge_prompt(
            self.tokenizer,
            self.template,
            self.use_chat_template,
            prompt=prompt,
            response=sample.completion.text,
            reference=record.reference or "",
            media=media,
        )
        uid = f"judge:{record.uid}"
        if not media or encoder is None:
            return PromptRecord(uid, text, tuple(ids))
        raw = PromptRecord(
            uid,
            text,
            tuple(ids),
            multimodal={f"{kind}s": items for kind, items in media.items()},
            metadata={"where": f"judge prompt of {row_where(record)}"},
        )
        encoded: PromptRecord = encoder.encode(raw)
        return encoded

    def _markup(self, kind: str) -> str:
        if kind not in self._markups:
            self._markups[kind] = media_markup(self.tokenizer, kind)
        return self._markups[kind]

    def score(self, samples: Sequence[RewardSample]) -> RewardResult:
        """Scores (B,) float32 parsed from the judge's greedy verdicts."""
        if not samples:
            return RewardResult(torch.zeros(0), {"unparsable": torch.tensor(0.0)})
        prompts = [self.judge_prompt(s) for s in samples]  # a refused row: before generating
        completions = self.engine.generate(prompts, self.sampling)
        self.last_verdicts = [c.text for c in completions]
        parsed = [self.parser.parse(c.text) for c in completions]
        unparsable = sum(p is None for p in parsed)
        if unparsable:
            log.info("reward.judge.unparsable", name=self._name, count=unparsable)
        scores = torch.tensor(
            [self.unparsable_score if p is None else p for p in parsed], dtype=torch.float32
        )
        metrics = {
            "unparsable": torch.tensor(float(unparsable)),
            "unparsable_rate": torch.tensor(unparsable / len(samples)),
            "verdict_tokens": torch.tensor(
                sum(len(c.token_ids) for c in completions) / len(completions)
            ),
        }
        return RewardResult(scores, metrics)

    def close(self) -> None:
        """Puts the judge engine to sleep for good (frees its memory), and shuts it down when
        it can be (an engine with its own weights, e.g. ``VllmRolloutEngine``)."""
        self.offload()
        closing = getattr(self.engine, "close", None)
        if callable(closing):
            closing()

    def onload(self) -> None:
        """Wakes the judge engine."""
        if not self.engine.is_awake:
            self.engine.wake_up()

    def offload(self) -> None:
        """Puts the judge engine to sleep."""
        if self.engine.is_awake:
            self.engine.sleep()
