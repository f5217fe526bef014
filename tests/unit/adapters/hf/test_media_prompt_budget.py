"""max_prompt_length counts a prompt's media positions: a row whose text fits the budget but
whose expanded image does not is an error naming the row (media are never cut)."""

from __future__ import annotations

import pytest
from PIL import Image

from lightrft.adapters.datasets import InMemoryPromptSource, PromptFormat, RowSpec
from lightrft.adapters.hf.multimodal_inputs import EncodedPromptSource
from lightrft.adapters.hf.vision_language import VisionLanguageEncoder
from tests.helpers.tiny_multimodal import tiny_image_processor, tiny_mm_tokenizer, token_id

ROWS = [{"prompt": "colour?", "reference": "red", "images": [Image.new("RGB", (112, 112), "red")]}]


def source(budget: int) -> EncodedPromptSource:
    tok = tiny_mm_tokenizer()
    fmt = PromptFormat(max_prompt_tokens=budget, on_overlong="error")
    rows = InMemoryPromptSource(ROWS, tok, spec=RowSpec(images_key="images"), prompt_format=fmt)
    encoder = VisionLanguageEncoder(tok, tiny_image_processor())
    return EncodedPromptSource(rows, encoder, max_tokens=budget)


def test_the_expanded_image_counts_against_max_prompt_length() -> None:
    # 112 x 112 -> (1, 8, 8) patches -> 16 merged positions; the text with one placeholder
    # is 29 tokens (the chat template's markers, the question, the generation prompt)
    fits = source(44)[0]
    assert fits.prompt_token_ids.count(token_id("<|image_pad|>")) == 16
    assert len(fits.prompt_token_ids) == 29 + 15 == 44
    with pytest.raises(ValueError) as error:
        source(40)[0]  # the text (29) fits 40, with the image (44) it does not
    assert str(error.value) == (
        "memory row 0: the prompt is 44 tokens with its media expanded (16 media positions), "
        "more than max_prompt_length (40); media are never truncated (the placeholders would "
        "no longer match them): raise max_prompt_length, lower model.max_pixels, or shorten "
        "the clips"
    )
