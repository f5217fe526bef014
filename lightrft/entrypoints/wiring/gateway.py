"""The rollout gateway over the configured engine (``rollout.agent.gateway``)."""

from __future__ import annotations

from pathlib import Path

from lightrft.adapters.gateway.agent_process import SubprocessAgentLauncher
from lightrft.adapters.gateway.server import start_gateway
from lightrft.adapters.hf.chat_render import HfChatRenderer
from lightrft.application.gateway_rollout import GatewayParams, GatewayRolloutEngine
from lightrft.application.gateway_session import GatewaySession
from lightrft.domain.ports import RolloutEngine
from lightrft.entrypoints.config.gateway_configs import GatewayConfig
from lightrft.entrypoints.field_copy import copy_fields
from lightrft.entrypoints.wiring.registries import BuildContext


def gateway_engine(
    context: BuildContext, engine: RolloutEngine, section: GatewayConfig
) -> GatewayRolloutEngine:
    """Agent-program episodes over ``engine``; the programs' output goes to
    ``<run_dir>/gateway_agents/``."""
    session = GatewaySession(
        HfChatRenderer(context.tokenizer),
        model_name=section.model_name,
        call_timeout_s=section.call_timeout_s,
        max_calls=section.max_calls,
        max_choices=section.max_choices,
    )
    launcher = SubprocessAgentLauncher(
        Path(context.config.logging.run_dir) / "gateway_agents",
        command=section.command,
        function=section.function,
        env=section.env,
    )
    params = copy_fields(
        GatewayParams,
        section,
        "episode_timeout_s call_timeout_s max_calls reward missing_reward temperature "
        "tool_format straggler_wait_s pass_reference",
    )
    return GatewayRolloutEngine(engine, session, launcher, start_gateway, params)
