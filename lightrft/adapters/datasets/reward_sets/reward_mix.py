"""Reward data from a ``name:path,name:path`` list (the original LightRFT's data lists),
read one after another or mixed by sampling probabilities.

Each entry's name selects its loader from :data:`~lightrft.adapters.datasets.reward_sets.
registry.REWARD_DATASETS` (an unnamed path is read as :data:`DEFAULT_REWARD_DATASET`); the
list is parsed by :func:`~lightrft.adapters.datasets.data_specs.parse_data_specs` (so a name
appears once: give a set's shards as its folder). Records of a named entry get uids
``<name>:<uid>``. With ``probabilities`` (one per entry), the records are drawn as RL
prompts are blended (:class:`~lightrft.adapters.datasets.blended.BlendedPromptSource`:
seeded, each set reshuffled per pass, as many records as all the sets hold); without, they
follow one another in list order. Every entry must give the same kind of records (pairs or
step-labelled solutions).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from typing import Any

from lightrft.adapters.datasets.blended import BlendedPromptSource
from lightrft.adapters.datasets.data_specs import parse_data_specs
from lightrft.adapters.datasets.preferences import PreferenceSpec
from lightrft.adapters.datasets.rendering import PromptRenderer
from lightrft.adapters.datasets.reward_sets.registry import (
    DEFAULT_REWARD_DATASET,
    REWARD_DATASETS,
)
from lightrft.adapters.datasets.reward_sets.reward_set import LoadedRewardSet, RewardSetOptions
from lightrft.domain.types import PreferencePair


def load_reward_data(
    text: str,
    renderer: PromptRenderer,
    options: RewardSetOptions | None = None,
    *,
    probabilities: Sequence[float] | None = None,
    seed: int = 0,
    default: str = DEFAULT_REWARD_DATASET,
) -> LoadedRewardSet:
    """The records of every data set of ``text`` (see the module docstring)."""
    options = options or RewardSetOptions()
    specs = parse_data_specs(text)
    if probabilities is not None and len(probabilities) != len(specs):
        raise ValueError(
            f"need one probability per dataset, got {len(probabilities)} for {len(specs)}"
        )
    sets = [REWARD_DATASETS.get(spec.name or default) for spec in specs]
    kinds = {s.kind for s in sets}
    if len(kinds) > 1:
        named = ", ".join(
            f"{spec.name or default} ({s.kind})" for spec, s in zip(specs, sets, strict=True)
        )
        raise ValueError(f"cannot mix preference pairs with step-labelled rows: {named}")
    parts: list[list[Any]] = []
    skipped = ties = 0
    for spec, reward_set in zip(specs, sets, strict=True):
        loaded = reward_set.load(spec.path, renderer, options)
        if not loaded.records:
            problem = f"no usable records ({loaded.skipped} bad rows, {loaded.ties} ties)"
            raise ValueError(f"{spec.path}: {problem}")
        records = loaded.records
        if spec.name is not None:
            records = [replace(r, uid=f"{spec.name}:{r.uid}") for r in records]
        parts.append(records)
        skipped, ties = skipped + loaded.skipped, ties + loaded.ties
    if probabilities is None or len(parts) == 1:
        return LoadedRewardSet([r for part in parts for r in part], skipped, ties)
    blend = BlendedPromptSource(parts, probabilities, seed=seed)
    drawn = [parts[s][i] for s, i in map(blend.position, range(len(blend)))]
    return LoadedRewardSet(drawn, skipped, ties)


def load_reward_pairs(
    text: str,
    renderer: PromptRenderer,
    spec: PreferenceSpec | None = None,
    *,
    probabilities: Sequence[float] | None = None,
    seed: int = 0,
    responses: Collection[str] | None = None,
) -> tuple[list[PreferencePair], int]:
    """:func:`load_reward_data` shaped as ``load_preferences``: (pairs, bad rows skipped),
    ``spec`` the columns and bad-row policy of plain preference rows. ``responses``: the
    response kinds the caller trains on (e.g. ``{"text"}``; None: any); a set of another
    kind, or of step-labelled rows, is refused by name."""
    spec = spec or PreferenceSpec()
    for entry in parse_data_specs(text):
        name = entry.name or DEFAULT_REWARD_DATASET
        reward_set = REWARD_DATASETS.get(name)
        if reward_set.kind != "pairs":
            raise ValueError(f"{name} gives step-labelled rows, not preference pairs")
        if responses is not None and reward_set.responses not in responses:
            kinds = ", ".join(sorted(responses))
            raise ValueError(
                f"{name} gives {reward_set.responses} responses; this trainer reads {kinds}"
            )
    options = RewardSetOptions(
        on_bad_row=spec.on_bad_row,
        audio_sampling_rate=spec.audio_sampling_rate,
        preference_spec=spec,
    )
    loaded = load_reward_data(text, renderer, options, probabilities=probabilities, seed=seed)
    return loaded.records, loaded.skipped
