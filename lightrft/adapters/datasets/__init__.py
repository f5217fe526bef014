"""Prompt sources (``PromptSource`` port): local files through HF ``datasets``, in-memory
rows, blends of sources, GSM8K, Geo3K (vision), and tiny built-in tasks: arithmetic, shapes (vision),
tones, beeps and sound_choice (audio)."""

from lightrft.adapters.datasets.arithmetic import arithmetic_problems, arithmetic_prompts
from lightrft.adapters.datasets.blended import BlendedPromptSource
from lightrft.adapters.datasets.geo3k import Geo3kPreprocessor, geo3k_prompts, geo3k_spec
from lightrft.adapters.datasets.gsm8k import (
    Gsm8kPreprocessor,
    gsm8k_prompts,
    gsm8k_reference,
    gsm8k_spec,
)
from lightrft.adapters.datasets.hf_prompt_dataset import HfPromptDataset, load_table
from lightrft.adapters.datasets.in_memory import InMemoryPromptSource
from lightrft.adapters.datasets.prompt_rows import BadRowError, DatasetStats, RowSpec
from lightrft.adapters.datasets.rendering import PromptFormat, PromptRenderer
from lightrft.adapters.datasets.synthetic_audio import clip_rows_source, tone_problems, tone_prompts
from lightrft.adapters.datasets.synthetic_beeps import beep_problems
from lightrft.adapters.datasets.synthetic_sound_choice import sound_choice_problems
from lightrft.adapters.datasets.synthetic_visual import visual_problems, visual_prompts

__all__ = [
    "BadRowError",
    "BlendedPromptSource",
    "DatasetStats",
    "Geo3kPreprocessor",
    "Gsm8kPreprocessor",
    "HfPromptDataset",
    "InMemoryPromptSource",
    "PromptFormat",
    "PromptRenderer",
    "RowSpec",
    "arithmetic_problems",
    "beep_problems",
    "arithmetic_prompts",
    "clip_rows_source",
    "geo3k_prompts",
    "geo3k_spec",
    "gsm8k_prompts",
    "gsm8k_reference",
    "gsm8k_spec",
    "sound_choice_problems",
    "load_table",
    "tone_problems",
    "tone_prompts",
    "visual_problems",
    "visual_prompts",
]
