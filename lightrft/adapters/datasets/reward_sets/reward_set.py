"""What a reward data set loader takes and gives, and the registry entry naming it.

Every loader of this package reads one data set's published file layout from local files
(nothing is downloaded) and gives :class:`LoadedRewardSet`: the records (preference pairs,
or step-labelled solutions for process reward models), the bad rows skipped under
``on_bad_row="skip"`` and the pairs left out as ties (two responses the annotators rated
equal teach no preference). Under ``on_bad_row="error"`` every bad row is named, file and
row, in one error (:mod:`~lightrft.adapters.datasets.bad_rows`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from lightrft.adapters.datasets.bad_rows import BadRowError, BadRowPolicy, BadRows
from lightrft.adapters.datasets.preferences import PreferenceSpec
from lightrft.adapters.datasets.prompt_rows import RowRef
from lightrft.adapters.datasets.rendering import PromptRenderer
from lightrft.adapters.datasets.reward_sets.step_rows import StepRowSpec

RecordKind = Literal["pairs", "steps"]


@dataclass(frozen=True)
class RewardSetOptions:
    """How every loader reads: the bad-row policy, the audio rate every clip must have
    (None: any), the columns of the plain ``preferences`` layout, the keys of the
    process-reward layout."""

    on_bad_row: BadRowPolicy = "error"
    audio_sampling_rate: int | None = None
    preference_spec: PreferenceSpec = field(default_factory=PreferenceSpec)
    step_spec: StepRowSpec = field(default_factory=StepRowSpec)


@dataclass(frozen=True)
class LoadedRewardSet:
    """The records of a data set, the bad rows skipped and the tied pairs left out."""

    records: list[Any]
    skipped: int = 0
    ties: int = 0


Loader = Callable[[Path, PromptRenderer, RewardSetOptions], LoadedRewardSet]


@dataclass(frozen=True)
class RewardSet:
    """A registered data set: what its records are (``"pairs"``: ``PreferencePair``,
    ``"steps"``: ``StepLabelledExample``), what each response is (``"text"``, ``"images"``,
    ``"videos"``, ``"audios"``), and its loader."""

    kind: RecordKind
    responses: str
    load: Loader


def collect(
    refs: Iterable[RowRef],
    build: Callable[[RowRef], Any | None],
    policy: BadRowPolicy,
    skipped_lines: int = 0,
) -> LoadedRewardSet:
    """The records ``build`` makes of ``refs`` (None: a tie, left out); bad rows go to one
    :class:`~lightrft.adapters.datasets.bad_rows.BadRows` log under ``policy``."""
    records, ties = [], 0
    bad = BadRows(policy)
    for ref in refs:
        try:
            record = build(ref)
        except BadRowError as error:
            bad.add(error)
            continue
        if record is None:
            ties += 1
        else:
            records.append(record)
    return LoadedRewardSet(records, bad.check() + skipped_lines, ties)
