"""The rollout gateway's adapters: the OpenAI-compatible HTTP front end (``server``), the
agent programs' processes (``agent_process``, ``run_callable``). See docs/agents.md."""
