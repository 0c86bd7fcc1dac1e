"""What a checkpoint tensor is, from its name: its role in the model and how tensor parallelism cuts it.

One classifier for both sources of tensors: the tables ``tools/weight_tensors.py`` records from models that
transformers builds on the ``meta`` device, and the safetensors headers of a checkpoint (``headers``). Names
are transformers' (``model.layers.3.self_attn.q_proj.weight``); checkpoints use the same module paths.

Roles: embedding, lm_head, attention, mixer (Mamba, short-conv and linear-attention layers), mlp, experts,
shared_experts, router, norms, vision, audio, projector, other. A decoder layer is the module under
``layers.N`` / ``h.N`` / ``blocks.N`` outside a tower; its index decides the PP stage.

TP rules, as vLLM's parallel linear layers cut a weight (shapes are (out, in)):
- ``column`` (ColumnParallelLinear, MergedColumnParallelLinear): output rows split; its bias too;
- ``row`` (RowParallelLinear): input columns split; its bias is whole on every rank (``replicated``);
- ``kv``: K/V rows split by KV heads, whole once tp exceeds them (QKVParallelLinear's K/V part);
- ``qkv``: a fused Q/K/V weight: the Q rows split, the K/V rows as ``kv``;
- ``vocab`` (VocabParallelEmbedding, ParallelLMHead): rows padded to 64 and split;
- ``replicated`` (ReplicatedLinear, norms, routers, low-rank down-projections, patch embeddings);
- ``expert-column`` / ``expert-row`` / ``expert-replicated``: a stack of experts split over EP ranks, each
  expert cut like column / row / not at all by the TP ranks within an EP group.
The Mamba and linear-attention mixers follow vLLM's MambaMixer2 / GatedDeltaNet / short-conv layers: input
projections, convolutions, per-head A/D/dt and the gated norm over the inner width split with the heads,
the output projection by rows. These rules are vLLM's common case; a model file that deviates (a
replicated projector, B/C groups copied when n_groups < tp) is off by that tensor's share.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_LAYER = re.compile(r"^(?P<head>.*?)\.(?:layers|h|blocks|layer)\.(?P<index>\d+)\.(?P<tail>.+)$")
VISION_TOWERS = frozenset({"vision_tower", "vision_model", "visual", "vision_encoder", "image_encoder", "vision",
                           "vit", "vision_embed_tokens"})
AUDIO_TOWERS = frozenset({"audio_tower", "audio_model", "audio_encoder", "whisper_encoder"})
PROJECTORS = frozenset({"multi_modal_projector", "mm_projector", "embed_vision", "embed_audio", "audio_projector",
                        "vision_projector", "connector", "merger", "deepstack_merger_list"})
ROW_LEAVES = frozenset({"o_proj", "out_proj", "down_proj", "dense", "dense_4h_to_h", "fc2", "c_proj", "w2", "wo",
                        "proj", "linear_fc2", "output_linear", "o_b_proj", "x_proj", "linear_2",
                        "fc2_latent_proj"})
QKV_LEAVES = frozenset({"qkv_proj", "query_key_value", "c_attn", "Wqkv", "qkv"})
KV_LEAVES = frozenset({"k_proj", "v_proj"})
REPLICATED_LEAVES = frozenset({"q_a_proj", "kv_a_proj_with_mqa", "f_a_proj", "g_a_proj", "o_a_proj", "eh_proj",
                               "patch_embedding", "patch_embed", "position_embedding", "class_embedding", "patch_conv",
                               "pos_embed", "embed_positions", "wpe", "positional_embedding_vlm", "indexer"})
ATTENTION = frozenset({"self_attn", "attention", "attn", "self_attention", "cross_attn", "encoder_attn"})
MIXERS = frozenset({"mixer", "mamba", "linear_attn", "conv", "self_attn", "attention", "attn", "ssm"})
EMBEDDINGS = frozenset({"embed_tokens", "wte", "word_embeddings", "embeddings", "tok_embeddings", "embedding",
                        "embed_tokens_per_layer"})
HEADS = frozenset({"lm_head", "output_layer", "embed_out", "proj_out", "output"})
ROUTERS = frozenset({"gate", "router", "e_score_correction_bias", "shared_expert_gate", "tid2eid"})
MOE_BLOCKS = frozenset({"mlp", "block_sparse_moe", "feed_forward", "mixer", "moe"})
SHARED = ("shared_expert", "shared_mlp")


_INDEX = re.compile(r"\.(\d+)(?=\.|$)")


def pattern_of(name: str, layer: int | None) -> str:
    """A tensor's name with its decoder-layer index as {i} and any other index as {n}."""
    if layer is not None:
        name = re.sub(rf"\.(layers|h|blocks|layer)\.{layer}\.", r".\1.{i}.", name, count=1)
    return _INDEX.sub(".{n}", name)


@dataclass(frozen=True, slots=True)
class Context:
    """What the classifier needs to know of the model besides the name."""

    hidden: int  # the language model's width
    layer_kinds: tuple[str, ...] = ()  # kvplan's kind per decoder layer: "linear" layers hold mixers
    encoder_decoder: bool = False  # Whisper: model.encoder is the audio tower, model.decoder the language model


# The tensors a quantized checkpoint stores beside (or instead of) a module's weight: fp8 block and tensor
# scales, GPTQ/AWQ packing, compressed-tensors, ModelOpt NVFP4, bitsandbytes. They split as their weight does.
QUANT_TENSORS = frozenset({"weight_scale_inv", "weight_scale", "weight_scale_2", "input_scale", "weight_packed",
                           "weight_shape", "weight_zero_point", "weight_global_scale", "input_global_scale", "qweight",
                           "qzeros", "scales", "g_idx", "SCB", "absmax", "quant_map", "nested_absmax",
                           "nested_quant_map", "k_scale", "v_scale"})
_STACK_SUFFIXES = ("_blocks", "_scales", "_scale")  # gpt-oss MXFP4 experts: gate_up_proj_blocks / _scales


def _unsuffixed(leaf: str) -> str:
    for suffix in _STACK_SUFFIXES:
        if leaf.endswith(suffix) and leaf != suffix[1:]:
            return leaf[: -len(suffix)]
    return leaf


@dataclass(frozen=True, slots=True)
class Where:
    layer: int | None  # decoder layer index, None outside the decoder layers
    tower: str | None  # "vision" / "audio" / "projector" for a tensor of a tower or its projector
    parts: tuple[str, ...]  # the module path inside the layer (or the model), without weight/bias
    leaf: str  # the last module name ("q_proj"), "weight"/"bias"/".linear" stripped
    is_bias: bool


def locate(name: str, ctx: Context) -> Where:
    """Where a tensor sits: tower, decoder layer, module path."""
    parts = tuple(name.split("."))
    is_bias = parts[-1] == "bias" or (parts[-1].endswith("_bias") and parts[-1] != "e_score_correction_bias")
    module = parts[:-1] if parts[-1] in ("weight", "bias") or parts[-1] in QUANT_TENSORS else parts
    if len(module) > 2 and module[-1] == "quant_state":  # bitsandbytes: <module>.weight.quant_state.<kind>
        module = module[:-2]
    module = module[:-1] if module and module[-1] == "linear" and len(module) > 1 else module
    module = (*module[:-1], _unsuffixed(module[-1])) if module else module
    tower = _tower(module, ctx)
    found = _LAYER.match(".".join(module)) if tower is None else None
    inner = tuple(found.group("tail").split(".")) if found else module
    leaf = next((p for p in reversed(inner) if not p.isdigit()), inner[-1] if inner else "")
    return Where(int(found.group("index")) if found else None, tower, inner, leaf, is_bias)


def _tower(module: tuple[str, ...], ctx: Context) -> str | None:
    if ctx.encoder_decoder and "encoder" in module:
        return "audio"
    for part in module:
        if part in VISION_TOWERS:
            return "projector" if "merger" in module or "deepstack_merger_list" in module else "vision"
        if part in AUDIO_TOWERS:
            return "audio"
        if part in PROJECTORS:
            return "projector"
    return None


def classify(name: str, shape: tuple[int, ...], ctx: Context) -> tuple[str, str, int | None]:
    """(role, TP rule, decoder layer index) of one tensor; `shape` is (out, in) for matrices."""
    where = locate(name, ctx)
    if where.tower is not None:
        return where.tower, _linear_rule(where, shape, in_layer=False), None
    if where.layer is None:
        role = _top_role(where)
        return role, _top_rule(role, where, shape, ctx), None
    role = _layer_role(where, shape, ctx)
    return role, _layer_rule(role, where, shape, ctx), where.layer


def _top_role(where: Where) -> str:
    if where.leaf in HEADS:
        return "lm_head"
    if _is_norm(where.leaf):  # LFM2's embedding_norm is its final norm
        return "norms"
    if where.leaf in EMBEDDINGS or "embed" in where.leaf or where.leaf in REPLICATED_LEAVES:
        return "embedding"
    return "other"


def _top_rule(role: str, where: Where, shape: tuple[int, ...], ctx: Context) -> str:
    if role in ("embedding", "lm_head"):
        vocab_like = len(shape) >= 1 and where.leaf not in REPLICATED_LEAVES and "position" not in where.leaf
        return "vocab" if vocab_like and (role == "lm_head" or len(shape) == 2) else "replicated"
    return "replicated"


def _is_norm(leaf: str) -> bool:
    return "norm" in leaf or leaf.startswith("ln") or "layrnorm" in leaf


def _layer_role(where: Where, shape: tuple[int, ...], ctx: Context) -> str:
    parts, leaf = where.parts, where.leaf
    if "experts" in parts:
        return "experts"
    if (leaf in ROUTERS and (len(parts) == 1 or parts[-2] in MOE_BLOCKS)) or any(p in ("gate", "router") for p in parts) \
            or leaf in ("e_score_correction_bias", "tid2eid", "shared_expert_gate"):
        return "router"
    if any(p.startswith(SHARED) for p in parts):
        return "shared_experts"
    if _is_norm(leaf):
        return "norms"
    kind = ctx.layer_kinds[where.layer] if where.layer is not None and where.layer < len(ctx.layer_kinds) else "full"
    if kind == "linear" and parts[0] in MIXERS:
        return "mixer"
    if parts[0] in ATTENTION or (parts[0] == "mixer" and kind not in ("none", "linear")) or leaf.startswith("cross_attn"):
        return "attention"
    if len(shape) <= 1 and (not shape or shape[0] <= 1):
        return "other"
    return "mlp"


def _layer_rule(role: str, where: Where, shape: tuple[int, ...], ctx: Context) -> str:
    if role in ("router", "other"):
        return "replicated"
    if role == "experts":
        inner = _linear_rule(where, shape, in_layer=True)
        return f"expert-{inner if inner in ('column', 'row') else 'replicated'}"
    if role == "norms":
        mixer_norm = where.parts[0] in MIXERS and len(shape) == 1 and shape[0] >= ctx.hidden
        return "column" if mixer_norm and (ctx.layer_kinds[where.layer or 0:][:1] or ("full",))[0] == "linear" \
            else "replicated"
    if (role == "mixer" and len(shape) <= 1) or (role == "mixer" and where.leaf in ("conv1d", "conv", "A_log")):
        return "column"
    return _linear_rule(where, shape, in_layer=role in ("attention", "mlp", "shared_experts"))


def _linear_rule(where: Where, shape: tuple[int, ...], *, in_layer: bool) -> str:
    """The rule of a projection by its module name; anything that is not a matrix (or its bias) is replicated."""
    leaf = where.leaf
    if leaf == "sinks":  # one logit per query head
        return "column"
    if _is_norm(leaf) or leaf in REPLICATED_LEAVES or "indexer" in where.parts or leaf.endswith("_weight"):
        return "replicated"  # ..._weight: a bare parameter, not a parallel linear layer (Gemma-3's projector)
    if leaf in ROW_LEAVES or leaf.startswith(("down_proj", "w2")):
        return "replicated" if where.is_bias else "row"
    if in_layer and leaf in QKV_LEAVES and not where.is_bias:
        return "qkv" if where.parts[0] in ATTENTION else "column"
    if in_layer and leaf in KV_LEAVES:
        return "kv"
    if not where.is_bias and len(shape) != 2 and not (len(shape) == 3 and "experts" in where.parts):
        return "replicated"
    return "column"
