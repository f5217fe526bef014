"""Reward models routed by label, as the original's multi-ORM scripts give them:
``--reward_pretrain '{"a": p1, "b": p2, "c": p1}'`` loads p1 and p2 once each (labels sharing a
path share the model), and a two-label batch scores each row only with its label's model,
counted per label. The models are tiny random scalar RMs saved as checkpoints; the expected
rewards are each model's own scores of the rows of its label."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from lightrft.adapters.reward_models import HfScalarRewardModel
from lightrft.application.reward_scoring import score_completions
from lightrft.domain.types import Completion, PromptRecord, RewardSample
from lightrft.entrypoints.config import load_config
from lightrft.entrypoints.config.reward_recipes import recipe_book
from lightrft.entrypoints.wiring import scalar_reward_models
from lightrft.entrypoints.wiring.registries import BuildContext
from lightrft.entrypoints.wiring.reward_sources import build_rewards
from tests.unit.adapters.hf.hf_tiny import tiny_tokenizer
from tests.unit.adapters.reward_models.rm_tiny import tiny_classifier

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def rm_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("orms")
    return {
        name: HfScalarRewardModel(tiny_classifier(seed), tiny_tokenizer(), CPU).export_hf(
            root / name
        )
        for name, seed in (("p1", 1), ("p2", 2))
    }


def test_reward_pretrain_by_label_loads_each_model_once_and_routes_rows(
    rm_dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    p1, p2 = str(rm_dirs["p1"]), str(rm_dirs["p2"])
    loaded: list[str] = []
    load = scalar_reward_models.load_scalar_rm

    def counted(path: Any, *args: Any, **kwargs: Any) -> Any:
        loaded.append(str(path))
        return load(path, *args, **kwargs)

    monkeypatch.setattr(scalar_reward_models, "load_scalar_rm", counted)
    flag = json.dumps({"a": p1, "b": p2, "c": p1})
    config = load_config(overrides=["--reward_pretrain", flag, "--label_key", "label"])
    context = BuildContext(config, Path("."), CPU, None, lambda: None)  # type: ignore[arg-type,return-value]
    sources = {s.name: s for s in build_rewards(context)}
    assert sorted(loaded) == sorted([p1, p2])  # p1 serves a and c: loaded once
    models = {n: s for n, s in sources.items() if isinstance(s, HfScalarRewardModel)}
    assert set(models) == {"rm_a", "rm_b"}

    asked: dict[str, list[str]] = {name: [] for name in models}
    for name, model in models.items():
        score = model.score

        def spy(batch: Any, name: str = name, score: Any = score) -> Any:
            asked[name].extend(s.prompt.uid for s in batch)
            return score(batch)

        monkeypatch.setattr(model, "score", spy)

    prompts = [
        PromptRecord(uid, f"question {uid}: ", (1,), metadata={"label": label})
        for uid, label in (("0", "a"), ("1", "b"), ("2", "a"), ("3", "b"), ("4", "c"))
    ]
    texts = ["four", "a long answer here", "x", "yes", "maybe so"]
    completions = [Completion(i, (2,), t, "stop") for i, t in enumerate(texts)]
    book = recipe_book(config)
    assert book is not None
    result = score_completions(list(sources.values()), prompts, completions, {}, recipes=book)

    # each row only by its label's model; rm_a serves labels a and c
    assert sorted(asked["rm_a"]) == ["0", "2", "4"] and sorted(asked["rm_b"]) == ["1", "3"]
    samples = [RewardSample(p, c) for p, c in zip(prompts, completions, strict=True)]
    own = {
        name: model.score(samples).scores  # every row by each model, to pick from
        for name, model in models.items()
    }
    want = torch.stack([own["rm_a"], own["rm_b"]])[torch.tensor([0, 1, 0, 1, 0]), torch.arange(5)]
    torch.testing.assert_close(result.total, want)
    m = result.metrics
    assert m["reward/recipe/a/share"] == pytest.approx(2 / 5)
    assert m["reward/recipe/b/share"] == pytest.approx(2 / 5)
    assert m["reward/recipe/c/share"] == pytest.approx(1 / 5)
    assert m["reward/recipe/a/mean"] == pytest.approx(float(want[[0, 2]].mean()))
    assert m["reward/recipe/b/mean"] == pytest.approx(float(want[[1, 3]].mean()))
    assert m["reward/recipe/c/mean"] == pytest.approx(float(want[4]))
