"""A saved tiny InternVL directory as the vision-language loaders, SFT data and scalar reward
models read it: ``model.modality=auto`` resolves to vision-language, the family's processor
and prompt encoder are built (tile sizes from ``config.json``), SFT image rows train, and a
reward model on the InternVL backbone scores as a direct forward of backbone and head."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from PIL import Image

from lightrft.adapters.datasets.sft_rows import load_sft_dataset
from lightrft.adapters.hf.checkpoint_modality import checkpoint_modality
from lightrft.adapters.hf.internvl import InternVLEncoder, load_internvl_image_tiles
from lightrft.adapters.reward_models import HfScalarRewardModel, RewardModelCard
from lightrft.domain.sft import masked_nll_sum, sft_batch
from lightrft.domain.types import Completion, PromptRecord, RewardSample
from lightrft.entrypoints.config import load_config
from lightrft.entrypoints.wiring.models import loader
from lightrft.entrypoints.wiring.registries import BuildContext
from lightrft.entrypoints.wiring.scalar_reward_models import (
    load_scalar_rm,
    reward_media_encoder,
    scalar_rm_parts,
)
from tests.helpers.tiny_internvl import (
    TOKENS_PER_TILE,
    internvl_token_id,
    save_tiny_internvl,
    tiny_internvl_image_processor,
)

CPU = torch.device("cpu")
CONTEXT = internvl_token_id("<IMG_CONTEXT>")
START, END = internvl_token_id("<img>"), internvl_token_id("</img>")
PROMPT = "<|im_start|>user\n<IMG_CONTEXT>\ncolour?<|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return save_tiny_internvl(tmp_path_factory.mktemp("internvl") / "model", byte_level=True)


def _context(model_dir: Path, *overrides: str) -> BuildContext:
    config = load_config(overrides=[f"model.path={model_dir}", *overrides])
    tokenizer = loader(config).tokenizer(config, model_dir)
    return BuildContext(config, model_dir, CPU, tokenizer, lambda: None)  # type: ignore[arg-type]


def test_auto_resolves_an_internvl_checkpoint_to_vision_language(
    model_dir: Path, tmp_path: Path
) -> None:
    assert json.loads((model_dir / "config.json").read_text())["model_type"] == "internvl"
    assert load_config(overrides=[f"model.path={model_dir}"]).model.modality == "vision-language"
    for config in (
        {"model_type": "internvl"},
        {"architectures": ["InternVLForConditionalGeneration"]},
    ):
        (tmp_path / "config.json").write_text(json.dumps(config))
        found = checkpoint_modality(tmp_path)
        assert found is not None and found.modality == "vision-language"


def test_the_loaders_build_the_internvl_encoder_and_freeze_the_image_path(model_dir: Path) -> None:
    context = _context(model_dir)
    chosen = loader(context.config)
    encoder = chosen.prompt_encoder(context)  # type: ignore[misc]
    assert isinstance(encoder, InternVLEncoder)
    assert encoder.processor.tokens_per_tile == TOKENS_PER_TILE  # (56/14)**2 * 0.5**2 = 4
    assert encoder.processor.patches_per_tile == 16
    policy = chosen.policy(context)
    trained = {n for n, p in policy.module.named_parameters() if p.requires_grad}
    assert any(".language_model." in f".{n}" for n in trained)
    assert not any("vision_tower." in n or "multi_modal_projector." in n for n in trained)


def test_a_processor_whose_tile_is_not_the_towers_is_refused(tmp_path: Path) -> None:
    directory = save_tiny_internvl(tmp_path / "m", byte_level=True)
    processor = tiny_internvl_image_processor()
    processor.size = {"height": 28, "width": 28}
    processor.save_pretrained(directory)
    with pytest.raises(ValueError, match=r"cuts 28x28 tiles but the vision tower .* 56x56"):
        load_internvl_image_tiles(directory)


def _sft_rows(tmp_path: Path) -> Path:
    rows = []
    for colour, height in (("red", 84), ("blue", 56)):
        Image.new("RGB", (56, height), colour).save(tmp_path / f"{colour}.png")
        user = [{"type": "image", "image": f"{colour}.png"}, {"type": "text", "text": "colour?"}]
        chat = [{"role": "user", "content": user}, {"role": "assistant", "content": colour}]
        rows.append(json.dumps({"messages": chat}))
    path = tmp_path / "sft.jsonl"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_sft_image_rows_expand_score_as_the_model_and_train(
    model_dir: Path, tmp_path: Path
) -> None:
    context = _context(model_dir)
    encoder = loader(context.config).prompt_encoder(context)  # type: ignore[misc]
    examples = list(load_sft_dataset(_sft_rows(tmp_path), context.tokenizer, media=encoder))
    first = examples[0]
    # 56 wide x 84 high: 1 column x 2 rows is closest (0.5 vs 0.67) -> 2 tiles + thumbnail
    assert first.multimodal["image_tiles"].tolist() == [3]
    at = first.prompt_ids.index(START)
    assert first.prompt_ids[at : at + 14] == (START, *[CONTEXT] * 12, END)
    assert CONTEXT not in first.response_ids  # media are context, never trained
    policy = loader(context.config).policy(context)
    batch = sft_batch(examples, pad_token_id=0)
    model = policy.module
    with torch.no_grad():
        logprobs = policy.forward(batch).logprobs
        ids = torch.tensor([first.prompt_ids + first.response_ids])
        logits = model(input_ids=ids, pixel_values=first.multimodal["pixel_values"]).logits[0]
    logits[:, CONTEXT] = -torch.inf  # never generated (the policy's distribution)
    want = torch.log_softmax(logits[len(first.prompt_ids) - 1 : -1], -1)
    want = want.gather(-1, torch.tensor(first.response_ids)[:, None])[:, 0]
    torch.testing.assert_close(logprobs[0, : len(want)], want, atol=1e-5, rtol=1e-5)
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    loss = masked_nll_sum(policy.forward(batch).logprobs, batch.response_mask)
    loss.backward()  # one step, then the same batch again: its loss must fall
    optimizer.step()
    with torch.no_grad():
        after = masked_nll_sum(policy.forward(batch).logprobs, batch.response_mask)
    assert bool(torch.isfinite(loss)) and float(after) < float(loss.detach())


def _direct_score(rm: HfScalarRewardModel, tok, image: Image.Image, response: str) -> torch.Tensor:
    """Backbone + head by hand: the prompt's placeholder expanded by hand (a 56x56 image is
    one tile, 4 positions), the processor's pixels, the head at the last token."""
    ids = tok(PROMPT, add_special_tokens=False).input_ids + tok(response).input_ids
    at = ids.index(CONTEXT)
    ids = ids[:at] + [START, *[CONTEXT] * TOKENS_PER_TILE, END] + ids[at + 1 :]
    pixels = tiny_internvl_image_processor()(
        images=[image], crop_to_patches=True, return_tensors="pt"
    )
    classifier = rm.net.classifier
    with torch.no_grad():
        hidden = classifier.model.model(
            input_ids=torch.tensor([ids]), pixel_values=pixels["pixel_values"]
        ).last_hidden_state[0, -1]
        return (classifier.score.weight[0] @ hidden).float()


def test_a_scalar_reward_model_on_the_backbone_scores_as_backbone_plus_head(
    model_dir: Path, tmp_path: Path
) -> None:
    config = load_config(overrides=[f"model.path={model_dir}"])
    tok = loader(config).tokenizer(config, model_dir)
    encoder = reward_media_encoder(model_dir, "vision-language", config, tok)
    assert isinstance(encoder, InternVLEncoder)
    parts = scalar_rm_parts(model_dir, "vision-language", encoder, tok, CPU, init_seed=3)
    card = RewardModelCard(modality="vision-language")
    rm = HfScalarRewardModel(parts.classifier, tok, CPU, card=card, media=parts.media)
    red, blue = Image.new("RGB", (56, 56), "red"), Image.new("RGB", (56, 56), "blue")
    with torch.no_grad():
        rm.net.head.weight.normal_()  # a trained-looking head
        scores = rm.pair_scores(
            [PROMPT, PROMPT, "<|im_start|>user\ncolour?<|im_end|>\n"],
            ["red", "red", "red"],
            [{"images": [red]}, {"images": [blue]}, {}],
        )
    for row, image in enumerate((red, blue)):
        torch.testing.assert_close(
            scores[row], _direct_score(rm, tok, image, "red"), atol=1e-5, rtol=1e-5
        )
    assert not torch.isclose(scores[0], scores[1], atol=1e-5)  # only the image differs
    # an RL prompt the policy's encoder expanded scores like its decoded image
    raw = PromptRecord("p", PROMPT, tuple(tok(PROMPT).input_ids), multimodal={"images": [blue]})
    encoded = encoder.encode(raw)
    response = Completion(0, (1,), "red", "stop")
    rm.onload()
    with torch.no_grad():
        from_raw = rm.score([RewardSample(raw, response)]).scores
        from_encoded = rm.score([RewardSample(encoded, response)]).scores
    torch.testing.assert_close(from_encoded, from_raw)
    torch.testing.assert_close(from_raw[0], scores[1], atol=1e-5, rtol=1e-5)
    rm.export_hf(tmp_path / "rm")  # the export (weights, head, processor) loads back
    loaded = load_scalar_rm(tmp_path / "rm", CPU, config)
    assert loaded.card.modality == "vision-language"
    with torch.no_grad():
        again = loaded.pair_scores([PROMPT], ["red"], [{"images": [blue]}])
    torch.testing.assert_close(again[0], scores[1], atol=1e-5, rtol=1e-5)


def test_the_critic_reads_the_images_with_the_image_path_frozen(model_dir: Path) -> None:
    from tests.unit.adapters.hf.test_internvl import mixed_batch

    context = _context(model_dir, "algorithm.advantage_estimator=gae")
    critic = loader(context.config).critic(context)
    trained = {n for n, p in critic.module.named_parameters() if p.requires_grad}
    assert {"value_head.weight", "value_head.bias"} <= trained
    assert any(n.startswith("backbone.language_model.") for n in trained)
    assert not any("vision_tower." in n or "multi_modal_projector." in n for n in trained)
    torch.nn.init.normal_(critic.module.value_head.weight)
    prompts, batch = mixed_batch()
    other = [
        replace(p, multimodal={**p.multimodal, "pixel_values": -p.multimodal["pixel_values"]})
        if p.multimodal
        else p
        for p in prompts
    ]
    with torch.no_grad():
        values = critic.values(batch)
        flipped = critic.values(replace(batch, multimodal=tuple(p.multimodal for p in other)))
    scored = batch.response_mask.bool()
    assert bool(torch.isfinite(values).all()) and bool((values[scored] != 0).all())
    assert not torch.allclose(values[0], flipped[0])  # row 0's images reach its values
    torch.testing.assert_close(values[1], flipped[1])  # the text row has none
