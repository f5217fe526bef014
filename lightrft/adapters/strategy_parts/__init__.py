"""Parts every training strategy builds the same way (single device, FSDP2, DeepSpeed, the
fake): AdamW and its parameter groups, the learning-rate schedule, the strategy mixins and the
``Collective`` of a lone process. Imports only the domain, torch and the standard library."""
