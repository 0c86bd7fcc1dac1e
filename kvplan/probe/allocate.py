"""Allocate real caches in engine layouts from the per-GPU layer specs kvplan predicts with.

Layouts (one group of identical layers at a time):

- ``vllm`` (default): per layer ``kv`` = ``[2, num_blocks, block_size, kv_heads, head_dim]``, or
  separate ``k``/``v`` ``[num_blocks, block_size, kv_heads, width]`` when the widths differ;
  MLA ``latent`` = ``[num_blocks, block_size, kv_lora_rank + rope]``.
- ``ppl0``..``ppl3``: the ppl.nn cache operator's four layouts, one tensor per group with
  ``MaxT = num_blocks × block_size`` token slots (``(MaxT, L, 2, H, D)``, ``(L, MaxT, 2, H, D)``,
  ``(L, H, MaxT, 2, D)``, ``(2, L, H, MaxT, D)``).

Element storage: fp8 as uint8 (vLLM); int8/int4 with one fp16 scale per ``quant_group`` values
(int4 packed two per byte) in a ``*_scale`` tensor of the same layout; fp8/int8_per_token_head with
one fp32 scale per token and head; nvfp4 packed with one byte-scale per 16 values; fp8_ds_mla as
the 656-byte latent rows. Linear/Mamba layers get ``conv`` and ``ssm`` state tensors per sequence
(each in its own dtype); a sparse-attention indexer gets its byte rows; DeepSeek-V4's latents, compressor
states and compressed indexer keys get vLLM's pages of raw rows (``kvplan.probe.compressed``); a composite layer gets its
parts' tensors, named ``<part>.<tensor>``.

This module never computes a prediction: ``compare`` does, from ``kvplan.formulas``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import torch

from kvplan.errors import InputError
from kvplan.formulas import KvDtype, kv_bytes_per_token
from kvplan.formulas.per_token import StateDtypes, latent_dtype
from kvplan.probe.compare import is_compressed
from kvplan.probe.compressed import rows
from kvplan.specs import ChunkedAttn, Composite, FullAttn, IndexerCache, LayerSpec, LinearState, MLAAttn, SlidingAttn

PAGED = (FullAttn, SlidingAttn, ChunkedAttn, MLAAttn)  # the specs whose tokens live in blocks

VLLM_LAYOUT = "vllm"  # vLLM's: one paged tensor per layer (the ppl layouts: ppl.nn's cache_layout, one for all layers)
LAYOUTS = (VLLM_LAYOUT, "ppl0", "ppl1", "ppl2", "ppl3")
Tensors = dict[str, torch.Tensor]
Allocator = Callable[[tuple[int, ...], torch.dtype], torch.Tensor]

_FLOAT_DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
FP8_VIEWS = {"fp8": torch.float8_e4m3fn, "fp8_e4m3": torch.float8_e4m3fn, "fp8_e5m2": torch.float8_e5m2,
             "fp8_inc": torch.float8_e4m3fn}


@dataclass(frozen=True, slots=True)
class RowPart:
    """One tensor of a head vector's storage: the data, or its scales."""

    suffix: str  # "" for data, "_scale" for scales
    dtype: torch.dtype
    width: int  # elements of `dtype` per head vector


def row_parts(width: int, dtype: KvDtype) -> tuple[RowPart, ...]:
    """How a head vector of `width` values is stored: data (and scale) elements per head."""
    if dtype.scale == "none":
        return (RowPart("", _FLOAT_DTYPES.get(dtype.name, torch.uint8), width),)
    if dtype.scale == "group":
        data = RowPart("", torch.int8, width) if dtype.element_bits == 8 else RowPart("", torch.uint8, width // 2)
        return data, RowPart("_scale", torch.float16, width // dtype.quant_group)
    if dtype.scale == "per_token_head":
        data_dtype = torch.int8 if dtype.name.startswith("int8") else torch.uint8
        return RowPart("", data_dtype, width), RowPart("_scale", torch.float32, 1)
    if dtype.scale == "nvfp4":
        return RowPart("", torch.uint8, width // 2), RowPart("_scale", torch.uint8, width // 16)
    raise InputError(f"KV dtype {dtype.name} has no head-vector layout (it applies to the MLA latent only)")


@dataclass(frozen=True, slots=True, kw_only=True)
class CacheShape:
    """What to allocate for one group: its per-GPU spec, layer count, blocks and sequences."""

    spec: LayerSpec
    num_layers: int
    num_blocks: int
    block_size: int
    num_seqs: int
    kv_dtype: KvDtype
    state_dtype: KvDtype  # conv states (vLLM mamba_cache_dtype)
    layout: str = VLLM_LAYOUT
    ssm_state_dtype: KvDtype | None = None  # recurrent states; None: auto (the layer's own default)


def _torch_empty(device: torch.device) -> Allocator:
    return lambda shape, dtype: torch.empty(shape, dtype=dtype, device=device)


def allocate_group(shape: CacheShape, device: torch.device, alloc: Allocator | None = None) -> list[Tensors]:
    """The tensors of one group: one dict per layer (vllm, state) or one dict for the group (ppl)."""
    new = alloc or _torch_empty(device)
    shape = stored(shape)
    spec = shape.spec
    if isinstance(spec, Composite):  # one cache per part, named by its position in the layer
        per_part = [allocate_group(part_shape(shape, p), device, new) for p in spec.parts]
        return [{f"{i}.{k}": t for i, part in enumerate(per_part) if part for k, t in part[layer].items()}
                for layer in range(shape.num_layers)]  # a cross-attention part holds no decoder tokens
    if isinstance(spec, LinearState):
        return [_state_tensors(spec, shape, new) for _ in range(shape.num_layers)]
    if is_compressed(spec):  # DeepSeek-V4: vLLM's page of the part's own block, as raw rows
        return [{"rows": rows(spec, shape.num_blocks, shape.block_size, shape.kv_dtype, new)}
                for _ in range(shape.num_layers)]
    if isinstance(spec, IndexerCache):  # fp8 key + fp32 scales as raw bytes per token
        lead = (shape.num_blocks, shape.block_size, spec.bytes_per_token)
        return [{"indexer": new(lead, torch.uint8)} for _ in range(shape.num_layers)]
    if isinstance(spec, (FullAttn, SlidingAttn, ChunkedAttn, MLAAttn)) and shape.layout != VLLM_LAYOUT:
        return [_ppl_tensors(spec, shape, new)]
    if isinstance(spec, MLAAttn):
        return [_mla_tensors(spec, shape, new) for _ in range(shape.num_layers)]
    if isinstance(spec, (FullAttn, SlidingAttn, ChunkedAttn)):
        return [_kv_tensors(spec, shape, new) for _ in range(shape.num_layers)]
    return []  # NoKV


def _kv_tensors(spec: FullAttn | SlidingAttn | ChunkedAttn, s: CacheShape, new: Allocator) -> Tensors:
    lead = (s.num_blocks, s.block_size, spec.num_kv_heads)
    if spec.head_dim == spec.v_head_dim:
        return {f"kv{p.suffix}": new((2, *lead, p.width), p.dtype) for p in row_parts(spec.head_dim, s.kv_dtype)}
    out: Tensors = {}
    for name, width in (("k", spec.head_dim), ("v", spec.v_head_dim)):
        out.update({f"{name}{p.suffix}": new((*lead, p.width), p.dtype) for p in row_parts(width, s.kv_dtype)})
    return out


def _mla_tensors(spec: MLAAttn, s: CacheShape, new: Allocator) -> Tensors:
    lead = (s.num_blocks, s.block_size)
    if s.kv_dtype.scale == "ds_mla":  # NoPE fp8 + fp32 scales + RoPE bf16, as raw bytes per token
        return {"latent": new((*lead, kv_bytes_per_token(spec, s.kv_dtype)), torch.uint8)}
    if s.kv_dtype.scale == "per_token_head":
        raise InputError(f"{s.kv_dtype.name} scales K/V heads; MLA caches one latent")
    return {f"latent{p.suffix}": new((*lead, p.width), p.dtype) for p in row_parts(spec.latent_dim, s.kv_dtype)}


def stored(shape: CacheShape) -> CacheShape:
    """The shape as the engine stores it: sparse MLA's fp8 latent is the fp8_ds_mla layout."""
    if isinstance(shape.spec, MLAAttn):
        return replace(shape, kv_dtype=latent_dtype(shape.spec, shape.kv_dtype))
    return shape


def paged_part(shape: CacheShape, layers: list[Tensors]) -> tuple[CacheShape, list[Tensors]] | None:
    """The group's paged attention cache as its own shape and tensors: the group itself, or a composite
    layer's attention part (MLA beside an indexer, self- beside cross-attention) with the tensors
    allocate_group named `<part index>.<name>`; None where no token lives in a block."""
    shape = stored(shape)
    if isinstance(shape.spec, PAGED):
        return shape, layers
    for i, part in enumerate(shape.spec.parts if isinstance(shape.spec, Composite) else ()):
        if isinstance(part, PAGED):
            own = [{k.removeprefix(f"{i}."): t for k, t in d.items() if k.startswith(f"{i}.")} for d in layers]
            return part_shape(shape, part), own
    return None


def part_shape(shape: CacheShape, part: LayerSpec) -> CacheShape:
    """One part of a composite layer: its own spec in vLLM's per-layer layout, stored as the engine stores it."""
    return stored(replace(shape, spec=part, layout=VLLM_LAYOUT))


def _state_tensors(spec: LinearState, s: CacheShape, new: Allocator) -> Tensors:
    conv = _FLOAT_DTYPES[s.state_dtype.name]
    ssm = _FLOAT_DTYPES[StateDtypes(s.state_dtype, s.ssm_state_dtype).recurrent(spec).name]
    channels = spec.conv_elements // max(spec.conv_kernel - 1, 1)
    out: Tensors = {}
    if spec.conv_elements:
        out["conv"] = new((s.num_seqs, spec.conv_kernel - 1, channels), conv)
    if spec.ssm_elements:
        out["ssm"] = new((s.num_seqs, spec.num_state_heads, spec.state_rows, spec.state_cols), ssm)
    return out


def ppl_shape(layout: str, num_layers: int, num_heads: int, max_tokens: int, width: int) -> tuple[int, ...]:
    """The ppl.nn cache_layout 0-3 shapes: (MaxT,L,2,H,D) (L,MaxT,2,H,D) (L,H,MaxT,2,D) (2,L,H,MaxT,D)."""
    t, layers, h, d = max_tokens, num_layers, num_heads, width
    return {"ppl0": (t, layers, 2, h, d), "ppl1": (layers, t, 2, h, d),
            "ppl2": (layers, h, t, 2, d), "ppl3": (2, layers, h, t, d)}[layout]


def _ppl_tensors(spec: LayerSpec, s: CacheShape, new: Allocator) -> Tensors:
    if not isinstance(spec, (FullAttn, SlidingAttn, ChunkedAttn)) or spec.head_dim != spec.v_head_dim:
        raise InputError(f"--layout {s.layout} holds K and V heads of one width; this model's {spec.kind} "
                         "layers do not fit it (use --layout vllm)")
    if s.kv_dtype.scale not in ("none", "group"):
        raise InputError(f"--layout {s.layout} supports float, fp8, int8 and int4 caches, not {s.kv_dtype.name}")
    names = {"": "cache", "_scale": "scale"}
    max_tokens = s.num_blocks * s.block_size
    return {names[p.suffix]: new(ppl_shape(s.layout, s.num_layers, spec.num_kv_heads, max_tokens, p.width), p.dtype)
            for p in row_parts(spec.head_dim, s.kv_dtype)}


def kv_views(tensors: Tensors, layout: str, layer: int, block_size: int,
             suffix: str = "") -> tuple[torch.Tensor, torch.Tensor]:
    """K and V of one layer as (num_blocks, block_size, heads, width) views of the real pages."""
    if layout == VLLM_LAYOUT:
        if f"kv{suffix}" in tensors:
            kv = tensors[f"kv{suffix}"]
            return kv[0], kv[1]
        return tensors[f"k{suffix}"], tensors[f"v{suffix}"]
    cache = tensors["cache" if not suffix else "scale"]
    pair: Callable[[int], torch.Tensor] = {"ppl0": lambda kv: cache[:, layer, kv], "ppl1": lambda kv: cache[layer, :, kv],
            "ppl2": lambda kv: cache[layer, :, :, kv].transpose(0, 1),
            "ppl3": lambda kv: cache[kv, layer].transpose(0, 1)}[layout]
    k, v = pair(0), pair(1)
    return k.unflatten(0, (-1, block_size)), v.unflatten(0, (-1, block_size))  # type: ignore[no-untyped-call, unused-ignore]

