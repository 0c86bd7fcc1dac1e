"""Kernel check: write new tokens into the real pages and attend over them through shuffled block tables.

For each attention group, on its first and last layer: draw non-contiguous blocks from one pool of
block ids shared by every group (as a hybrid engine does), write K/V (or the MLA latent) of a few
sequences with ``reshape_and_cache``, read the slots back (bit-exact), then run ``paged_decode``
and compare it with the torch reference (gather + SDPA). Quantized caches (int8/int4/nvfp4/
per-token-head/fp8_ds_mla) get the bit-exact write check of their data and scale tensors only:
no dequantizing decode kernel is shipped. fp8 caches are read as float8 by the decode kernel.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from types import ModuleType

import torch

from kvplan.probe.allocate import FP8_VIEWS, CacheShape, Tensors, kv_views, row_parts
from kvplan.specs import ChunkedAttn, FullAttn, MLAAttn, SlidingAttn

ATOL = RTOL = 2e-3  # both sides do fp32 math on the same stored values; only summation order differs


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


def _random_rows(shape: tuple[int, ...], dtype: torch.dtype, fp8: torch.dtype | None, gen: torch.Generator,
                 device: torch.device) -> torch.Tensor:
    if dtype.is_floating_point:
        return torch.randn(shape, generator=gen).to(dtype).to(device)
    if fp8 is not None:  # real fp8 values, stored as their bytes
        return torch.randn(shape, generator=gen).to(fp8).view(torch.uint8).to(device)
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max + 1, shape, generator=gen, dtype=dtype).to(device)


def check_write(ops: ModuleType, cache: torch.Tensor, batch: Batch, fp8: torch.dtype | None,
                gen: torch.Generator) -> bool:
    """Write random rows through the slot mapping, then read those slots back: bit-exact or fail."""
    slots = batch.slot_mapping[:-1]
    blk, off = slots // cache.shape[1], slots % cache.shape[1]
    cache[blk, off] = 0
    src = _random_rows((len(batch.slot_mapping), *cache.shape[2:]), cache.dtype, fp8, gen, cache.device)
    ops.reshape_and_cache(src, batch.slot_mapping, cache)
    return bool(torch.equal(cache[blk, off], src[:-1]))


def check_decode(ops: ModuleType, k: torch.Tensor, v: torch.Tensor, num_heads: int, batch: Batch,
                 gen: torch.Generator, mla_rank: int | None = None) -> bool:
    """The kernel's decode output against gather + SDPA, through the same block table."""
    from kvplan.probe import reference

    q_dtype = k.dtype if k.dtype in (torch.float32, torch.float16, torch.bfloat16) else torch.float32
    q = torch.randn(len(batch.seq_lens), num_heads, k.shape[-1], generator=gen).to(q_dtype).to(k.device)
    scale = 1.0 / math.sqrt(k.shape[-1])
    args = (batch.block_table, batch.seq_lens, scale)
    if mla_rank is not None:
        got, want = ops.paged_decode_mla(q, k, mla_rank, *args), reference.paged_decode_mla(q, k, mla_rank, *args)
    else:
        got, want = ops.paged_decode(q, k, v, *args), reference.paged_decode(q, k, v, *args)
    return bool(torch.allclose(got.float(), want.float(), atol=ATOL, rtol=RTOL))


def decodes_fp8(fp8: torch.dtype | None, tensors: Tensors) -> bool:
    """Triton reads float8 on CPU (interpreter) and on GPUs from compute capability 8.9 (Ada, Hopper)."""
    device = next(iter(tensors.values())).device
    return fp8 is not None and (device.type != "cuda" or torch.cuda.get_device_capability(device) >= (8, 9))


def _layer_checks(ops: ModuleType, shape: CacheShape, layers: list[Tensors], layer: int, num_heads: int,
                  batch: Batch, gen: torch.Generator) -> list[tuple[str, bool]]:
    spec, dtype = shape.spec, shape.kv_dtype
    fp8 = FP8_VIEWS.get(dtype.name)
    tensors = layers[0] if shape.layout != "vllm" else layers[layer]
    floats = dtype.scale == "none" and (dtype.element_bits >= 16 or decodes_fp8(fp8, tensors))
    if isinstance(spec, MLAAttn):
        names = [n for n in tensors if n.startswith("latent")]
        results = [(f"write {n}", check_write(ops, tensors[n].unsqueeze(2), batch, fp8, gen)) for n in names]
        if floats:
            latent = tensors["latent"].view(fp8) if fp8 else tensors["latent"]
            results.append(("decode mla", check_decode(ops, latent, latent, num_heads, batch, gen,
                                                       mla_rank=spec.kv_lora_rank)))
        return results
    results = []
    for part in row_parts(getattr(spec, "head_dim", 0), dtype):
        k, v = kv_views(tensors, shape.layout, layer, shape.block_size, part.suffix)
        results += [(f"write k{part.suffix}", check_write(ops, k, batch, fp8, gen)),
                    (f"write v{part.suffix}", check_write(ops, v, batch, fp8, gen))]
    if floats:
        k, v = kv_views(tensors, shape.layout, layer, shape.block_size)
        k, v = (k.view(fp8), v.view(fp8)) if fp8 else (k, v)
        results.append(("decode", check_decode(ops, k, v, num_heads, batch, gen)))
    return results


def check_group(ops: ModuleType, shape: CacheShape, layers: list[Tensors], num_heads: int, pool: BlockPool,
                gen: torch.Generator, device: torch.device) -> list[Outcome]:
    """Write and decode checks on the first and last layer of a group (the last only, on CPU: interpreted
    Triton costs about a second per layer, and the last layer is the one a wrong layer offset misses)."""
    if not isinstance(shape.spec, (FullAttn, SlidingAttn, ChunkedAttn, MLAAttn)) or not layers:
        return [Outcome("skipped", f"{shape.spec.kind} layers: no paged tokens to address")]
    outcomes = []
    layers_to_check = {shape.num_layers - 1} if device.type == "cpu" else {0, shape.num_layers - 1}
    for layer in sorted(layers_to_check):
        batch = make_batch(pool, shape.block_size, device)
        for name, ok in _layer_checks(ops, shape, layers, layer, num_heads, batch, gen):
            outcomes.append(Outcome("pass" if ok else "fail", f"{shape.spec.kind} layer {layer}: {name}"))
    if shape.kv_dtype.is_scaled:
        outcomes.append(Outcome("skipped", f"{shape.spec.kind}: decode not checked for {shape.kv_dtype.name} "
                                           "(no dequantizing kernel); write checked on data and scales"))
    return outcomes


def verdict(outcomes: list[Outcome], has_triton: bool) -> str:
    """fail if any check failed; skipped without triton or when nothing ran; else pass."""
    if any(o.status == "fail" for o in outcomes):
        return "fail"
    if not has_triton or not any(o.status == "pass" for o in outcomes):
        return "skipped"
    return "pass"
