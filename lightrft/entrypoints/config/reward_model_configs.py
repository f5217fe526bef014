"""Config models of the reward-model sources (``reward.sources``): scalar reward models."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, model_validator

from lightrft.entrypoints.config.components import (
    REWARD_SOURCE_CONFIGS,
    RewardSourceSection,
    register_config,
)

RmEngine = Literal["hf", "vllm", "sglang"]
ENGINE_OPTIONS = ("engine_memory_fraction", "engine_kv_cache_gib", "engine_max_model_len")


class EngineRmSection(RewardSourceSection):
    """Base of the model-backed reward sources that can run on an inference engine
    (docs/reward-models.md, "Reward models on the engine")."""

    engines: ClassVar[tuple[str, ...]] = ("hf", "vllm", "sglang")
    """The engines this source type runs on (a subset of ``RmEngine``)."""
    missing_engines: ClassVar[str] = ""
    """Why the other engines are not available (part of the config error)."""
    engine: RmEngine = Field(
        "hf",
        description="What runs the model: hf (transformers in the training process), vllm "
        "(an in-process vLLM engine on the model's directory), sglang (GPU-only, unverified; "
        "generative_rm only).",
    )
    engine_memory_fraction: float = Field(
        0.2,
        gt=0,
        le=1,
        description="vllm/sglang: share of device memory for this model's engine (vLLM's "
        "gpu_memory_utilization, SGLang's mem_fraction_static); vLLM on CPU: a share of host "
        "RAM, the KV cache sized by engine_kv_cache_gib.",
    )
    engine_kv_cache_gib: float | None = Field(
        None, gt=0, description="vllm: explicit KV cache size in GiB (CPU default: 1 GiB)."
    )
    engine_max_model_len: int | None = Field(
        None,
        gt=0,
        description="vllm/sglang: longest sequence the engine takes (judge prompt + verdict, "
        "or prompt + response); null: the model config's.",
    )

    @model_validator(mode="after")
    def _engine_is_available(self) -> EngineRmSection:
        if self.engine not in self.engines:
            raise ValueError(
                f"reward source {self.label!r}: engine {self.engine!r} is not available for "
                f"{self.type} reward sources{self.missing_engines}; choices: "
                f"{', '.join(self.engines)}"
            )
        stray = sorted(set(ENGINE_OPTIONS) & self.model_fields_set) if self.engine == "hf" else []
        if stray:
            raise ValueError(
                f"reward source {self.label!r}: {', '.join(stray)} set but engine is 'hf'; "
                "these options apply to engine vllm or sglang"
            )
        return self


@register_config(REWARD_SOURCE_CONFIGS, "scalar_rm")
class ScalarRmConfig(EngineRmSection):
    """A scalar reward model directory (``lightrft rm train`` output, or any HF
    sequence-classification model with one label), awake only in the reward phases."""

    engines: ClassVar[tuple[str, ...]] = ("hf", "vllm")
    missing_engines: ClassVar[str] = (
        " (LightRFT's SGLang adapter, lightrft/adapters/sglang, generates only: it has no "
        "reward-model scorer)"
    )
    type: Literal["scalar_rm"] = "scalar_rm"
    path: str = Field(description="Reward model directory.")
    normalize: bool = Field(False, description="Use the normalization saved with the model.")
    micro_batch_size: int = Field(16, gt=0, description="Rows per scoring forward.")
    dtype: Literal["fp32", "bf16", "fp16"] = Field("fp32", description="Weights dtype.")
    trust_remote_code: bool = Field(False, description="Run code shipped with the model.")


@register_config(REWARD_SOURCE_CONFIGS, "remote")
class RemoteRewardConfig(RewardSourceSection):
    """A reward service over HTTP: ``lightrft serve-reward`` or compatible, or a server that
    speaks OpenRLHF's or the original LightRFT's protocol (``protocol``)."""

    type: Literal["remote"] = "remote"
    url: str = Field(
        description="lightrft: base URL, e.g. http://127.0.0.1:8000 (POSTs go to /score); "
        "openrlhf / original: the endpoint itself, e.g. http://127.0.0.1:5000/get_reward."
    )
    protocol: Literal["lightrft", "openrlhf", "original"] = Field(
        "lightrft",
        description="What the server speaks: lightrft (serve-reward's /score), openrlhf "
        '(POST {"query", "prompts", "labels"} -> {"rewards"}), original (the original '
        'LightRFT\'s {"queries", "prompts", "references"} -> {"rewards"}); '
        "docs/reward-models.md.",
    )
    token_env: str | None = Field(
        None, description="Environment variable holding the bearer token (not the token)."
    )
    timeout_s: float = Field(30.0, gt=0, description="Per-request timeout.")
    max_attempts: int = Field(4, ge=1, description="Attempts per request before failing.")
    backoff_base_s: float = Field(0.5, ge=0, description="First backoff bound (doubles).")
    backoff_max_s: float = Field(8.0, ge=0, description="Largest backoff bound.")
    request_batch: int = Field(256, ge=1, description="Samples per request.")
    on_failure: Literal["raise", "score"] = Field(
        "raise", description="After the last attempt: stop the run, or score failure_score."
    )
    failure_score: float = Field(0.0, description="Score of samples whose request failed.")


@register_config(REWARD_SOURCE_CONFIGS, "unit_tests")
class UnitTestsRewardConfig(RewardSourceSection):
    """Runs the response's code against the prompt's reference tests in a sandbox."""

    type: Literal["unit_tests"] = "unit_tests"
    sandbox: Literal["auto", "bwrap", "unshare", "unsafe_local"] = Field(
        "auto",
        description="OS boundary around each program: auto (bwrap, else unshare; refuses to "
        "start when neither works), bwrap, unshare, or unsafe_local (NO boundary: the code "
        "can act as this user; logs a warning). See docs/security.md.",
    )
    timeout_s: float = Field(5.0, gt=0, description="Wall-clock limit per program.")
    memory_mb: int = Field(512, ge=16, description="Address-space limit per program.")
    pass_score: float = Field(1.0, description="Score when every test passes.")
    fail_score: float = Field(0.0, description="Score otherwise.")
    max_parallel: int | None = Field(
        None,
        ge=1,
        description="Programs run at once (of one batch and of concurrent service requests), "
        "each still sandboxed and time-limited; null: min(4, CPUs).",
    )


@register_config(REWARD_SOURCE_CONFIGS, "generative_rm")
class GenerativeRmConfig(EngineRmSection):
    """A judge model that writes a verdict (``Score: X/10`` or ``[[A]]``), parsed strictly."""

    type: Literal["generative_rm"] = "generative_rm"
    path: str | None = Field(None, description="Judge model directory; null: the run's model.")
    template: str | None = Field(
        None, description="Judge prompt with {prompt}, {response}, {reference}; null: built-in."
    )
    verdict: Literal["score", "label"] = Field("score", description="Verdict kind.")
    max_score: float = Field(10.0, gt=0, description="Scale of 'Score: X' without '/Y'.")
    labels: dict[str, float] = Field(
        default_factory=lambda: {"A": 1.0, "B": 0.0}, description="[[LABEL]] -> score."
    )
    unparsable_score: float = Field(0.0, description="Score of a verdict that cannot be read.")
    max_new_tokens: int = Field(256, gt=0, description="Verdict length limit.")
    dtype: Literal["fp32", "bf16", "fp16"] = Field("fp32", description="Judge weights dtype.")
    modality: Literal["text", "vision-language", "audio-language", "omni"] = Field(
        "text",
        description="What the judge reads: text, or the row's images / audio too (hf engine; "
        "the judge directory's processor re-encodes them).",
    )
    ignore_media: bool = Field(
        False, description="A text judge judges image / audio rows by their text alone."
    )

    @model_validator(mode="after")
    def _media_judge_on_hf(self) -> GenerativeRmConfig:
        if self.modality != "text" and self.engine != "hf":
            raise ValueError(
                f"reward source {self.label!r}: a {self.modality} judge runs on engine hf only "
                f"(engine {self.engine} is not wired for judge media)"
            )
        return self
