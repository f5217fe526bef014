"""Parts the rollout engines share (HF, vLLM, SGLang, the fake): the engine base state,
request translation, weight-sync buckets and the source media a prompt payload carries for
engines that take media themselves. Imports only the domain, the other shared parts, torch and
the standard library."""
