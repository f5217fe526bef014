"""Bench-only prototypes of speed/memory changes to LightRFT, applied by monkeypatching.

Used by ``bench_vs_trl.py --patch NAME[,NAME...]`` (our side only) to measure what each
proposed library change would gain; nothing here is imported by ``lightrft``. Each patch
keeps the algorithm's results (same distribution of samples, same loss and gradients up
to float rounding); ``check_prefix_train`` verifies the prefix-shared log-probs against
the padded path.

Patches (shape letters: N decode rows, U unique prompts, V vocabulary, B samples, R
response columns, G group size):

- ``draw``: one vectorized inverse-CDF draw for all rows instead of one
  ``torch.multinomial`` call per row. Each row still draws its uniform from its own
  generator, so a sample does not depend on the batch (the engine's guarantee).
- ``prefill``: the prompt prefill runs once per distinct prompt (U rows instead of N = U x
  n); the KV cache and the first logits are then expanded to the n samples.
- ``compile_decode``: decode steps run ``torch.compile(model, dynamic=True)`` (about 100 s
  of compilation on 2 cores, paid in the warm-up step); the prefill stays eager.
- ``share_weights``: the engine's model uses the policy's parameter tensors (same device,
  same dtype, no LoRA): no second copy of the weights and no weight sync copy.
- ``group_order``: the optimizer shuffles whole groups instead of rows, so a micro-batch
  of G samples holds one prompt's group (needed by ``prefix_train`` at micro-batch G).
- ``prefix_train``: the policy forward runs the shared prompt of the rows of a micro-batch
  once: one packed row per prompt, ``[prompt, response_1, ..., response_k]`` with a 4-D
  mask (each response sees the prompt and its own past) and per-response position ids.
- ``no_entropy``: the training forward skips the entropy when no loss term uses it
  (entropy_coef 0, no high-entropy mask); the ``train/entropy`` metric is then absent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

PATCHES: dict[str, Callable[[Any], None]] = {}


def patch(name: str) -> Callable[[Callable[[Any], None]], Callable[[Any], None]]:
    def register(fn: Callable[[Any], None]) -> Callable[[Any], None]:
        PATCHES[name] = fn
        return fn

    return register


def apply(names: Sequence[str], container: Any) -> None:
    """Applies the named patches to the objects built by ``container`` (before any step)."""
    for name in names:
        if name not in PATCHES:
            raise SystemExit(f"unknown patch {name!r}; known: {', '.join(PATCHES)}")
        PATCHES[name](container)


# --------------------------------------------------------------------------- rollout
def batched_draw(
    logprobs: Tensor,
    greedy: bool,
    generator: torch.Generator | Sequence[torch.Generator] | None,
) -> Tensor:
    """Like ``sampling.draw`` but one vectorized inverse-CDF search. (N, V) -> (N,)."""
    if greedy:
        return logprobs.argmax(dim=-1)
    probs = logprobs.exp()
    if generator is None or isinstance(generator, torch.Generator):
        u = torch.rand(probs.shape[0], 1, generator=generator, device=probs.device)
    else:
        u = torch.cat([torch.rand(1, generator=g, device=probs.device) for g in generator])[:, None]
    cdf = probs.cumsum(dim=-1)  # [N, V]
    # first index whose cdf exceeds u * total: never a zero-probability token (flat cdf)
    token = torch.searchsorted(cdf, u * cdf[:, -1:], right=True).squeeze(-1)
    return token.clamp_(max=probs.shape[-1] - 1)


@patch("draw")
def _patch_draw(container: Any) -> None:
    import lightrft.adapters.hf.rollout as rollout

    rollout.draw = batched_draw


@patch("prefill")
def _patch_prefill(container: Any) -> None:
    engine = container.engine()
    original_step = engine._step
    state: dict[str, Any] = {}

    def decode(rows: Sequence[Sequence[int]], sampling: Any, generator: Any) -> Any:
        state["rows"] = [tuple(r) for r in rows]
        try:
            return type(engine)._decode(engine, rows, sampling, generator)
        finally:
            state.clear()

    def step(input_ids: Tensor, mask: Tensor, positions: Tensor, cache: Any) -> Tensor:
        rows = state.pop("rows", None)  # only the first call of a decode is the prefill
        if rows is None:
            return original_step(input_ids, mask, positions, cache)
        first: dict[tuple[int, ...], int] = {}
        owner = [first.setdefault(r, len(first)) for r in rows]
        if len(first) == len(rows):
            return original_step(input_ids, mask, positions, cache)
        unique = torch.tensor([owner.index(u) for u in range(len(first))])
        logits = original_step(input_ids[unique], mask[unique], positions[unique], cache)
        expand = torch.tensor(owner, device=logits.device)
        cache.reorder_cache(expand)
        return logits.index_select(0, expand)

    engine._decode = decode
    engine._step = step


@patch("compile_decode")
def _patch_compile_decode(container: Any) -> None:
    """Decode steps (one new token per row) run a ``torch.compile(dynamic=True)`` model."""
    engine = container.engine()
    compiled = torch.compile(engine.module, dynamic=True)
    original_step = engine._step

    def step(input_ids: Tensor, mask: Tensor, positions: Tensor, cache: Any) -> Tensor:
        if input_ids.shape[1] != 1:  # prefill: eager
            return original_step(input_ids, mask, positions, cache)
        out = compiled(
            input_ids=input_ids,
            attention_mask=mask,
            position_ids=positions,
            past_key_values=cache,
            use_cache=True,
            logits_to_keep=1,
        )
        return out.logits[:, -1]

    engine._step = step


@patch("share_weights")
def _patch_share_weights(container: Any) -> None:
    engine, policy, cycle = container.engine(), container.policy(), container.cycle()
    if policy.uses_lora:
        raise SystemExit("share_weights needs a policy without LoRA")
    source = dict(policy.module.named_parameters())
    with torch.no_grad():
        for name, param in engine.module.named_parameters():
            param.data = source[name].data  # alias: the optimizer's updates are seen at once
    cycle._sync_engine = lambda: None  # nothing to copy
    import gc

    gc.collect()


# --------------------------------------------------------------------------- training
@patch("group_order")
def _patch_group_order(container: Any) -> None:
    optimizer = container.cycle().optimizer
    group = container.config().rollout.n_samples_per_prompt

    def order(b: int, step: int, epoch: int) -> Tensor:
        seed = optimizer.train_params.seed * 1_000_003 + step * 1009 + epoch
        perm = torch.randperm(b // group, generator=torch.Generator().manual_seed(seed))
        return (perm[:, None] * group + torch.arange(group)).reshape(-1)

    optimizer._order = order


@patch("no_entropy")
def _patch_no_entropy(container: Any) -> None:
    policy = container.policy()
    algorithm = container.cycle().settings.algorithm
    if algorithm.entropy_coef > 0 or algorithm.high_entropy_fraction is not None:
        return
    original = policy.forward

    def forward(batch: Any, *, temperature: float = 1.0, with_entropy: bool = False) -> Any:
        return original(batch, temperature=temperature, with_entropy=False)

    policy.forward = forward


def prefix_shared_logprobs(
    model: torch.nn.Module, batch: Any, *, temperature: float, with_entropy: bool, chunk_size: int
) -> Any:
    """Response log-probs (B, R) of ``batch`` with each distinct prompt run once.

    Rows whose prompts (left-padded columns [0, T - R)) are equal share one packed row
    ``[prompt, resp_1, ..., resp_k]``; a 4-D boolean mask lets response i attend to the
    prompt and to its own earlier tokens only; its position ids continue from the prompt.
    Rows of different prompts go to different packed rows (padded to the longest).
    """
    from lightrft.domain.ports import PolicyOutput
    from lightrft.domain.token_logprobs import token_logprobs

    ids, attn = batch.input_ids, batch.attention_mask.bool()
    b, t = ids.shape
    r = batch.response_length
    scored = batch.response_mask.bool() & attn[:, t - r :]
    prompts = [tuple(ids[i, : t - r][attn[i, : t - r]].tolist()) for i in range(b)]
    responses = [ids[i, t - r :][attn[i, t - r :]] for i in range(b)]
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, p in enumerate(prompts):
        groups.setdefault(p, []).append(i)
    lengths = [len(p) + sum(len(responses[i]) for i in rows) for p, rows in groups.items()]
    n = max(lengths)
    packed = ids.new_zeros((len(groups), n))
    positions = ids.new_zeros((len(groups), n))
    mask = torch.zeros((len(groups), 1, n, n), dtype=torch.bool, device=ids.device)
    where: dict[int, tuple[int, int, int]] = {}  # row -> (packed row, predictor of token 0, start)
    for g, (prompt, rows) in enumerate(groups.items()):
        lp = len(prompt)
        packed[g, :lp] = torch.tensor(prompt)
        positions[g, :lp] = torch.arange(lp)
        mask[g, 0, :lp, :lp] = torch.ones(lp, lp, dtype=torch.bool).tril()
        at = lp
        for i in rows:
            lr = len(responses[i])
            packed[g, at : at + lr] = responses[i]
            positions[g, at : at + lr] = torch.arange(lp, lp + lr)
            mask[g, 0, at : at + lr, :lp] = True
            mask[g, 0, at : at + lr, at : at + lr] = torch.ones(lr, lr, dtype=torch.bool).tril()
            where[i] = (g, lp - 1, at)
            at += lr
        if at < n:  # padding tokens attend to themselves only (no fully masked row)
            idx = torch.arange(at, n)
            mask[g, 0, idx, idx] = True
    # predictor index (into the flattened packed rows) of every scored response token
    keep_rows, keep_cols, labels = [], [], []
    for i in range(b):
        g, last_prompt, start = where[i]
        cols = scored[i].nonzero().squeeze(-1)
        pred = torch.where(cols == 0, torch.full_like(cols, last_prompt), start + cols - 1)
        keep_rows.append(torch.full_like(cols, g))
        keep_cols.append(pred)
        labels.append(ids[i, t - r :][cols])
    rows_t, cols_t = torch.cat(keep_rows), torch.cat(keep_cols)
    hidden = model.base_model(  # type: ignore[operator]
        input_ids=packed, attention_mask=mask, position_ids=positions, use_cache=False
    ).last_hidden_state  # [Bg, n, H]
    logits = model.get_output_embeddings()(hidden[rows_t, cols_t])[None]  # [1, K, V]
    out = token_logprobs(
        logits,
        torch.cat(labels)[None],
        temperature=temperature,
        with_entropy=with_entropy,
        chunk_size=chunk_size,
    )

    def scatter(values: Tensor) -> Tensor:
        return values.new_zeros(scored.shape).masked_scatter(scored, values[0])

    return PolicyOutput(
        scatter(out.logprobs), None if out.entropy is None else scatter(out.entropy)
    )


@patch("prefix_train")
def _patch_prefix_train(container: Any) -> None:
    policy = container.policy()
    if policy.uses_lora:
        raise SystemExit("prefix_train prototype supports full fine-tuning only")

    def forward(batch: Any, *, temperature: float = 1.0, with_entropy: bool = False) -> Any:
        return prefix_shared_logprobs(
            policy.module,
            batch,
            temperature=temperature,
            with_entropy=with_entropy,
            chunk_size=policy._chunk_size,
        )

    original = policy.forward
    policy.forward = forward
    policy._padded_forward = original


def check_prefix_train(model: torch.nn.Module, batch: Any) -> float:
    """Max |difference| of log-probs and of parameter gradients: prefix-shared vs padded."""
    from lightrft.adapters.hf.logprobs import response_logprobs

    grads = []
    values = []
    for fn in (
        lambda: response_logprobs(model, batch, with_entropy=True),
        lambda: prefix_shared_logprobs(
            model, batch, temperature=1.0, with_entropy=True, chunk_size=1024
        ),
    ):
        model.zero_grad(set_to_none=True)
        out = fn()
        (out.logprobs.sum() + 0.1 * out.entropy.sum()).backward()
        values.append(out.logprobs.detach())
        grads.append(
            torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
        )
    model.zero_grad(set_to_none=True)
    return max(
        float((values[0] - values[1]).abs().max()),
        float((grads[0] - grads[1]).abs().max() / grads[0].abs().max()),
    )


def _self_check() -> None:
    """Prefix-shared vs padded log-probs/gradients, and the draw's distribution."""
    from transformers import AutoModelForCausalLM

    from lightrft.adapters.hf import default_model_path
    from lightrft.domain.types import SequenceBatch

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(default_model_path(), dtype=torch.float32)
    model.config.num_hidden_layers = 4
    model.model.layers = model.model.layers[:4]
    # 2 prompts (lengths 5 and 3) x 2 responses (lengths 4, 2 / 3, 4); T = 5 + 4, R = 4
    rows = [
        ([1, 2, 3, 4, 5], [6, 7, 8, 9]),
        ([1, 2, 3, 4, 5], [10, 11]),
        ([20, 21, 22], [23, 24, 25]),
        ([20, 21, 22], [26, 27, 28, 29]),
    ]
    ids = torch.zeros(4, 9, dtype=torch.long)
    attn = torch.zeros(4, 9, dtype=torch.long)
    for i, (p, r) in enumerate(rows):
        ids[i, 5 - len(p) : 5] = torch.tensor(p)
        attn[i, 5 - len(p) : 5] = 1
        ids[i, 5 : 5 + len(r)] = torch.tensor(r)
        attn[i, 5 : 5 + len(r)] = 1
    batch = SequenceBatch(input_ids=ids, attention_mask=attn, response_mask=attn[:, 5:].float())
    print("prefix_train max |diff| (log-probs, relative grads):", check_prefix_train(model, batch))
    logits = torch.randn(3, 7) * 2
    lp = torch.log_softmax(logits, -1)
    gens = [torch.Generator().manual_seed(i) for i in range(3)]
    draws = torch.stack([batched_draw(lp, False, gens) for _ in range(20000)])
    freq = torch.stack([torch.bincount(draws[:, j], minlength=7) for j in range(3)]) / 20000
    print("draw max |freq - p|:", float((freq - lp.exp()).abs().max()))


if __name__ == "__main__":
    _self_check()
