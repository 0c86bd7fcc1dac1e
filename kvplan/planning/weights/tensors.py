"""From a tensor table to bytes on one GPU: the parts a table lists, then each part's share of one rank.

Pure arithmetic over ``Part``s, whatever made them (a table of ``tables``, a checkpoint's headers, kvplan's
formula):

- TP (``tp``): each part is cut by its rule (``part.TpRule``); the vocabulary is padded to a multiple of 64
  (vLLM DEFAULT_VOCAB_PADDING_SIZE) before its split; K/V rows follow the KV heads per rank
  (``kv_heads_per_rank``: replicated once tp exceeds them), a fused Q/K/V weight splits its Q rows and its
  K/V rows the same way.
- EP (``ep``): a stack of experts is split over the EP ranks (ceil(experts / ep) on the most loaded rank),
  each expert cut by the TP ranks within an EP group (expert_tp // ep, at least 1: vLLM's MoE runs at TP
  dp × tp, so its expert parallelism, ep = dp × tp, runs the experts unsplit; SGLang's --ep-size below tp keeps
  tp / ep). Attention parts are cut by ``attention_tp`` where an engine sets one (SGLang DP attention: tp / dp).
- PP (``pp``): decoder layers as ``pp_layer_counts``; the first stage holds the embeddings and the towers
  (``towers="every"``: every stage, as vLLM's V1 model runner builds them; ``"none"``: text only), the last
  the final norm, lm_head and the MTP modules; with tied embeddings and pp > 1 the last stage holds its own
  copy of the embedding, as vLLM does.
- Format (``formats.WeightFormat``): linear weights take the format's bits and scales (their module's own
  format where it names one: ``WeightFormat.for_module``; an lm_head a per-module format names too) unless a skip
  pattern names their module; every other tensor the model dtype, a part with fixed bits (an fp32-kept tensor, a
  checkpoint header's dtype) those bits.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import replace
from functools import lru_cache
from typing import Literal

from kvplan.config.model import ModelConfig
from kvplan.formulas.sharding import kv_heads_per_rank, pp_layer_counts
from kvplan.memo import IdentityCache
from kvplan.planning.weights.formats import WeightFormat, tensor_bytes
from kvplan.planning.weights.part import Category, ModelParts, Part, TpRule, declared_mtp
from kvplan.planning.weights.tables import Row, Table
from kvplan.records import Record
from kvplan.units import cdiv

VOCAB_PADDING = 64  # vLLM vocab_parallel_embedding.DEFAULT_VOCAB_PADDING_SIZE
Towers = Literal["first", "every", "none"]
ROLE_CATEGORY: dict[str, Category] = {
    "embedding": "embedding", "lm_head": "lm_head", "attention": "attention", "mixer": "mixer", "mlp": "mlp_dense",
    "experts": "moe_experts", "shared_experts": "moe_shared_experts", "router": "router", "norms": "norms",
    "vision": "vision", "audio": "audio", "other": "norms"}
FIRST_STAGE_ROLES = ("embedding", "vision", "audio", "projector")
TOWER_CATEGORIES = ("vision", "audio")


def dtype_bits(dtype: str | None) -> int | None:
    """Bits of a stored dtype ("float32", safetensors' "BF16", "F8_E4M3", "U8", "I32"); None: the model's."""
    if dtype is None:
        return None
    if dtype in ("float32", "F32"):
        return 32
    digits = "".join(c for c in dtype.split("_")[0] if c.isdigit())
    return int(digits) if digits else 8  # BOOL: one byte


_RULES: dict[str, TpRule] = {r: r for r in ("column", "row", "kv", "qkv", "vocab", "replicated", "expert-column",
                                            "expert-row", "expert-replicated")}


def _row_parts(row: Row, category: Category) -> tuple[list[tuple[int, Part]], Part | None]:
    """A row's parts: one per decoder layer it lists (by index), or its one part outside the layers. What the parts
    share (the TP rule, the dtype's bits, the name's pattern) is read once a row, not once a layer."""
    rule, bits = _RULES.get(row.tp, "replicated"), dtype_bits(row.dtype)
    pattern = row.pattern.replace("{n}", "0").removesuffix(".weight")  # a layer index never ends a name in .weight

    def part(name: str) -> Part:
        return Part(name, category, row.shape, rule, row.linear, row.count, bits)

    if not row.layers:
        return [], part(pattern)
    return [(i, part(pattern.replace("{i}", str(i)))) for i in row.layers], None


def _category(row: Row, projector: Category) -> Category:
    return projector if row.role == "projector" else ROLE_CATEGORY.get(row.role, "norms")


def table_parts(table: Table, model: ModelConfig, source: str) -> ModelParts:
    """The parts of a table, decoder layers by index, the rest by the stage that holds it."""
    has_vision = any(r.role == "vision" for r in table.rows)
    projector: Category = "audio" if not has_vision and any(r.role == "audio" for r in table.rows) else "vision"
    layers: list[list[Part]] = [[] for _ in range(table.num_layers)]
    first: list[Part] = []
    last: list[Part] = []
    for row in table.rows:
        in_layers, outside = _row_parts(row, _category(row, projector))
        for i, part in in_layers:
            layers[i].append(part)
        if outside is not None:
            (first if row.role in FIRST_STAGE_ROLES else last).append(outside)
    tied = next((p for p in first if p.tp == "vocab"), None) if table.tied else None
    frozen = tuple(tuple(layer) for layer in layers)
    return ModelParts(first=tuple(first), last=tuple(last), layers=frozen, mtp_layers=mtp_layers(frozen, model),
                      tied=tied, source=source, estimate=not table.exact, notes=table.notes)


MLP_CATEGORIES = ("mlp_dense", "moe_experts", "moe_shared_experts", "router")


def _mlp_layer(layers: tuple[tuple[Part, ...], ...], rule: str, own: int) -> int:
    """The decoder layer whose MLP an MTP module repeats: the last, the first dense one, the last MoE one, its own."""
    moe = [i for i, layer in enumerate(layers) if any(p.category == "moe_experts" for p in layer)]
    if rule == "dense":
        return next((i for i, layer in enumerate(layers) if i not in moe
                     and any(p.category == "mlp_dense" for p in layer)), len(layers) - 1)
    if rule == "moe" and moe:
        return moe[-1]
    return own if rule == "own" else len(layers) - 1


def mtp_layers(layers: tuple[tuple[Part, ...], ...], model: ModelConfig) -> tuple[tuple[Part, ...], ...]:
    """The MTP modules vLLM builds for the model (kvplan.config.mtp), each from the decoder layers it repeats."""
    modules = declared_mtp(model) if layers else None
    if modules is None:
        return ()
    out = []
    for j, attention in enumerate(modules.attention_layers):
        mlp = _mlp_layer(layers, modules.mlp, attention)
        template = (*(p for p in layers[attention] if p.category not in MLP_CATEGORIES),
                    *(p for p in layers[mlp] if p.category in MLP_CATEGORIES))
        out.append(mtp_layer(template, model, len(layers) + j))
    return tuple(out)


def mtp_layer(template: tuple[Part, ...], model: ModelConfig, index: int) -> tuple[Part, ...]:
    """A DeepSeek-style MTP module as the checkpoint stores it: a decoder layer (`template`), enorm/hnorm,
    eh_proj (2h -> h, replicated in vLLM: a plain nn.Linear), and its own embedding and shared head (norm +
    vocab projection). Qwen3.5's fc, pre_fc_norm_hidden/_embedding and final norm are the same tensors."""
    h, vocab = model.hidden_size, int(model.field("vocab_size") or 0)
    prefix = f"model.layers.{index}."
    layer = tuple(replace(p, name=_relayer(p.name, index)) for p in template)
    return (*layer, *(Part(prefix + n, "norms", (h,), "replicated") for n in ("enorm", "hnorm", "shared_head.norm")),
            Part(prefix + "eh_proj", "attention", (h, 2 * h), "replicated", True),
            Part(prefix + "embed_tokens", "embedding", (vocab, h), "vocab"),
            Part(prefix + "shared_head.head", "lm_head", (vocab, h), "vocab"))


def _relayer(name: str, index: int) -> str:
    head, sep, tail = name.partition(".layers.")
    return f"{head}{sep}{index}.{tail.partition('.')[2]}" if sep else name


class Split(Record, kw_only=False):
    """One GPU's view: the weight format, TP and EP sizes (tp None: the whole checkpoint, unpadded)."""

    fmt: WeightFormat
    tp: int | None
    ep: int
    heads: int
    kv_heads: int
    expert_tp: int | None = None  # the TP the MoE layers run at (None: tp; vLLM's data parallel: dp × tp)
    attention_tp: int | None = None  # the TP the attention layers run at (None: tp; SGLang DP attention: tp // dp)


def shard_shape(part: Part, tp: int, num_kv_heads: int, *, heads: int = 0) -> tuple[int, ...]:
    """The shape one TP rank holds (experts: one expert's, cut by `tp`)."""
    return _shard(part.shape, part.tp, tp, num_kv_heads, heads)


def _shard(shape: tuple[int, ...], tp_rule: TpRule, tp: int, num_kv_heads: int, heads: int) -> tuple[int, ...]:
    first, rest = shape[0], shape[1:]
    rule = tp_rule.removeprefix("expert-")
    if rule == "column":
        return (cdiv(first, tp), *rest)
    if rule == "row":
        return (first, cdiv(rest[0], tp), *rest[1:]) if rest else shape
    if rule == "kv":
        return (first // num_kv_heads * kv_heads_per_rank(num_kv_heads, tp), *rest)
    if rule == "qkv" and heads and first % (heads + 2 * num_kv_heads) == 0:
        width = first // (heads + 2 * num_kv_heads)
        return ((cdiv(heads, tp) + 2 * kv_heads_per_rank(num_kv_heads, tp)) * width, *rest)
    if rule == "qkv":
        return (cdiv(first, tp), *rest)
    if rule == "vocab":
        return (cdiv(cdiv(first, VOCAB_PADDING) * VOCAB_PADDING, tp), *rest)
    return shape


def _rank_tp(part: Part, split: Split) -> int | None:
    """The TP size `part` is cut by: experts by the MoE TP over the EP ranks, attention by the attention TP."""
    if split.tp is None:
        return None
    if part.tp.startswith("expert-"):
        return max(1, (split.expert_tp or split.tp) // split.ep)
    return split.attention_tp or split.tp if part.category == "attention" else split.tp


def part_bytes(part: Part, split: Split) -> int:
    """Bytes of `part` on one rank, scales included."""
    uniform = _name_blind(split.fmt)
    if uniform is None:
        fmt, quantized = _stored_as(part, split.fmt)
    else:
        fmt, quantized = split.fmt, uniform and part.is_linear and part.bits is None
    return _shaped_bytes(part.shape, part.tp, part.count, part.bits, quantized, _rank_tp(part, split), split, fmt)


def _stored_as(part: Part, base: WeightFormat) -> tuple[WeightFormat, bool]:
    """The format `part` is stored in under `base` (its module's own, where one names it) and whether it is
    quantized: all that its name decides."""
    named = base.named_format(part.name)
    fmt = named or (base.for_module(part.name) if base.modules else base)
    linear = part.is_linear or (named is not None and part.category == "lm_head" and len(part.shape) == 2)
    return fmt, linear and part.bits is None and fmt.is_quantized(part.name)


def _name_blind(fmt: WeightFormat) -> bool | None:
    """Whether a linear weight is quantized under `fmt` where no module name can change it (no per-module formats,
    and no skip patterns or nothing quantized: WeightFormat.is_quantized), else None: _stored_as without the name,
    for the many parts of a plain checkpoint."""
    if fmt.modules:
        return None
    if not fmt.quantizes:
        return False
    return None if fmt.skip else True


@lru_cache(maxsize=8192)
def _shaped_bytes(shape: tuple[int, ...], rule: TpRule, count: int, bits: int | None, quantized: bool,
                  tp: int | None, split: Split, fmt: WeightFormat) -> int:
    """part_bytes without the name, cut by `tp` (_rank_tp): the decoder layers repeat their shapes, so a layout's
    count is a few dozen of these (fit tries every layout of a model, and counted DeepSeek-V3's 61 layers part by
    part)."""
    if rule.startswith("expert-") and split.tp is not None:
        count = cdiv(count, split.ep)
    shape = shape if tp is None else _shard(shape, rule, tp, split.kv_heads, split.heads)
    if bits is not None:
        elements = count
        for dim in shape:
            elements *= dim
        return cdiv(elements * bits, 8)
    return tensor_bytes(shape, count, fmt, quantized=quantized)


def add_bytes(into: Counter[str], parts: Iterable[Part], split: Split, kind: str | None = None) -> None:
    for part in parts:
        into[kind or part.category] += part_bytes(part, split)


_LAYER_BYTES: dict[tuple[int, Split], tuple[ModelParts, tuple[Counter[str], ...]]] = {}


def layer_bytes(parts: ModelParts, split: Split) -> tuple[Counter[str], ...]:
    """Bytes by kind of each decoder layer on one rank, once per model and split: every PP stage of every layout
    with this split sums them (fit plans many PP sizes of one TP). Keyed by the parts' identity, which the entry
    holds, so the key cannot be reused by another object."""
    hit = _LAYER_BYTES.get((id(parts), split))
    if hit is not None and hit[0] is parts:
        return hit[1]
    kinds = _LAYER_KINDS.get(parts, split.fmt, lambda: _layer_kinds(parts, split.fmt))
    counted: dict[int, Counter[str]] = {}  # one count per kind of layer (shared: callers read them)
    for kind, layer in zip(kinds, parts.layers, strict=True):
        if kind not in counted:
            counted[kind] = Counter()
            add_bytes(counted[kind], layer, split)
    out = [counted[kind] for kind in kinds]
    if len(_LAYER_BYTES) >= 256:
        _LAYER_BYTES.clear()
    _LAYER_BYTES[(id(parts), split)] = (parts, tuple(out))
    return tuple(out)


def _layer_kinds(parts: ModelParts, fmt: WeightFormat) -> tuple[int, ...]:
    """Each decoder layer's kind: layers whose parts differ only in their names, the names stored alike, are cut
    alike by every split (DeepSeek-V3: 3 dense layers and 58 MoE ones are 2 kinds), so each split counts one of
    each kind. Once per model's parts and format: every layout fit plans shares them."""
    kinds: dict[tuple[object, ...], int] = {}
    if _name_blind(fmt) is not None:  # the format is the same for every name: the shapes alone decide
        return tuple(kinds.setdefault(tuple((p.shape, p.tp, p.count, p.bits, p.category, p.is_linear) for p in layer),
                                      len(kinds)) for layer in parts.layers)
    return tuple(kinds.setdefault(tuple((p.shape, p.tp, p.count, p.bits, p.category, p.is_linear, *_stored_as(p, fmt))
                                        for p in layer), len(kinds)) for layer in parts.layers)


_LAYER_KINDS: IdentityCache[tuple[int, ...]] = IdentityCache(maxsize=64)


def stage_bytes(parts: ModelParts, split: Split, pp: int, stage: int, *, include_mtp: bool = False,
                towers: Towers = "first") -> Counter[str]:
    """Bytes by kind on one rank of one PP stage."""
    counts = pp_layer_counts(len(parts.layers), pp)
    start = sum(counts[:stage])
    return _stage_sum(layer_bytes(parts, split)[start:start + counts[stage]], _ends(parts, split, include_mtp),
                      (stage, pp), towers)


def stages_bytes(parts: ModelParts, split: Split, pp: int, *, include_mtp: bool = False,
                 towers: Towers = "first") -> tuple[Counter[str], ...]:
    """stage_bytes of every stage of a PP split, the layers and the parts around them counted once."""
    layers, ends, out, start = layer_bytes(parts, split), _ends(parts, split, include_mtp), [], 0
    for stage, count in enumerate(pp_layer_counts(len(parts.layers), pp)):
        out.append(_stage_sum(layers[start:start + count], ends, (stage, pp), towers))
        start += count
    return tuple(out)


Ends = tuple[Counter[str], Counter[str], Counter[str], Counter[str], Counter[str]]  # towers, first, last, tied, mtp


def _stage_sum(layers: tuple[Counter[str], ...], ends: Ends, place: tuple[int, int], towers: Towers) -> Counter[str]:
    """One stage's layers (each kind's count once, times its number), then the parts of the first and last stage."""
    stage, pp = place
    by_kind: Counter[str] = Counter()
    times = Counter(map(id, layers))  # layers of one kind share one count: add it once, times their number
    for counted in {id(c): c for c in layers}.values():
        by_kind.update({kind: n * times[id(counted)] for kind, n in counted.items()})
    tower, first, last, tied, mtp = ends
    if towers == "every" or (towers == "first" and stage == 0):
        by_kind.update(tower)
    if stage == 0:
        by_kind.update(first)
    if stage == pp - 1:
        by_kind.update(last)
        if pp > 1:  # tied + PP: the last stage's own copy
            by_kind.update(tied)
        by_kind.update(mtp)
    return by_kind


_ENDS: dict[tuple[int, Split, bool], tuple[ModelParts, Ends]] = {}


def _ends(parts: ModelParts, split: Split, include_mtp: bool) -> Ends:
    """The parts outside the decoder layers by kind, once per model's parts and split (keyed as layer_bytes):
    every stage of every PP size of the split adds them. Shared: callers add them, never change them."""
    hit = _ENDS.get((id(parts), split, include_mtp))
    if hit is not None and hit[0] is parts:
        return hit[1]
    tower, first, last, tied, mtp = Counter[str](), Counter[str](), Counter[str](), Counter[str](), Counter[str]()
    add_bytes(tower, [p for p in parts.first if p.category in TOWER_CATEGORIES], split)
    add_bytes(first, (p for p in parts.first if p.category not in TOWER_CATEGORIES), split)
    add_bytes(last, parts.last, split)
    if parts.tied is not None:
        add_bytes(tied, (parts.tied,), split, "lm_head")
    for layer in parts.mtp_layers if include_mtp else ():
        add_bytes(mtp, layer, split, "mtp")
    if len(_ENDS) >= 256:
        _ENDS.clear()
    _ENDS[(id(parts), split, include_mtp)] = (parts, (tower, first, last, tied, mtp))
    return tower, first, last, tied, mtp
