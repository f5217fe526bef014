"""Agent adapters: built-in tools (calculator, sandboxed Python), the tool-calling
environment, and the client of an environment served over HTTP. See docs/agents.md."""
