"""Parameter counts from the config, bytes by weight format, and the share of one GPU.

- ``param_count(model)``: counts by kind (embedding, lm_head, attention, dense MLP, experts, shared
  experts, router, norms), per decoder layer, and the MTP/nextn modules apart from ``total``.
- ``weight_bytes(model, weights_dtype)``: the checkpoint's bytes (MTP modules excluded unless asked:
  engines load them only for speculative decoding).
- ``weight_bytes_per_gpu(model, tp=, pp=)``: what the most loaded GPU holds. TP splits attention
  heads, MLP and expert widths (ceil); K/V projections follow the KV heads (replicated once tp >
  KV heads, as the KV cache is); norms, routers, output-projection biases and MLA's q_a/kv_a
  down-projections are replicated on every rank (vLLM ReplicatedLinear). Embedding and lm_head are
  vocab-parallel with the vocabulary padded to a multiple of 64 (vLLM DEFAULT_VOCAB_PADDING_SIZE).
  PP stages take their layers as ``pp_layer_counts``; the first holds the embedding, the last the
  final norm and lm_head (with tied embeddings and pp > 1 the last stage holds its own copy, as
  vLLM does), and the MTP modules when included. A vision tower (Gemma-3) sits on the first stage.

The inventory of tensors is ``parts``; byte formats are ``formats``; vision towers ``vision``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, fields

from kvplan.config.model import ModelConfig
from kvplan.errors import InputError
from kvplan.formulas.sharding import kv_heads_per_rank, pp_layer_counts
from kvplan.planning.weights.formats import WeightFormat, tensor_bytes, weight_format
from kvplan.planning.weights.parts import ModelParts, Part, model_parts
from kvplan.planning.weights.vision import vision_note, vision_parts
from kvplan.units import cdiv

VOCAB_PADDING = 64  # vLLM vocab_parallel_embedding.DEFAULT_VOCAB_PADDING_SIZE


@dataclass(frozen=True, slots=True, kw_only=True)
class LayerParams:
    attention: int = 0  # projections, biases, sinks, linear-attention tensors
    mlp_dense: int = 0
    moe_experts: int = 0
    moe_shared_experts: int = 0
    router: int = 0  # gate weight, its biases, Qwen's shared-expert gate
    norms: int = 0  # layer norms, q/k norms, MLA latent norms

    @property
    def total(self) -> int:
        return sum(getattr(self, f.name) for f in fields(self))


@dataclass(frozen=True, slots=True, kw_only=True)
class ParamCount:
    embedding: int
    lm_head: int  # 0 when tied to the embedding
    attention: int
    mlp_dense: int
    moe_experts: int
    moe_shared_experts: int
    router: int
    norms: int  # final norm included
    vision: int  # vision tower + projector of a multimodal checkpoint (Gemma-3), in total
    mtp: int  # next-token-prediction modules (DeepSeek/GLM), not in total
    total: int
    layers: tuple[LayerParams, ...]  # decoder layers of the language model
    notes: tuple[str, ...] = ()

    @property
    def total_with_mtp(self) -> int:
        return self.total + self.mtp


def _layer_params(parts: tuple[Part, ...]) -> LayerParams:
    sums = dict.fromkeys(("attention", "mlp_dense", "moe_experts", "moe_shared_experts", "router", "norms"), 0)
    for part in parts:
        sums[part.category] += part.params
    return LayerParams(**sums)


def param_count(model: ModelConfig) -> ParamCount:
    """Parameters by kind and by layer, read from the config (see ``parts``)."""
    parts = model_parts(model)
    layers = tuple(_layer_params(p) for p in parts.layers)
    totals = {name: sum(getattr(layer, name) for layer in layers)
              for name in ("attention", "mlp_dense", "moe_experts", "moe_shared_experts", "router")}
    norms = sum(layer.norms for layer in layers) + parts.final_norm.params
    embedding = parts.embedding.params
    lm_head = parts.lm_head.params if parts.lm_head else 0
    vision = sum(p.params for p in vision_parts(model))
    total = embedding + lm_head + norms + vision + sum(totals.values())
    mtp = sum(p.params for layer in parts.mtp_layers for p in layer)
    notes = tuple(n for n in (vision_note(model),) if n)
    return ParamCount(embedding=embedding, lm_head=lm_head, norms=norms, vision=vision, mtp=mtp, total=total,
                      layers=layers, notes=notes, **totals)


def _check(tp: int, pp: int) -> None:
    for name, value in (("tp", tp), ("pp", pp)):
        if not isinstance(value, int) or value < 1:
            raise InputError(f"{name} must be a positive integer, got {value!r}")


def shard_shape(part: Part, tp: int, num_kv_heads: int) -> tuple[int, ...]:
    """The shape one TP rank holds."""
    first, rest = part.shape[0], part.shape[1:]
    if part.tp == "column":
        return (cdiv(first, tp), *rest)
    if part.tp == "row":
        return (first, cdiv(rest[0], tp))
    if part.tp == "kv":
        return (first // num_kv_heads * kv_heads_per_rank(num_kv_heads, tp), *rest)
    if part.tp == "vocab":
        return (cdiv(cdiv(first, VOCAB_PADDING) * VOCAB_PADDING, tp), *rest)
    return part.shape


@dataclass(frozen=True, slots=True)
class _Rank:
    fmt: WeightFormat
    tp: int | None  # None: the unsplit checkpoint, without vocab padding
    num_kv_heads: int


def _add_bytes(into: Counter[str], parts: tuple[Part, ...], module: str, rank: _Rank, kind: str | None = None) -> None:
    """Add the bytes one TP rank holds of `parts`, by kind (module: their path, for modules_to_not_convert)."""
    for part in parts:
        shape = part.shape if rank.tp is None else shard_shape(part, rank.tp, rank.num_kv_heads)
        quantized = part.is_linear and rank.fmt.is_quantized(f"{module}{part.name}")
        into[kind or part.category] += tensor_bytes(shape, part.count, rank.fmt, quantized=quantized)


def weight_bytes(model: ModelConfig, weights_dtype: str | None = None, *, include_mtp: bool = False) -> int:
    """Bytes of all weights as stored (no TP split, no vocab padding), scales included."""
    rank = _Rank(weight_format(model, weights_dtype), None, model.num_kv_heads)
    return sum(_stage_bytes(model, rank, 1, 0, include_mtp).values())


def weight_bytes_by_kind(model: ModelConfig, *, tp: int = 1, pp: int = 1, stage: int | None = None,
                         weights_dtype: str | None = None, include_mtp: bool = False) -> dict[str, int]:
    """Bytes on one GPU of `stage` (default: the heaviest) by kind: embedding, attention, moe_experts, ..., mtp."""
    _check(tp, pp)
    rank = _Rank(weight_format(model, weights_dtype), tp, model.num_kv_heads)
    stages = [_stage_bytes(model, rank, pp, s, include_mtp) for s in range(pp)]
    if stage is None:
        stage = max(range(pp), key=lambda s: sum(stages[s].values()))
    if not 0 <= stage < pp:
        raise InputError(f"stage must be in 0..{pp - 1}, got {stage}")
    return dict(stages[stage])


def weight_bytes_per_stage(model: ModelConfig, *, tp: int = 1, pp: int = 1, weights_dtype: str | None = None,
                           include_mtp: bool = False) -> tuple[int, ...]:
    """Bytes on one TP rank of each PP stage."""
    _check(tp, pp)
    rank = _Rank(weight_format(model, weights_dtype), tp, model.num_kv_heads)
    return tuple(sum(_stage_bytes(model, rank, pp, stage, include_mtp).values()) for stage in range(pp))


def weight_bytes_per_gpu(model: ModelConfig, *, tp: int = 1, pp: int = 1, weights_dtype: str | None = None,
                         include_mtp: bool = False) -> int:
    """Bytes on the most loaded GPU (the heaviest PP stage; TP ranks are alike)."""
    return max(weight_bytes_per_stage(model, tp=tp, pp=pp, weights_dtype=weights_dtype, include_mtp=include_mtp))


def mtp_bytes_per_gpu(model: ModelConfig, *, tp: int = 1, weights_dtype: str | None = None,
                      shared: tuple[str, ...] = ("embedding", "lm_head")) -> int:
    """Bytes of the MTP modules on one TP rank, without the parts the engine shares with the target
    (vLLM's MTP drafter reuses the target's embedding and lm_head)."""
    _check(tp, 1)
    parts = model_parts(model)
    rank, by_kind = _Rank(weight_format(model, weights_dtype), tp, model.num_kv_heads), Counter[str]()
    for j, layer in enumerate(parts.mtp_layers):
        kept = tuple(p for p in layer if p.category not in shared)
        _add_bytes(by_kind, kept, f"model.layers.{len(parts.layers) + j}.", rank, "mtp")
    return by_kind["mtp"]


def _stage_bytes(model: ModelConfig, rank: _Rank, pp: int, stage: int, include_mtp: bool) -> Counter[str]:
    """Bytes by kind on one TP rank of one PP stage."""
    parts: ModelParts = model_parts(model)
    counts = pp_layer_counts(len(parts.layers), pp)
    first = sum(counts[:stage])
    by_kind: Counter[str] = Counter()
    for i in range(first, first + counts[stage]):
        _add_bytes(by_kind, parts.layers[i], f"model.layers.{i}.", rank)
    if stage == 0:
        _add_bytes(by_kind, (parts.embedding, *vision_parts(model)), "model.", rank)
    if stage == pp - 1:
        head = parts.lm_head or (parts.embedding if pp > 1 else None)  # tied + PP: the last stage's own copy
        _add_bytes(by_kind, (parts.final_norm,), "model.", rank)
        _add_bytes(by_kind, (head,) if head else (), "", rank, "lm_head")
        for j, layer in enumerate(parts.mtp_layers if include_mtp else ()):
            _add_bytes(by_kind, layer, f"model.layers.{len(parts.layers) + j}.", rank, "mtp")
    return by_kind
