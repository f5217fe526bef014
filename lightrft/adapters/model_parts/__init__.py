"""Parts of every adapter that runs a torch model (the HF policy, reference and critic, the
reward models): position ids of padded batches, host offload of frozen models, LoRA sizes and
the seeds of sampling and of fresh weights. Imports only the domain, torch and the standard
library."""
