from __future__ import annotations

from pathlib import Path

import pytest

from lightrft.entrypoints.config.loading import ConfigError, dump_config, load_config
from lightrft.entrypoints.config.presets import PRESETS


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_validates_and_translates(name: str) -> None:
    config = load_config(algorithm=name)
    settings = config.to_domain()
    assert settings.algorithm.advantage_estimator == PRESETS[name]["algorithm.advantage_estimator"]
    assert settings.algorithm.policy_loss == PRESETS[name]["algorithm.policy_loss"]


def test_precedence_preset_file_overrides(tmp_path: Path) -> None:
    file = tmp_path / "run.yaml"
    file.write_text(
        "rollout:\n  n_samples_per_prompt: 6\n  temperature: 0.7\noptim:\n  lr: 2.0e-6\n"
    )
    config = load_config(file, ["optim.lr=3e-6", "--top_p", "0.9"], algorithm="dapo")
    assert config.algorithm.policy_loss == "dapo"  # preset
    assert config.rollout.n_samples_per_prompt == 6  # file
    assert config.rollout.temperature == 0.7  # file
    assert config.optim.lr == 3e-6  # override beats file
    assert config.rollout.top_p == 0.9  # flag alias
    domain = config.to_domain()
    assert domain.algorithm.resolved_loss.clip_eps_high == 0.28  # DAPO clip-higher default
    assert domain.rollout.sampling.n == 6


def test_lightrft_flag_aliases() -> None:
    config = load_config(
        overrides=[
            "--advantage_estimator",
            "rloo",
            "--n_samples_per_prompt=5",
            "--kl_estimator",
            "k2",
            "--init_kl_coef",
            "0.02",
            "--rollout_batch_size",
            "3",
            "--train_batch_size",
            "15",
            "--micro_train_batch_size",
            "5",
            "--eps_clip",
            "0.1",
            "--bf16",
        ]
    )
    assert config.algorithm.advantage_estimator == "rloo"
    assert config.rollout.n_samples_per_prompt == 5
    assert config.algorithm.kl_estimator == "k2" and config.algorithm.kl_coef == 0.02
    assert config.rollout.prompts_per_step == 3
    assert config.train.mini_batch_size == 15 and config.train.micro_batch_size == 5
    assert config.algorithm.clip_eps_low == config.algorithm.clip_eps_high == 0.1
    assert config.model.dtype == "bf16"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["algorithm.policy_loss=foo"], "algorithm.policy_loss: Input should be 'ppo'"),
        (["model.colour=red"], "model.colour: unknown key"),
        (["optim.lr=-1"], "optim.lr: Input should be greater than 0 (got -1)"),
        (["--no_such_flag", "1"], "unknown option --no_such_flag"),
        (["rollout.n_samples_per_prompt=1"], "n_samples_per_prompt must be >= 2"),
        (["algorithm.kl_controller=adaptive", "algorithm.kl_coef=0.1"], "needs kl_target"),
        (["reward.sources=[{type: python}]"], "reward.sources.0.function: Field required"),
        (["optim=3"], "optim"),
    ],
)
def test_bad_values_name_the_key(overrides: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=None) as info:
        load_config(overrides=overrides)
    assert message in str(info.value)


def test_missing_file_and_unknown_algorithm(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match="unknown algorithm 'grpoo'; valid choices: cpgd"):
        load_config(algorithm="grpoo")


def test_dump_round_trips(tmp_path: Path) -> None:
    config = load_config(algorithm="gspo", overrides=["train.total_steps=7"])
    file = tmp_path / "resolved.yaml"
    file.write_text(dump_config(config))
    assert load_config(file) == config


def test_overlong_penalty_is_applied_by_one_mechanism_only() -> None:
    # a length reward source and reward.overlong_buffer both implement DAPO's penalty
    with pytest.raises(ConfigError, match="reward.overlong_buffer both apply"):
        load_config(None, ["reward.sources=[{type: math}, {type: length}]"], algorithm="dapo")
    alone = load_config(None, ["reward.sources=[{type: math}, {type: length, buffer: 8}]"])
    assert alone.reward.sources[1].buffer == 8  # type: ignore[attr-defined]
    assert load_config(None, [], algorithm="dapo").to_domain().shaping.overlong_buffer == 32


@pytest.mark.parametrize("loss", ["gspo", "gspo_token", "gmpo"])
def test_sequence_level_losses_refuse_token_mean(loss: str) -> None:
    with pytest.raises(ConfigError, match="would weight sequences by\\s+their length"):
        load_config(None, [f"algorithm.policy_loss={loss}", "algorithm.agg=token-mean"])
    # the error quotes only the fields involved, not the whole config
    with pytest.raises(ConfigError) as info:
        load_config(None, [f"algorithm.policy_loss={loss}", "algorithm.agg=token-mean"])
    assert "got {" not in str(info.value)
    default = load_config(None, [f"algorithm.policy_loss={loss}"]).to_domain()
    assert default.algorithm.resolved_loss.agg == "seq-mean-token-mean"


def test_shuffles_and_normalization_mean_are_reachable() -> None:
    settings = load_config(
        None,
        ["reward.normalize_subtract_mean=false", "train.shuffle=false", "data.train.shuffle=false"],
    ).to_domain()
    assert settings.shaping.normalize_subtract_mean is False
    assert settings.train.shuffle is False
    assert settings.cycle.shuffle_prompts is False
    assert load_config().to_domain().cycle.shuffle_prompts is True


def test_a_partly_overridden_eval_set_stays_held_out() -> None:
    from lightrft.adapters.datasets.arithmetic import arithmetic_problems
    from lightrft.entrypoints.recipes.demo import DEMO_OVERRIDES

    config = load_config(None, DEMO_OVERRIDES, algorithm="grpo")
    train, held = config.data.train, config.data.eval
    assert held is not None
    # overriding some data.eval keys used to reset the rest to the training defaults
    # (seed 0): the demo's "held-out" problems were then the first 100 training problems
    assert (held.seed, held.builtin_split, train.builtin_split) == (10_000, "heldout", "train")
    seen = {r["prompt"] for r in arithmetic_problems(train.num_builtin, train.seed, 1, "train")}
    shown = [r["prompt"] for r in arithmetic_problems(held.num_builtin, held.seed, 1, "heldout")]
    assert len(shown) == 100 and not seen & set(shown)
    assert load_config(None, ["data.eval.seed=5"]).data.eval.num_builtin == 64  # type: ignore[union-attr]
