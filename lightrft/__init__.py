"""LightRFT: reinforcement fine-tuning of language, vision-language and audio-language models.

Importing this package imports no heavy framework and never touches an accelerator; the
layers live in :mod:`lightrft.domain`, :mod:`lightrft.application`,
:mod:`lightrft.adapters` and :mod:`lightrft.entrypoints`.
"""

__version__ = "0.1.0"
