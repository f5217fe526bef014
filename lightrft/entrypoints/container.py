"""The composition root: a dependency-injector container that wires adapters by config.

Nothing is built at import or at construction: providers run when first asked for, and
each one is a singleton for the life of the container. Another platform can override any
provider (``container.engine.override(providers.Object(my_engine))``) before building the
cycle; :mod:`lightrft.entrypoints.api` does this for keyword arguments.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from typing import Any

from dependency_injector import containers, providers

from lightrft.adapters.accelerators.visibility import device_env, runtime_initialized
from lightrft.adapters.engine_process import ProcessRolloutEngine
from lightrft.application.cycle import CycleComponents, RLCycle
from lightrft.application.phases import DEFAULT_PLAN, engine_on_policy_plan
from lightrft.application.rollout_feed import RolloutFeed
from lightrft.application.split_placement import split_feed
from lightrft.domain.ports import RolloutEngine
from lightrft.entrypoints.wiring import agents, models, reward_sources, run_outputs
from lightrft.entrypoints.wiring.registrations import register_builtins


class Container(containers.DeclarativeContainer):
    """Adapters for one run, selected by ``config`` (a ``RunConfig``). Its builders look up
    the registries: :func:`~lightrft.entrypoints.wiring.registrations.register_builtins`
    first (as :func:`lightrft.entrypoints.api.build_container` does)."""

    config = providers.Dependency()

    accelerator = providers.Singleton(models.build_accelerator, config)
    device = providers.Singleton(models.device_of, accelerator)
    sequence_parallel = providers.Singleton(models.build_sequence_parallel, config, accelerator)
    collective = providers.Singleton(
        models.build_collective, config, accelerator, sequence_parallel
    )
    process = providers.Singleton(models.process_rank, config, accelerator)  # (rank, world)
    model_path = providers.Singleton(models.model_path, config)
    tokenizer = providers.Singleton(models.build_tokenizer, config, model_path)

    policy = providers.Singleton(
        models.build_policy, config, model_path, device, tokenizer, sequence_parallel
    )
    # what every component builder sees; its ``policy`` builds the policy on first call
    context = providers.Singleton(
        models.build_context, config, model_path, device, tokenizer, policy.provider
    )
    reference = providers.Singleton(models.build_reference, context)
    critic = providers.Singleton(models.build_critic, context)
    teachers = providers.Singleton(models.build_teachers, context)
    # with rollout.environment: the multi-turn engine over the configured one
    engine = providers.Singleton(
        agents.with_environment, context, providers.Singleton(models.build_engine, context)
    )
    policy_strategy = providers.Singleton(models.build_strategy, context, policy.provided.module)
    critic_strategy = providers.Singleton(
        lambda context, critic: models.build_strategy(
            context, None if critic is None else critic.module, role="critic"
        ),
        context,
        critic,
    )

    # rows checked against, and media encoded by, the modality's prompt encoder
    prompts = providers.Singleton(
        lambda context: models.build_prompt_source(
            context, context.config.data.train, "data.train"
        ),
        context,
    )
    eval_prompts = providers.Singleton(
        lambda context: models.build_prompt_source(context, context.config.data.eval, "data.eval"),
        context,
    )
    reward_sources = providers.Singleton(reward_sources.build_rewards, context)
    tracker = providers.Singleton(run_outputs.build_tracker, config, process.provided[0])
    checkpoints = providers.Singleton(
        run_outputs.build_checkpoints, config, process.provided[0], process.provided[1]
    )

    components = providers.Singleton(
        CycleComponents,
        prompts=prompts,
        engine=engine,
        policy=policy,
        policy_strategy=policy_strategy,
        reward_sources=reward_sources,
        collective=collective,
        tracker=tracker,
        checkpoints=checkpoints,
        reference=reference,
        critic=critic,
        critic_strategy=critic_strategy,
        accelerator=accelerator,
        eval_prompts=eval_prompts,
        teachers=teachers,
    )
    settings = providers.Singleton(
        lambda config, tokenizer: config.to_domain(pad_token_id=models.pad_token_id(tokenizer)),
        config,
        tokenizer,
    )
    # an engine running the policy's own weights needs the policy awake whenever it is
    plan = providers.Singleton(
        lambda engine: engine_on_policy_plan() if engine.shares_policy_weights else DEFAULT_PLAN,
        engine,
    )
    # rollout.placement=split: the engine in its own process, fed by a producer thread
    feed = providers.Singleton(
        lambda config, accelerator: build_feed(config, accelerator), config, accelerator.provider
    )
    cycle = providers.Singleton(RLCycle, components, settings, plan, feed)


def build_feed(
    config: Any, accelerator: Callable[[], Any] | None = None
) -> Callable[[RLCycle], RolloutFeed] | None:
    """The cycle's rollout feed: ``None`` (colocated, built by the cycle) or, for
    ``rollout.placement=split``, a producer driving a :class:`ProcessRolloutEngine` that
    builds the configured engine in a child process with its own weight copy, on the
    devices of ``rollout.engine_devices`` when set (``accelerator`` builds this process's
    accelerator, whose device type names the visibility variable; called only then)."""
    r = config.rollout
    if r.placement != "split":
        return None
    engine_config = r.engine
    if "share_policy_weights" in type(engine_config).model_fields:
        engine_config = engine_config.model_copy(update={"share_policy_weights": "off"})
    child = config.model_copy(update={"rollout": r.model_copy(update={"engine": engine_config})})
    device_type, env = None, None
    if r.engine_devices is not None:
        if accelerator is None:
            raise ValueError("rollout.engine_devices is set but build_feed got no accelerator")
        device_type = accelerator().device_type
        env = device_env(device_type, r.engine_devices, os.environ, what="rollout.engine_devices")
    engine = ProcessRolloutEngine(
        partial(engine_in_child, child, device_type),
        threads=r.engine_threads,
        call_timeout_s=r.queue_timeout_s,
        weight_timeout_s=r.weight_sync_timeout_s,
        env=env,
    )
    return split_feed(engine)


def engine_in_child(config: Any, device_type: str | None = None) -> RolloutEngine:
    """Builds ``config``'s rollout engine (runs in the split engine's process). With
    ``device_type`` (``rollout.engine_devices`` set) it first checks that that device runtime
    did not start before the process's visibility variable was set."""
    if device_type is not None and runtime_initialized(device_type):
        raise RuntimeError(
            f"the split engine's process started its {device_type} runtime before "
            "rollout.engine_devices could limit the devices it sees"
        )
    register_builtins()
    return Container(config=config).engine()
