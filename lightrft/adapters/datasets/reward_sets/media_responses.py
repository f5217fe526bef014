"""Media-response pairs made readable by a scalar reward model.

A loaded media-response pair (:mod:`~lightrft.adapters.datasets.reward_sets.media_pairs`)
holds one marker per item in each response (``<image>``, ``<video>``, ``<audio>``) and its
videos as file paths. A reward model reads the response as its chat template renders a media
part (Qwen2-VL: ``<|vision_start|><|image_pad|><|vision_end|>``; Qwen2-Audio: ``Audio 1:
<|audio_bos|><|AUDIO|><|audio_eos|>`` and a newline) right after the rendered prompt, and the
response's items after the prompt's (``PreferencePair.response_media``). So that the layout
is the template's and nobody else's, :func:`media_part_texts` finds each part's text by
rendering a user message with and without one such part (as a generative judge's prompt is
laid out).

:func:`readable_media_responses` turns every media-response pair into that form: markers
replaced by the part texts, video paths decoded and sampled
(:func:`~lightrft.adapters.datasets.video_frames.load_video`, the RL rows' sampling). Pairs
with text responses pass unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from lightrft.adapters.datasets.bad_rows import BadRowError
from lightrft.adapters.datasets.reward_sets.media_pairs import RESPONSE_MARKERS
from lightrft.adapters.datasets.video_frames import FrameSampling, load_video
from lightrft.adapters.engine_parts.media_markup import media_markup
from lightrft.domain.types import RESPONSE_SIDES, PreferencePair

_PART_TYPES = {"images": "image", "videos": "video", "audios": "audio"}


def media_part_texts(tokenizer: Any) -> dict[str, str]:
    """Media kind -> the text ``tokenizer``'s chat template renders for one such part
    (:func:`~lightrft.adapters.engine_parts.media_markup.media_markup`); kinds the template
    does not render are left out."""
    if not getattr(tokenizer, "chat_template", None):
        return {}
    texts = {}
    for kind, part in _PART_TYPES.items():
        try:
            text = media_markup(tokenizer, part)
        except Exception:  # noqa: BLE001 - a template that cannot render this part
            continue
        if text:
            texts[kind] = text
    return texts


def response_text(pair: PreferencePair, side: str, parts: dict[str, str]) -> str:
    """The ``side`` response of a media-response pair with each marker replaced by its part
    text; ``ValueError`` naming the pair for a medium the template does not render."""
    kinds = {marker: kind for kind, marker in RESPONSE_MARKERS.items()}
    out = []
    for marker in getattr(pair, side).split():
        kind = kinds.get(marker)
        if kind is None:
            raise ValueError(f"pair {pair.uid}: unexpected text {marker!r} in a media response")
        if kind not in parts:
            raise ValueError(
                f"pair {pair.uid}: its {side} response is {kind} but the reward model's chat "
                f"template renders no {_PART_TYPES[kind]} part (a model that reads "
                f"{', '.join(sorted(parts)) or 'no media'})"
            )
        out.append(parts[kind])
    return "".join(out)


def _decoded(pair: PreferencePair, sampling: FrameSampling) -> dict[str, Any]:
    """``pair.multimodal`` with each response's video paths decoded and sampled."""
    multimodal = dict(pair.multimodal)
    for side in RESPONSE_SIDES:
        media = dict(multimodal.get(side, {}))
        if media.get("videos"):
            where = f"pair {pair.uid}"
            media["videos"] = [
                load_video(v, where=where, key=side, sampling=sampling) for v in media["videos"]
            ]
            multimodal[side] = media
    return multimodal


def readable_media_responses(
    pairs: Sequence[PreferencePair], tokenizer: Any, sampling: FrameSampling
) -> list[PreferencePair]:
    """``pairs`` with media responses rendered for ``tokenizer``'s model and their videos
    decoded (see the module docstring); ``ValueError`` naming the first pair that fails."""
    if not any(side in p.multimodal for p in pairs for side in RESPONSE_SIDES):
        return list(pairs)
    parts = media_part_texts(tokenizer)
    out = []
    for pair in pairs:
        if not any(side in pair.multimodal for side in RESPONSE_SIDES):
            out.append(pair)
            continue
        try:
            multimodal = _decoded(pair, sampling)
        except BadRowError as error:
            raise ValueError(str(error)) from None
        chosen, rejected = (response_text(pair, side, parts) for side in RESPONSE_SIDES)
        out.append(replace(pair, chosen=chosen, rejected=rejected, multimodal=multimodal))
    return out
