"""Agent programs the built-in demos start through the rollout gateway: stand-alone scripts
that speak the OpenAI chat-completions protocol over HTTP and import nothing of LightRFT."""
