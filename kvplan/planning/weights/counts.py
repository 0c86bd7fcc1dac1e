"""Parameter counts and weight bytes of a model, whole and on one GPU.

- ``param_count(model)``: counts by kind (embedding, lm_head, attention, mixer, dense MLP, experts, shared
  experts, router, norms, vision and audio towers), per decoder layer, and the MTP/nextn modules apart.
- ``weight_bytes(model, weights_dtype)``: the checkpoint's bytes (MTP modules excluded unless asked:
  engines load them only for speculative decoding).
- ``weight_bytes_per_stage`` / ``weight_bytes_per_gpu`` / ``weight_bytes_by_kind`` (``tp=``, ``pp=``, ``ep=``):
  what one GPU of each PP stage holds (``tensors`` has the TP/PP/EP rules), cached: they depend on the model,
  the parallel sizes and the format, never on the GPU.

The tensors come from, in this order: the table recorded for a config with this shape signature
(``tables``: transformers' meta-device build of every bundled config and class default), the checkpoint's
own safetensors headers when the config was read from a folder or the HF cache that has them
(``checkpoint``), its model_type's table at the config's sizes (``derived``), else kvplan's formula from the
config (``parts``, a Llama-shaped estimate, said in the notes).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import fields, replace
from functools import lru_cache

from kvplan.config.model import ModelConfig
from kvplan.errors import ConfigError, InputError
from kvplan.memo import IdentityCache
from kvplan.planning.weights.formats import content_key, format_estimate, weight_format
from kvplan.planning.weights.part import ModelParts, Part
from kvplan.planning.weights.tables import table_for
from kvplan.planning.weights.tensors import Split, Towers, add_bytes, stage_bytes, stages_bytes, table_parts
from kvplan.planning.weights.tensors import shard_shape as shard_shape
from kvplan.records import Record, materialize

NO_WEIGHTS_HINT = "pass --kv-budget, or a folder with the checkpoint's safetensors index"


class LayerParams(Record):  # records: only param_count builds them, so a capacity run never pays for their methods
    attention: int = 0  # projections, biases, sinks
    mlp_dense: int = 0
    moe_experts: int = 0
    moe_shared_experts: int = 0
    router: int = 0  # gate weight, its biases, Qwen's shared-expert gate
    norms: int = 0  # layer norms, q/k norms, MLA latent norms
    mixer: int = 0  # Mamba, short-convolution and linear-attention layers

    @property
    def total(self) -> int:
        return sum(getattr(self, f.name) for f in fields(self))


class ParamCount(Record):
    embedding: int
    lm_head: int  # 0 when tied to the embedding
    attention: int
    mlp_dense: int
    moe_experts: int
    moe_shared_experts: int
    router: int
    norms: int  # final norm included
    vision: int  # vision tower + projector of a multimodal checkpoint, in total
    mtp: int  # next-token-prediction modules (DeepSeek/GLM), not in total
    total: int
    layers: tuple[LayerParams, ...]  # decoder layers of the language model
    notes: tuple[str, ...] = ()
    mixer: int = 0  # Mamba / short-conv / linear-attention mixers
    audio: int = 0  # audio tower (+ its projector): Whisper's encoder, Voxtral
    source: str = ""  # where the tensors come from
    estimate: bool = False  # kvplan's formula, not the model's tensors

    @property
    def total_with_mtp(self) -> int:
        return self.total + self.mtp


def weight_parts(model: ModelConfig) -> ModelParts:
    """The model's tensors: its table, else its checkpoint's headers, else kvplan's formula."""
    return _weight_parts(model, content_key(model))


@lru_cache(maxsize=128)
def _weight_parts(model: ModelConfig, _key: str) -> ModelParts:
    table = table_for(model.raw)
    if table is not None:
        return table_parts(table, model, f"tensor table of {table.name} ({table.model_class} on the meta device)")
    return _untabled_parts(model)


def _untabled_parts(model: ModelConfig) -> ModelParts:
    """A config no recorded table matches: its checkpoint's headers, its type's derived table, else the formula.
    Imported here: a bundled model (most runs) never reads safetensors headers or the formula's tables."""
    from kvplan.planning.weights.checkpoint import checkpoint_parts
    from kvplan.planning.weights.derived import derived_table
    from kvplan.planning.weights.parts import model_parts

    unread: tuple[str, ...] = ()
    try:
        found = checkpoint_parts(model)
    except ConfigError as exc:  # the hub or a file failed: the formula, saying why
        found, unread = None, (f"the checkpoint's safetensors headers could not be read: {exc}",)
    if found is not None:
        return found
    derived = derived_table(model.raw)
    if derived is not None:
        parts = table_parts(derived, model, f"tensor table of {derived.name} ({derived.model_class})")
        return replace(parts, notes=(*parts.notes, *unread))
    try:
        parts = model_parts(model)
    except InputError as exc:
        raise InputError(f"{exc}; {NO_WEIGHTS_HINT} (no tensor table matches this config)",
                         arg=exc.arg_names) from None
    return replace(parts, notes=(*parts.notes, *unread)) if unread else parts


def _layer_params(parts: tuple[Part, ...]) -> LayerParams:
    sums = Counter[str]()
    for part in parts:
        sums[part.category] += part.params
    materialize(LayerParams)  # its fields before its first instance
    return LayerParams(**{f.name: sums[f.name] for f in fields(LayerParams)})


def _vision_note(model: ModelConfig) -> str | None:
    from kvplan.planning.weights.vision import vision_note  # only for kvplan's formula (weights.parts imports it)

    return vision_note(model)


def param_count(model: ModelConfig) -> ParamCount:
    """Parameters by kind and by layer."""
    parts = weight_parts(model)
    layers = tuple(_layer_params(p) for p in parts.layers)
    kinds = Counter[str]()
    for part in (*(p for layer in parts.layers for p in layer), *parts.first, *parts.last):
        kinds[part.category] += part.params
    note = _vision_note(model) if parts.estimate else None
    notes = (*parts.notes, *((note,) if note else ()),
             *(("weights from kvplan's formula for this family (no tensor table matches the config)",)
               if parts.estimate else ()))
    return ParamCount(embedding=kinds["embedding"], lm_head=kinds["lm_head"], attention=kinds["attention"],
                      mlp_dense=kinds["mlp_dense"], moe_experts=kinds["moe_experts"],
                      moe_shared_experts=kinds["moe_shared_experts"], router=kinds["router"], norms=kinds["norms"],
                      vision=kinds["vision"], audio=kinds["audio"], mixer=kinds["mixer"],
                      mtp=sum(p.params for layer in parts.mtp_layers for p in layer), total=sum(kinds.values()),
                      layers=layers, notes=notes, source=parts.source, estimate=parts.estimate)


def weights_source(model: ModelConfig, weights_dtype: str | None = None) -> tuple[bool, str]:
    """_weights_source, once per model and weights dtype (fit's budgets ask it for every stage of every setup)."""
    return _SOURCES.get(model, weights_dtype, lambda: _weights_source(model, weights_dtype))


_SOURCES: IdentityCache[tuple[bool, str]] = IdentityCache(maxsize=64)


def _weights_source(model: ModelConfig, weights_dtype: str | None) -> tuple[bool, str]:
    """(exact, where the weights come from) for the budget's weights term: an estimate from kvplan's formula, when
    the format names modules no tensor carries (their weights counted in the model dtype), or when the format is
    counted approximately (``formats.format_estimate``: GPTQ, bitsandbytes)."""
    parts = weight_parts(model)
    how = "the model's tensors" if not parts.estimate else "kvplan's formula (an estimate)"
    unmatched = unmatched_modules(model, weights_dtype)
    gap = (f"; estimate: {len(unmatched)} per-module format(s) name no tensor kvplan knows (e.g. {unmatched[0]}), "
           "those weights counted in the model dtype") if unmatched else ""
    unsure = format_estimate(weight_format(model, weights_dtype))
    gap += f"; estimate: {unsure}" if unsure else ""
    return not parts.estimate and not unmatched and unsure is None, \
        f"{how}: {parts.source} × the weight format, this GPU's share{gap}"


def unmatched_modules(model: ModelConfig, weights_dtype: str | None = None) -> tuple[str, ...]:
    """The modules a per-module format names (quantized_layers keys) that none of the model's tensors is, or sits
    under, by any of the names vLLM tries for it (a skipped module and a glob pattern aside)."""
    return _unmatched(model, content_key(model), weights_dtype)


@lru_cache(maxsize=128)
def _unmatched(model: ModelConfig, _key: str, weights_dtype: str | None) -> tuple[str, ...]:
    fmt = weight_format(model, weights_dtype)
    if not fmt.modules:
        return ()
    parts = weight_parts(model)
    names = {p.name for p in (*parts.first, *parts.last)}
    names |= {p.name for layer in (*parts.layers, *parts.mtp_layers) for p in layer}
    prefixes = {".".join(n.split(".")[:end]) for n in names for end in range(1, n.count(".") + 2)}
    keys: dict[int, list[str]] = {}  # a key's aliases share its format object
    for pattern, sub in fmt.modules:
        if not any(c in pattern for c in "*?[") and fmt.named_format(pattern) is not None:
            keys.setdefault(id(sub), []).append(pattern)
    return tuple(aliases[0] for aliases in keys.values() if not prefixes.intersection(aliases))


def _check(**sizes: int) -> None:
    for name, value in sizes.items():
        if not isinstance(value, int) or value < 1:
            raise InputError(f"{name} must be a positive integer, got {value!r}")


Cuts = tuple[int, int | None, int | None]  # ep, expert_tp, attention_tp (None: tp)


def _split(model: ModelConfig, weights_dtype: str | None, tp: int | None, cuts: Cuts) -> Split:
    ep, expert_tp, attention_tp = cuts
    return Split(weight_format(model, weights_dtype), tp, ep, model.num_attention_heads, model.num_kv_heads,
                 expert_tp, attention_tp)


def weight_bytes(model: ModelConfig, weights_dtype: str | None = None, *, include_mtp: bool = False) -> int:
    """Bytes of all weights as stored (no TP split, no vocab padding), scales included."""
    return sum(stage_bytes(weight_parts(model), _split(model, weights_dtype, None, (1, None, None)), 1, 0,
                           include_mtp=include_mtp).values())


@lru_cache(maxsize=1024)
def _stages(model: ModelConfig, _key: str, tp: int, pp: int, cuts: Cuts, weights_dtype: str | None,
            include_mtp: bool, towers: Towers) -> tuple[dict[str, int], ...]:
    parts, split = weight_parts(model), _split(model, weights_dtype, tp, cuts)
    return tuple(dict(s) for s in stages_bytes(parts, split, pp, include_mtp=include_mtp, towers=towers))


def _stage_kinds(model: ModelConfig, tp: int, pp: int, cuts: Cuts, weights_dtype: str | None, include_mtp: bool,
                 towers: Towers) -> tuple[dict[str, int], ...]:
    _check(tp=tp, pp=pp, ep=cuts[0], expert_tp=cuts[1] or tp, attention_tp=cuts[2] or tp)
    return _stages(model, content_key(model), tp, pp, cuts, weights_dtype, include_mtp, towers)


def weight_bytes_by_kind(model: ModelConfig, *, tp: int = 1, pp: int = 1, stage: int | None = None,
                         weights_dtype: str | None = None, include_mtp: bool = False, ep: int = 1,
                         towers: Towers = "first") -> dict[str, int]:
    """Bytes on one GPU of `stage` (default: the heaviest) by kind: embedding, attention, moe_experts, ..., mtp."""
    stages = _stage_kinds(model, tp, pp, (ep, None, None), weights_dtype, include_mtp, towers)
    if stage is None:
        stage = max(range(pp), key=lambda s: sum(stages[s].values()))
    if not 0 <= stage < pp:
        raise InputError(f"stage must be in 0..{pp - 1}, got {stage}")
    return dict(stages[stage])


def weight_bytes_per_stage(model: ModelConfig, *, tp: int = 1, pp: int = 1, weights_dtype: str | None = None,
                           include_mtp: bool = False, ep: int = 1, towers: Towers = "first",
                           expert_tp: int | None = None, attention_tp: int | None = None) -> tuple[int, ...]:
    """Bytes on one TP rank of each PP stage (experts at `expert_tp`, attention at `attention_tp`; None: `tp`)."""
    cuts = (ep, expert_tp, attention_tp)
    return tuple(sum(s.values()) for s in _stage_kinds(model, tp, pp, cuts, weights_dtype, include_mtp, towers))


def weight_bytes_per_gpu(model: ModelConfig, *, tp: int = 1, pp: int = 1, weights_dtype: str | None = None,
                         include_mtp: bool = False, ep: int = 1, towers: Towers = "first") -> int:
    """Bytes on the most loaded GPU (the heaviest PP stage; TP ranks are alike)."""
    return max(weight_bytes_per_stage(model, tp=tp, pp=pp, weights_dtype=weights_dtype, include_mtp=include_mtp,
                                      ep=ep, towers=towers))


def mtp_bytes_per_gpu(model: ModelConfig, *, tp: int = 1, weights_dtype: str | None = None,
                      shared: tuple[str, ...] = ("embedding", "lm_head")) -> int:
    """Bytes of the MTP modules on one TP rank, without the parts the engine shares with the target
    (vLLM's MTP drafter reuses the target's embedding and lm_head)."""
    _check(tp=tp)
    by_kind, split = Counter[str](), _split(model, weights_dtype, tp, (1, None, None))
    for layer in weight_parts(model).mtp_layers:
        add_bytes(by_kind, (p for p in layer if p.category not in shared), split, "mtp")
    return by_kind["mtp"]
