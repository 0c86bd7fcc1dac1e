"""The tensors of a checkpoint, derived from its config: one ``Part`` per weight (or stack of expert weights).

Every count, byte size and TP/PP split in kvplan.planning.weights is a view over this inventory. Shapes are
(out, in) for matrices whatever the checkpoint's storage order, so quantization scales (grouped
along the input dimension) and tensor-parallel splits read the same way for every family.

Families differ only through data: the config's field aliases and class defaults
(``kvplan.config.aliases.WEIGHT_FIELDS``, ``kvplan.config.defaults``, read through ``ModelConfig.field``)
and TRAITS here (layout facts of a model_type). A trait is
a literal, or ``Key(name)``: the boolean config key that decides it. Not here: MLA/KV dims, which come
from ModelConfig, and bytes (``formats``).
"""

from __future__ import annotations

import json
from dataclasses import replace
from functools import lru_cache
from typing import Any

from kvplan.config.aliases import WEIGHT_FIELDS
from kvplan.config.defaults import omitted_default
from kvplan.config.model import ModelConfig
from kvplan.errors import InputError
from kvplan.planning.weights.part import Category, ModelParts, Part, declared_mtp
from kvplan.planning.weights.vision import vision_parts

__all__ = ["TRAITS", "TRAIT_KEYS", "Key", "ModelParts", "Part", "model_parts"]


class Key:
    """A trait that a boolean config key decides (absent: its class default, else False). A plain class: a
    dataclass's methods are compiled when the module is imported."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> bool:
        return type(other) is Key and other.name == self.name

    def __hash__(self) -> int:
        return hash((Key, self.name))

    def __repr__(self) -> str:
        return f"Key(name={self.name!r})"


_BASE_TRAITS: dict[str, Any] = {
    "mlp": "gated",  # gate/up/down; "plain": up/down (Falcon)
    "norm_params": 1,  # per hidden unit: 1 = RMSNorm weight, 2 = LayerNorm weight + bias
    "layer_norms": 2,  # hidden-size norms per decoder layer
    "qk_norm": False,  # per-head RMSNorm on q and k (head_dim weights each)
    "qkv_bias": Key("attention_bias"), "o_bias": Key("attention_bias"), "mlp_bias": Key("mlp_bias"),  # Llama
    "attn_sinks": False,  # one learned logit per query head (gpt-oss)
    "q_gate": False,  # q_proj also emits an output gate (Qwen3-Next): rows × 2
    "router_bias": False, "expert_bias": False,  # gpt-oss
    "router_score_bias": False,  # e_score_correction_bias, one per expert (noaux_tc routing)
    "linear_attention": None,  # "gated_deltanet" where layer_kinds has "linear" layers
    "ffn_mult": None,  # intermediate = ffn_mult × hidden when the config names none (Falcon: 4)
    "tie_default": True,  # PretrainedConfig's tie_word_embeddings default
}
_FALCON = {"mlp": "plain", "norm_params": 2, "qkv_bias": Key("bias"), "o_bias": Key("bias"), "mlp_bias": Key("bias"),
           "ffn_mult": 4}
_QWEN3_NEXT = {"qk_norm": True, "q_gate": True, "linear_attention": "gated_deltanet"}
TRAITS: dict[str, dict[str, Any]] = {
    "qwen2": {"qkv_bias": True, "o_bias": False},  # Qwen2Attention: biases on q/k/v only
    "qwen3": {"qk_norm": True}, "qwen3_moe": {"qk_norm": True},
    "qwen3_next": _QWEN3_NEXT,
    # Qwen3.5: Qwen3-Next's layers (its gated DeltaNet splits in_proj_qkvz/ba into qkv, z, b and a: the same
    # tensors' worth); the text model of the dense and the MoE releases.
    "qwen3_5_text": _QWEN3_NEXT, "qwen3_5_moe_text": _QWEN3_NEXT,
    "gemma2": {"layer_norms": 4},  # input, post-attention, pre- and post-feedforward
    "gemma3": {"layer_norms": 4, "qk_norm": True}, "gemma3_text": {"layer_norms": 4, "qk_norm": True},
    "glm4_moe": {"qk_norm": Key("use_qk_norm"), "o_bias": False, "router_score_bias": True},
    "deepseek_v3": {"router_score_bias": True}, "kimi_k2": {"router_score_bias": True},
    "gpt_oss": {"attn_sinks": True, "router_bias": True, "expert_bias": True},
    "RefinedWebModel": {**_FALCON, "layer_norms": 1},  # falcon-7b: one LayerNorm before parallel attn/MLP
    "RefinedWeb": {**_FALCON, "layer_norms": 2},  # falcon-40b: ln_attn and ln_mlp
    "falcon": {**_FALCON, "layer_norms": 1},  # in-library falcon-7b form; the 40b form has 2 (not bundled)
    "chatglm": {"qkv_bias": Key("add_qkv_bias"), "o_bias": Key("add_bias_linear"), "mlp_bias": Key("add_bias_linear")},
}
# The config keys the traits read (their class defaults are in kvplan.config.defaults).
TRAIT_KEYS = tuple(sorted({v.name for t in (_BASE_TRAITS, *TRAITS.values()) for v in t.values() if isinstance(v, Key)}))


class _Fields:
    """Config lookups through ModelConfig.field (aliases, class defaults) and TRAITS."""

    def __init__(self, model: ModelConfig) -> None:
        self.model, self.raw = model, model.raw
        self.traits = {**_BASE_TRAITS, **TRAITS.get(str(model.model_type), {})}

    def get(self, name: str, default: Any = None) -> Any:
        return self.model.field(name, default)

    def trait(self, name: str) -> Any:
        value = self.traits[name]
        if not isinstance(value, Key):
            return value
        found = omitted_default(self.raw, (value.name,))  # absent: the class default (gpt-oss: attention_bias)
        return bool(self.raw.get(value.name) if found is None else found.value)

    def int_field(self, name: str, default: int | None = None) -> int:
        value = self.get(name, default)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            keys = " / ".join(WEIGHT_FIELDS[name])
            found = "is missing" if value is None else f"is {value!r}, not a count"
            raise InputError(f"{self.model.source}: config field {keys} {found}; kvplan needs it to count the weights")
        return value


def model_parts(model: ModelConfig) -> ModelParts:
    """The weight inventory of a model derived from its config (cached per config content)."""
    return _cached_parts(model, json.dumps(model.raw, sort_keys=True, default=str))


def _named(parts: tuple[Part, ...], prefix: str) -> tuple[Part, ...]:
    return tuple(replace(p, name=prefix + p.name) for p in parts)


@lru_cache(maxsize=64)
def _cached_parts(model: ModelConfig, _raw_key: str) -> ModelParts:
    f = _Fields(model)
    hidden, vocab = model.hidden_size, f.int_field("vocab_size")
    tied = bool(f.get("tie_word_embeddings", f.trait("tie_default")))
    embedding = Part("model.embed_tokens", "embedding", (vocab, hidden), "vocab")
    lm_head = () if tied else (Part("lm_head", "lm_head", (vocab, hidden), "vocab"),)
    layers = tuple(_named(_layer(f, i, model.layer_kinds[i]), f"model.layers.{i}.") for i in range(model.num_layers))
    modules = declared_mtp(model)
    mtp = tuple(_named(_mtp_layer(f, model.num_layers + i), f"model.layers.{model.num_layers + i}.")
                for i in range(modules.layers if modules else 0))
    return ModelParts(first=(embedding, *_named(vision_parts(model), "model.")),
                      last=(*_named((_norm(f, "norm"),), "model."), *lm_head), layers=layers, mtp_layers=mtp,
                      tied=embedding if tied else None, source="kvplan's formula from the config", estimate=True)


def _norm(f: _Fields, name: str) -> Part:
    h = f.model.hidden_size
    return Part(name, "norms", (h,) if f.trait("norm_params") == 1 else (2, h), "replicated")


def _layer(f: _Fields, index: int, kind: str) -> tuple[Part, ...]:
    blocks = f.raw.get("block_configs")
    if isinstance(blocks, list) and index < len(blocks):
        return _nas_layer(f, blocks[index])
    norms = tuple(_norm(f, f"norm_{j}") for j in range(f.trait("layer_norms")))
    return _mixer(f, kind) + _mlp(f, index) + norms


def _nas_layer(f: _Fields, block: dict[str, Any]) -> tuple[Part, ...]:
    """Nemotron-NAS (DeciLM) block_configs, as vLLM's nemotron_nas.py builds them: attention with
    heads // n_heads_in_group KV heads, or none (no_op); a Llama MLP of ffn_mult -> int(2·mult·h/3) rounded up
    to 256, or none; one RMSNorm before each block that is there."""
    attention, ffn = block.get("attention") or {}, block.get("ffn") or {}
    if attention.get("replace_with_linear") or ffn.get("replace_with_linear"):
        raise InputError(f"{f.model.source}: a Nemotron-NAS block replaced with a linear layer; kvplan does not "
                         "know its weights")
    h, parts = f.model.hidden_size, []
    if not attention.get("no_op"):
        m = f.model
        kv_rows = m.num_attention_heads // int(attention["n_heads_in_group"]) * m.head_dim
        q_rows = m.num_attention_heads * m.head_dim
        parts += [Part("self_attn.q_proj", "attention", (q_rows, h), "column", True),
                  Part("self_attn.k_proj", "attention", (kv_rows, h), "kv", True),
                  Part("self_attn.v_proj", "attention", (kv_rows, h), "kv", True),
                  Part("self_attn.o_proj", "attention", (h, q_rows), "row", True), _norm(f, "input_layernorm")]
    if not ffn.get("no_op"):
        inter = ffn.get("intermediate_size") or -(-int(2 * float(ffn["ffn_mult"]) * h / 3) // 256) * 256
        parts += [*_dense(f, "mlp", "mlp_dense", int(inter), bias=False), _norm(f, "post_attention_layernorm")]
    return tuple(parts)


def _mixer(f: _Fields, kind: str) -> tuple[Part, ...]:
    if kind == "none":
        return ()
    if kind == "linear":
        if f.trait("linear_attention") != "gated_deltanet":
            raise InputError(f"{f.model.source}: kvplan does not know the weights of the linear-attention "
                             f"layers of model_type {f.model.model_type!r}")
        return _gated_deltanet(f)
    return _mla(f) if f.model.is_mla else _attention(f)


def _attention(f: _Fields) -> tuple[Part, ...]:
    m, h = f.model, f.model.hidden_size
    q_rows = m.num_attention_heads * m.head_dim * (2 if f.trait("q_gate") else 1)
    k_rows, v_rows, o_cols = m.num_kv_heads * m.head_dim, m.num_kv_heads * m.v_head_dim, m.num_attention_heads * m.v_head_dim
    parts = [Part("self_attn.q_proj", "attention", (q_rows, h), "column", True),
             Part("self_attn.k_proj", "attention", (k_rows, h), "kv", True),
             Part("self_attn.v_proj", "attention", (v_rows, h), "kv", True),
             Part("self_attn.o_proj", "attention", (h, o_cols), "row", True)]
    if f.trait("qkv_bias"):
        parts += [Part("self_attn.q_proj.bias", "attention", (q_rows,), "column"),
                  Part("self_attn.k_proj.bias", "attention", (k_rows,), "kv"),
                  Part("self_attn.v_proj.bias", "attention", (v_rows,), "kv")]
    if f.trait("o_bias"):
        parts.append(Part("self_attn.o_proj.bias", "attention", (h,), "replicated"))
    if f.trait("qk_norm"):
        parts += [Part(f"self_attn.{x}_norm", "norms", (m.head_dim,), "replicated") for x in "qk"]
    if f.trait("attn_sinks"):
        parts.append(Part("self_attn.sinks", "attention", (m.num_attention_heads,), "column"))
    return tuple(parts)


def _mla(f: _Fields) -> tuple[Part, ...]:
    """DeepSeek MLA. vLLM (and SGLang) replicate the down-projections q_a/kv_a and their norms on
    every TP rank (ReplicatedLinear / disable_tp); q_b, kv_b and o are split by heads."""
    m, h = f.model, f.model.hidden_size
    rope, nope, v = m.qk_rope_head_dim or 0, m.qk_nope_head_dim or 0, m.mla_v_head_dim or 0
    kv_lora, heads = m.kv_lora_rank or 0, m.num_attention_heads
    q_lora = f.get("q_lora_rank")
    if q_lora:
        q: tuple[Part, ...] = (Part("self_attn.q_a_proj", "attention", (q_lora, h), "replicated", True),
                               Part("self_attn.q_a_layernorm", "norms", (q_lora,), "replicated"),
                               Part("self_attn.q_b_proj", "attention", (heads * (nope + rope), q_lora), "column", True))
    else:
        q = (Part("self_attn.q_proj", "attention", (heads * (nope + rope), h), "column", True),)
    return (*q, Part("self_attn.kv_a_proj_with_mqa", "attention", (kv_lora + rope, h), "replicated", True),
            Part("self_attn.kv_a_layernorm", "norms", (kv_lora,), "replicated"),
            Part("self_attn.kv_b_proj", "attention", (heads * (nope + v), kv_lora), "column", True),
            Part("self_attn.o_proj", "attention", (h, heads * v), "row", True))


def _gated_deltanet(f: _Fields) -> tuple[Part, ...]:
    """Qwen3-Next linear attention: fused in-projections, a depthwise conv, per-head decay, gated norm."""
    h = f.model.hidden_size
    nk, nv = f.int_field("linear_num_key_heads"), f.int_field("linear_num_value_heads")
    key_dim = nk * f.int_field("linear_key_head_dim")
    dv = f.int_field("linear_value_head_dim")
    value_dim = nv * dv
    return (Part("linear_attn.in_proj_qkvz", "attention", (2 * key_dim + 2 * value_dim, h), "column", True),
            Part("linear_attn.in_proj_ba", "attention", (2 * nv, h), "column", True),
            Part("linear_attn.conv1d", "attention", (2 * key_dim + value_dim, f.int_field("linear_conv_kernel_dim")),
                 "column"),
            Part("linear_attn.dt_bias", "attention", (nv,), "column"),
            Part("linear_attn.A_log", "attention", (nv,), "column"),
            Part("linear_attn.norm", "norms", (dv,), "replicated"),
            Part("linear_attn.out_proj", "attention", (h, value_dim), "row", True))


def is_moe_layer(f: _Fields, index: int) -> bool:
    """DeepSeek's first_k_dense_replace/moe_layer_freq and Qwen's mlp_only_layers/decoder_sparse_step."""
    if not f.get("num_experts"):
        return False
    return (index >= f.int_field("first_k_dense_replace", 0)
            and index % f.int_field("moe_layer_freq", 1) == 0
            and (index + 1) % f.int_field("decoder_sparse_step", 1) == 0
            and index not in (f.get("mlp_only_layers") or ()))


def _dense(f: _Fields, prefix: str, category: Category, inter: int, *, bias: bool) -> tuple[Part, ...]:
    h = f.model.hidden_size
    ins = ("gate_proj", "up_proj") if f.trait("mlp") == "gated" else ("up_proj",)
    parts = [Part(f"{prefix}.{name}", category, (inter, h), "column", True) for name in ins]
    parts.append(Part(f"{prefix}.down_proj", category, (h, inter), "row", True))
    if bias:
        parts += [Part(f"{prefix}.{name}.bias", category, (inter,), "column") for name in ins]
        parts.append(Part(f"{prefix}.down_proj.bias", category, (h,), "replicated"))
    return tuple(parts)


def _mlp(f: _Fields, index: int) -> tuple[Part, ...]:
    h, mult = f.model.hidden_size, f.trait("ffn_mult")
    if not is_moe_layer(f, index):
        inter = f.int_field("intermediate_size", mult * h if mult else None)
        return _dense(f, "mlp", "mlp_dense", inter, bias=bool(f.trait("mlp_bias")))
    experts = f.int_field("num_experts")
    inter = f.int_field("moe_intermediate_size", f.get("intermediate_size"))
    parts = [Part("mlp.gate", "router", (experts, h), "replicated"),
             Part("mlp.experts.gate_up_proj", "moe_experts", (2 * inter, h), "column", True, experts),
             Part("mlp.experts.down_proj", "moe_experts", (h, inter), "row", True, experts)]
    if f.trait("router_bias"):
        parts.append(Part("mlp.gate.bias", "router", (experts,), "replicated"))
    if f.trait("router_score_bias"):
        parts.append(Part("mlp.gate.e_score_correction_bias", "router", (experts,), "replicated"))
    if f.trait("expert_bias"):
        parts += [Part("mlp.experts.gate_up_proj_bias", "moe_experts", (2 * inter,), "column", count=experts),
                  Part("mlp.experts.down_proj_bias", "moe_experts", (h,), "replicated", count=experts)]
    shared = f.int_field("num_shared_experts", 0) * inter or f.int_field("shared_expert_intermediate_size", 0)
    if shared:
        parts += _dense(f, "mlp.shared_experts", "moe_shared_experts", shared, bias=False)
    if f.get("shared_expert_intermediate_size"):
        parts.append(Part("mlp.shared_expert_gate", "router", (1, h), "replicated"))
    return tuple(parts)


def _mtp_layer(f: _Fields, index: int) -> tuple[Part, ...]:
    """A DeepSeek-style MTP module as the checkpoint stores it: a full decoder layer, enorm/hnorm,
    eh_proj (2h -> h, replicated in vLLM: a plain nn.Linear), and its own copy of the embedding and
    shared head (norm + vocab projection)."""
    vocab, h = f.int_field("vocab_size"), f.model.hidden_size
    return (
        *_layer(f, index, "full"), _norm(f, "enorm"), _norm(f, "hnorm"), _norm(f, "shared_head.norm"),
        Part("eh_proj", "attention", (h, 2 * h), "replicated", True),
        Part("embed_tokens", "embedding", (vocab, h), "vocab"),
        Part("shared_head.head", "lm_head", (vocab, h), "vocab"))
