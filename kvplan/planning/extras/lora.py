"""LoRA adapter slots: the GPU memory vLLM and SGLang preallocate for adapters, from the model's layers.

Every wrapped linear module gets, per slot, ``A`` (rank × its input) and ``B`` (its output × rank) in the
model dtype, each side split as the base layer splits (the tensor inventory of
``kvplan.planning.weights.parts`` and its TP rules):
- column-parallel (q/k/v, gate/up; MLA q_b, kv_b): A whole, B's rows split (K/V rows by KV heads per rank);
- row-parallel (o, down): A's input split, B whole; replicated (MLA q_a, kv_a): both whole.
vLLM: ``lora/layers/base_linear.py:104-155``, ``column_parallel_linear.py:207-245``,
``row_parallel_linear.py:20-30`` (0.33); ``max_loras`` slots (default 1). SGLang: ``lora/mem_pool.py:424-573``
(0.5.23), ``max_loras_per_batch`` slots (default 8). Packed modules are allocated whole: targeting
``q_proj`` gives ``qkv_proj`` all three slices (vLLM ``lora/utils.py:298-338``). vLLM also wraps
``embed_tokens`` and ``lm_head`` of families whose model declares ``embedding_modules`` (Llama, Mixtral;
0.33 Qwen3): embedding A ``(vocab + extra) × rank``, B ``hidden × rank``, lm_head A ``rank × hidden``, B
``pad(vocab + extra) × rank``, plus ``extra × hidden`` new-token rows in each (vLLM 0.11 and before:
``lora_extra_vocab_size`` 256, padding 256). Not counted: MoE expert slots (vLLM 0.33 wraps the experts),
router gates, punica index buffers (under 1 MiB).
"""

from __future__ import annotations

from kvplan.config.model import ModelConfig
from kvplan.dtypes import element_bits
from kvplan.engines.base import BudgetTerm, LoraRule
from kvplan.errors import InputError
from kvplan.formulas.sharding import pp_layer_counts
from kvplan.planning.weights.counts import shard_shape
from kvplan.planning.weights.part import ModelParts, Part
from kvplan.records import Record
from kvplan.units import cdiv

# Packed runtime modules and the adapter-visible modules they hold (vLLM packed_modules_mapping).
PACKED = {"qkv_proj": ("q_proj", "k_proj", "v_proj"), "gate_up_proj": ("gate_proj", "up_proj"),
          "fused_qkv_a_proj_with_mqa": ("q_a_proj", "kv_a_proj_with_mqa")}
WRAPPED = ("attention", "mlp_dense", "moe_shared_experts")  # part categories whose linears get slots


class LoraSummary(Record):
    """Adapter slots on one GPU and adapters cached in host memory (JSON ``lora``)."""

    slots: int
    rank: int
    target_modules: tuple[str, ...] | None
    bytes_per_gpu: int  # the most loaded GPU (PP: the heaviest stage)
    bytes_per_slot_per_gpu: int
    host_bytes_per_rank: int  # max_cpu_loras adapters at max rank, whole (not split)
    modules: tuple[str, ...]  # wrapped module names of one layer


def model_parts(model: ModelConfig) -> ModelParts:
    """kvplan's formula's parts (weights.parts, imported only where LoRA slots are asked: its tables cost start-up)."""
    from kvplan.planning.weights.parts import model_parts as parts_of

    return parts_of(model)


def module_name(part: Part) -> str:
    return part.name.split(".")[-1]


def targeted(name: str, targets: tuple[str, ...] | None) -> bool:
    """Whether a module gets slots: no filter, named, or a sibling in its packed module is named."""
    if targets is None or name in targets:
        return True
    return any(name in children and (parent in targets or set(children) & set(targets))
               for parent, children in PACKED.items())


def wrapped(layer: tuple[Part, ...], targets: tuple[str, ...] | None) -> tuple[Part, ...]:
    return tuple(p for p in layer if p.is_linear and p.count == 1 and p.category in WRAPPED
                 and targeted(module_name(p), targets))


def slot_elements(part: Part, rank: int, tp: int, num_kv_heads: int) -> int:
    """A (rank × local input) + B (local output × rank) of one slot on one TP rank."""
    out, inp = shard_shape(part, tp, num_kv_heads)
    return rank * inp + out * rank


def embedding_elements(model: ModelConfig, rule: LoraRule, first: bool, last: bool) -> int:
    """embed_tokens (first stage) and lm_head (last stage) slot tensors, whole on every rank; only when the
    family declares them and no target list leaves them out."""
    if not rule.embeddings:
        return 0
    vocab, h, r, extra = int(model.field("vocab_size") or 0), model.hidden_size, rule.rank, rule.extra_vocab
    embed = (vocab + extra) * r + h * r + extra * h
    head = r * h + cdiv(vocab + extra, rule.vocab_padding) * rule.vocab_padding * r + extra * h
    return embed * (first and targeted("embed_tokens", rule.target_modules)) + \
        head * (last and targeted("lm_head", rule.target_modules))


def check_targets(model: ModelConfig, targets: tuple[str, ...] | None) -> None:
    """A target module no layer of the model has (a typo: `banana`) would give 0 slots silently: exit 2."""
    if targets is None:
        return
    names = {module_name(p) for layer in model_parts(model).layers for p in layer
             if p.is_linear and p.category in WRAPPED}
    names |= {child for parent in names for child in PACKED.get(parent, ())} | {"embed_tokens", "lm_head"}
    names |= {parent for parent, children in PACKED.items() if names & set(children)}
    unknown = [t for t in targets if t not in names]
    if unknown:
        raise InputError(f"lora_target_modules {', '.join(unknown)}: {model.model_id} has no such module; its "
                         f"adapter modules are {', '.join(sorted(names))}", arg="lora_target_modules")


def stage_bytes(model: ModelConfig, rule: LoraRule, tp: int, pp: int, stage: int) -> int:
    """LoRA slot bytes on one GPU of a PP stage."""
    check_targets(model, rule.target_modules)
    layers = model_parts(model).layers
    counts = pp_layer_counts(len(layers), pp)
    first = sum(counts[:stage])
    elements = sum(slot_elements(p, rule.rank, tp, model.num_kv_heads)
                   for layer in layers[first:first + counts[stage]] for p in wrapped(layer, rule.target_modules))
    elements += embedding_elements(model, rule, stage == 0, stage == pp - 1)
    return elements * rule.slots * element_bits(model.dtype) // 8


def lora_term(model: ModelConfig, rule: LoraRule, tp: int, pp: int, stage: int) -> BudgetTerm:
    size = stage_bytes(model, rule, tp, pp, stage)
    scope = "every linear module" if rule.target_modules is None else ", ".join(rule.target_modules)
    return BudgetTerm(name=f"LoRA slots ({rule.slots} × rank {rule.rank})", bytes=size, exact=False, kind="lora",
                      source=f"{rule.source}; {scope}{' + embed_tokens/lm_head' if rule.embeddings else ''}; "
                             "expert slots and index buffers not counted")


def summary(model: ModelConfig, rule: LoraRule, tp: int, pp: int) -> LoraSummary:
    per_stage = [stage_bytes(model, rule, tp, pp, k) for k in range(pp)]
    whole = stage_bytes(model, rule, 1, 1, 0) // rule.slots
    layer = model_parts(model).layers[0] if model.num_layers else ()
    return LoraSummary(slots=rule.slots, rank=rule.rank, target_modules=rule.target_modules,
                       bytes_per_gpu=max(per_stage), bytes_per_slot_per_gpu=max(per_stage) // rule.slots,
                       host_bytes_per_rank=rule.host_adapters * whole,
                       modules=tuple(module_name(p) for p in wrapped(layer, rule.target_modules)))
