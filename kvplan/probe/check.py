"""Kernel check: write new tokens into the real pages and attend over them through shuffled block tables.

For each attention group, on its first and last layer: draw non-contiguous blocks from one pool of
block ids shared by every group (as a hybrid engine does), write K/V (or the MLA latent) of a few
sequences with ``reshape_and_cache`` (data and scale tensors, random but valid values), read the
slots back (bit-exact), then run the decode kernel in the cache's own storage scheme (float, fp8,
int8/int4 group scales, nvfp4, per-token-head, fp8_ds_mla) and compare it with the torch reference
(dequantize + gather + SDPA) by relative error. A shape the device cannot run is a one-line skip.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from types import ModuleType

import torch

from kvplan.formulas import KvDtype
from kvplan.probe.allocate import FP8_VIEWS, VLLM_LAYOUT, CacheShape, Tensors, paged_part
from kvplan.probe.compare import is_compressed
from kvplan.probe.data import random_cache, random_data, random_ds_mla
from kvplan.probe.pages import Pages, pages_of
from kvplan.specs import ChunkedAttn, FullAttn, MLAAttn, SlidingAttn, parts

# ‖kernel − reference‖ / ‖reference‖: fp32 dots are exact up to summation order; 16-bit dots round the
# probabilities (and dequantized K/V) to bf16/fp16, ~2^-9 per element. A wrong block reads as O(1).
TOLERANCE = {"fp32": 1e-4, "16-bit": 1e-2, "quantized": 2.5e-2}


@dataclass(frozen=True, slots=True)
class Outcome:
    status: str  # pass | fail | skipped
    note: str


def load_ops(device: torch.device) -> tuple[ModuleType, bool]:
    """(kernels, True) with triton (interpreted on CPU); (torch reference, False) when triton is missing."""
    if device.type == "cpu":
        os.environ.setdefault("TRITON_INTERPRET", "1")  # must be set before triton is imported
    try:
        from kvplan.probe import kernels
    except ImportError:
        from kvplan.probe import reference

        return reference, False
    return kernels, True


class BlockPool:
    """One pool of block ids for every group: a shuffled permutation handed out in order."""

    def __init__(self, num_blocks: int, generator: torch.Generator) -> None:
        self.num_blocks, self.generator = num_blocks, generator
        self.free = torch.randperm(num_blocks, generator=generator).tolist()

    def take(self, count: int) -> list[int]:
        if count > len(self.free):  # the pool ran dry: start a new shuffled round
            self.free = torch.randperm(self.num_blocks, generator=self.generator).tolist()
        taken, self.free = self.free[:count], self.free[count:]
        return taken


@dataclass(frozen=True, slots=True)
class Batch:
    block_table: torch.Tensor  # (B, max_blocks) int32
    seq_lens: torch.Tensor  # (B,) int32
    slot_mapping: torch.Tensor  # (T + 1,) int64, the last token is padding (-1)


def make_batch(pool: BlockPool, block_size: int, device: torch.device) -> Batch:
    """Up to three sequences over distinct shuffled blocks: one spans three blocks, one is short."""
    lens, budget_blocks = [], pool.num_blocks
    for want in (2 * block_size + 3, 5, block_size):
        n = min(want, budget_blocks * block_size)
        if n > 0:
            lens.append(n)
            budget_blocks -= -(-n // block_size)
    counts = [-(-n // block_size) for n in lens]
    blocks = pool.take(sum(counts))  # one take: blocks never repeat inside a batch
    width = max(counts)
    tables, slots, start = [], [], 0
    for n, count in zip(lens, counts, strict=True):
        own = blocks[start : start + count]
        start += count
        tables.append(own + [0] * (width - count))
        slots += [own[t // block_size] * block_size + t % block_size for t in range(n)]
    return Batch(torch.tensor(tables, dtype=torch.int32, device=device),
                 torch.tensor(lens, dtype=torch.int32, device=device),
                 torch.tensor([*slots, -1], dtype=torch.int64, device=device))


def check_write(ops: ModuleType, cache: torch.Tensor, batch: Batch, fp8: torch.dtype | None,
                gen: torch.Generator, src: torch.Tensor | None = None) -> bool:
    """Write rows (random ones unless given) through the slot mapping, then read those slots back: bit-exact."""
    slots = batch.slot_mapping[:-1]
    blk, off = slots // cache.shape[1], slots % cache.shape[1]
    cache[blk, off] = 0
    if src is None:
        src = random_data((len(batch.slot_mapping), *cache.shape[2:]), cache.dtype, gen, fp8=fp8, device=cache.device)
    ops.reshape_and_cache(src, batch.slot_mapping, cache)
    return bool(torch.equal(cache[blk, off], src[:-1]))


def decode_error(ops: ModuleType, pages: Pages, num_heads: int, batch: Batch, gen: torch.Generator) -> float:
    """‖kernel − reference‖ / ‖reference‖ of one decode through the batch's block table (bf16 queries
    for 16-bit and quantized caches, fp32 for fp32 caches)."""
    from kvplan.probe import reference

    q_dtype = torch.float32 if pages.k.dtype == torch.float32 else torch.bfloat16
    if pages.k.dtype == torch.float16:
        q_dtype = torch.float16
    q = torch.randn(len(batch.seq_lens), num_heads, pages.q_width or pages.k.shape[-1], generator=gen)
    q = q.to(q_dtype).to(pages.k.device)
    args = (q, batch.block_table, batch.seq_lens, 1.0 / math.sqrt(q.shape[-1]))
    got, want = pages.decode(ops, *args).float(), pages.decode(reference, *args).float()
    return float((got - want).norm() / want.norm().clamp_min(1e-30)) if got.isfinite().all() else math.inf


def tolerance(pages: Pages) -> float:
    if pages.quant != "none" or pages.k.element_size() == 1:
        return TOLERANCE["quantized"]
    return TOLERANCE["fp32"] if pages.k.dtype == torch.float32 else TOLERANCE["16-bit"]


def check_decode(ops: ModuleType, pages: Pages, num_heads: int, batch: Batch, gen: torch.Generator) -> bool:
    """The kernel's decode output against dequantize + gather + SDPA, through the same block table."""
    return decode_error(ops, pages, num_heads, batch, gen) <= tolerance(pages)


def decodes_fp8(pages: Pages) -> bool:
    """Triton reads float8 on CPU (interpreter) and on GPUs from compute capability 8.9 (Ada, Hopper)."""
    device = pages.k.device
    return not pages.reads_fp8() or device.type != "cuda" or torch.cuda.get_device_capability(device) >= (8, 9)


def _random_rows(shape: CacheShape, tensors: Tensors, layer: int, batch: Batch,
                 gen: torch.Generator) -> dict[str, torch.Tensor]:
    """Valid rows for the batch's tokens, per tensor name of the layer (data and scales drawn together)."""
    dtype, spec, n = shape.kv_dtype, shape.spec, len(batch.slot_mapping)
    device = next(iter(tensors.values())).device
    if isinstance(spec, MLAAttn):
        if dtype.scale == "ds_mla":
            return {"latent": random_ds_mla((n, 1), spec.kv_lora_rank, spec.qk_rope_head_dim, gen, device)}
        data, scales = _draw(tensors["latent"], dtype, (n, 1), spec.latent_dim, gen, device)
        return {"latent": data, **({"latent_scale": scales} if scales is not None else {})}
    assert isinstance(spec, (FullAttn, SlidingAttn, ChunkedAttn))
    like = tensors.get("kv", tensors.get("k", tensors.get("cache")))
    assert like is not None
    rows: dict[str, torch.Tensor] = {}
    for name, width in (("k", spec.head_dim), ("v", spec.v_head_dim)):
        data, scales = _draw(like, dtype, (n, spec.num_kv_heads), width, gen, device)
        rows[name] = data
        if scales is not None:
            rows[f"{name}_scale"] = scales
    return rows


def _draw(like: torch.Tensor, dtype: KvDtype, lead: tuple[int, ...], width: int, gen: torch.Generator,
          device: torch.device) -> tuple[torch.Tensor, torch.Tensor | None]:
    fp8 = FP8_VIEWS.get(dtype.name)
    data_dtype = torch.uint8 if fp8 is not None or dtype.element_bits == 4 else like.dtype
    data, scales = random_cache(lead, width, dtype.scale, gen, dtype=fp8 or data_dtype,
                                quant_group=dtype.quant_group or 8, device=device)
    return (data.view(torch.uint8) if fp8 is not None else data), scales


def _layer_checks(ops: ModuleType, shape: CacheShape, layers: list[Tensors], layer: int, num_heads: int,
                  batch: Batch, gen: torch.Generator) -> list[Outcome]:
    tensors = layers[0] if shape.layout != VLLM_LAYOUT else layers[layer]
    pages = pages_of(shape, tensors, layer)
    rows = _random_rows(shape, tensors, layer, batch, gen)
    targets = {"latent": pages.k.view(torch.uint8) if pages.k.element_size() == 1 else pages.k,
               "latent_scale": pages.k_scales, "k": pages.k, "v": pages.v, "k_scale": pages.k_scales,
               "v_scale": pages.v_scales}
    outcomes = []
    for name, src in rows.items():
        cache = targets[name]
        assert cache is not None
        cache = cache.view(src.dtype) if cache.dtype != src.dtype else cache
        cache = cache.unsqueeze(2) if name.startswith("latent") else cache
        ok = check_write(ops, cache, batch, None, gen, src.view(len(batch.slot_mapping), *cache.shape[2:]))
        outcomes.append(Outcome("pass" if ok else "fail", f"layer {layer}: write {name}"))
    outcomes.append(_decode_outcome(ops, pages, num_heads, batch, gen, layer, shape.kv_dtype.name))
    return outcomes


def _decode_outcome(ops: ModuleType, pages: Pages, num_heads: int, batch: Batch, gen: torch.Generator,
                    layer: int, dtype_name: str) -> Outcome:
    from kvplan.probe.kernels import DoesNotFit

    if not decodes_fp8(pages):
        return Outcome("skipped", f"layer {layer}: decode of {dtype_name} needs float8 (compute capability 8.9+)")
    try:
        error = decode_error(ops, pages, num_heads, batch, gen)
    except DoesNotFit as exc:
        return Outcome("skipped", f"layer {layer}: decode does not fit this device: {exc}")
    ok = error <= tolerance(pages)
    return Outcome("pass" if ok else "fail", f"layer {layer}: decode {dtype_name} (relative error {error:.1e})")


def check_group(ops: ModuleType, shape: CacheShape, layers: list[Tensors], num_heads: int, pool: BlockPool,
                gen: torch.Generator, device: torch.device) -> list[Outcome]:
    """Write and decode checks on the first and last layer of a group (the last only, on CPU: interpreted
    Triton costs about a second per layer, and the last layer is the one a wrong layer offset misses)."""
    paged = paged_part(shape, layers) if layers else None
    if paged is None:
        return _unchecked(shape)
    kind, (shape, layers) = shape.spec.kind, paged
    outcomes = []
    layers_to_check = {shape.num_layers - 1} if device.type == "cpu" else {0, shape.num_layers - 1}
    for layer in sorted(layers_to_check):
        batch = make_batch(pool, shape.block_size, device)
        for o in _layer_checks(ops, shape, layers, layer, num_heads, batch, gen):
            outcomes.append(Outcome(o.status, f"{kind} {o.note}"))
    return outcomes


def _unchecked(shape: CacheShape) -> list[Outcome]:
    """Why a group has no kernel check: each DeepSeek-V4 part named (its bytes are compared, not read), or no
    paged tokens at all."""
    own = dict.fromkeys(p.kind for p in parts(shape.spec) if is_compressed(p))
    if not own:
        return [Outcome("skipped", f"{shape.spec.kind} layers: no paged tokens to address")]
    return [Outcome("skipped", f"{shape.spec.kind} layers: {kind} part: no kernel here reads DeepSeek-V4's {kind} "
                               "pages (vLLM's sparse DSV4 kernels); its bytes are compared only") for kind in own]


def verdict(outcomes: list[Outcome], has_triton: bool) -> str:
    """fail if any check failed; skipped without triton or when nothing ran; else pass."""
    if any(o.status == "fail" for o in outcomes):
        return "fail"
    if not has_triton or not any(o.status == "pass" for o in outcomes):
        return "skipped"
    return "pass"
