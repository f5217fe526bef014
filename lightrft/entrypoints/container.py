"""The composition root: a dependency-injector container that wires adapters by config.

Nothing is built at import or at construction: providers run when first asked for, and
each one is a singleton for the life of the container. Another platform can override any
provider (``container.engine.override(providers.Object(my_engine))``) before building the
cycle; :mod:`lightrft.entrypoints.api` does this for keyword arguments.
"""

from __future__ import annotations

from dependency_injector import containers, providers

from lightrft.application.cycle import ColocatedRLCycle, CycleComponents
from lightrft.application.phases import DEFAULT_PLAN, engine_on_policy_plan
from lightrft.entrypoints.wiring import agents, data, models


def _pad_token_id(tokenizer: object) -> int:
    pad = getattr(tokenizer, "pad_token_id", None)
    return int(pad) if pad is not None else 0


class Container(containers.DeclarativeContainer):
    """Adapters for one run, selected by ``config`` (a ``RunConfig``)."""

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
    # with rollout.environment: the multi-turn engine over the configured one
    engine = providers.Singleton(
        agents.with_environment, context, providers.Singleton(models.build_engine, context)
    )
    policy_strategy = providers.Singleton(models.build_strategy, context, policy.provided.module)
    critic_strategy = providers.Singleton(
        lambda context, critic: models.build_strategy(
            context, None if critic is None else critic.module
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
    reward_sources = providers.Singleton(data.build_rewards, context)
    tracker = providers.Singleton(data.build_tracker, config, process.provided[0])
    checkpoints = providers.Singleton(
        data.build_checkpoints, config, process.provided[0], process.provided[1]
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
    )
    settings = providers.Singleton(
        lambda config, tokenizer: config.to_domain(pad_token_id=_pad_token_id(tokenizer)),
        config,
        tokenizer,
    )
    # an engine running the policy's own weights needs the policy awake whenever it is
    plan = providers.Singleton(
        lambda engine: engine_on_policy_plan() if engine.shares_policy_weights else DEFAULT_PLAN,
        engine,
    )
    cycle = providers.Singleton(ColocatedRLCycle, components, settings, plan)
