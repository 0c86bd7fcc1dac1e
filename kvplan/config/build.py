"""From validated canonical fields to what ModelConfig holds: implied fields, refusals, the model-level
KV heads, and the per-layer specs.

``hf.normalize`` chains these; each is a small rule with the family it serves named.
"""

from __future__ import annotations

from typing import Any

from kvplan.config.aliases import (
    KNOWN_ARCHITECTURES,
    KNOWN_MODEL_TYPES,
    UNKNOWN_NEEDS,
    UNMODELLED_ARCHITECTURES,
    UNMODELLED_FIELDS,
    served_from,
)
from kvplan.config.compressed import DSV4_TYPES, deepseek_v4_specs, is_deepseek_v4
from kvplan.config.defaults import class_defaults
from kvplan.config.geometry import Geometry, build_layer_specs
from kvplan.config.indexed import with_index_keys
from kvplan.config.layers import ATTENTION_FREE_TYPES, derive_layer_kinds
from kvplan.config.per_kind import MIMO_V2_TYPES, is_mimo_v2, mimo_v2_specs
from kvplan.config.schema import HFConfig
from kvplan.config.state import linear_state
from kvplan.errors import ConfigError
from kvplan.specs import LayerSpec, LinearState, MLAAttn

MLA_AS_MHA_TYPES = ("minicpm3",)
STATE_KINDS = ("linear", "parallel", "hybrid")  # kinds whose layers keep a linear/Mamba state
COARSE_KINDS = {"parallel": "linear", "hybrid": "linear", "cross": "full", "image_cross": "full"}  # ModelConfig.layer_kinds


def implied_values(values: dict[str, Any], origin: dict[str, str], fields: dict[str, Any]) -> dict[str, Any]:
    """Fields a config implies without naming them.

    - Command-R / Cohere: a truthy `model_max_length` is the max length, even above the smallest
      length field (vLLM derive_max_model_len_and_key, model_arch_config_convertor.py:374-406).
    - Encoder-decoder (Whisper): the decoder holds the cache: its layers, heads and width.
    - Nemotron-H's newer form names no num_hidden_layers: one layers_block_type entry per layer.
    - Granite-4 / Falcon-H1 `mamba_d_head: "auto"`: I / heads (left to the state rule).
    - Attention-free models (Mamba, FalconMamba) name no attention heads: one stands in for the
      model-level attention fields, which no layer uses.
    - MiniCPM3 has MLA weights but vLLM caches it as plain attention: every head keeps K and V of
      qk_nope + qk_rope, V padded to that width (vllm/model_executor/models/minicpm3.py:72-176; vLLM's
      MLA list, model_arch_config_convertor.py:294-342, does not name it).
    - Zamba2's shared attention block is attention_head_dim wide (2 × hidden / heads), whatever
      head_dim says (Zamba2ModelArchConfigConvertor, model_arch_config_convertor.py:502-504).
    """
    out = dict(values)
    limit = fields.get("model_max_length")
    if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
        out["max_model_len"], origin["max_model_len"] = limit, "model_max_length"
    if out.get("model_type") in ATTENTION_FREE_TYPES and out.get("num_attention_heads") is None:
        out["num_attention_heads"], origin["num_attention_heads"] = 1, "num_attention_heads (attention-free model)"
    if out.get("is_encoder_decoder") and out.get("decoder_layers"):
        out["num_layers"], origin["num_layers"] = out["decoder_layers"], "decoder_layers"
        if out.get("decoder_attention_heads"):
            out["num_attention_heads"] = out["decoder_attention_heads"]
            origin["num_attention_heads"] = "decoder_attention_heads"
    if out.get("num_layers") is None and isinstance(out.get("layers_block_type"), list):
        out["num_layers"], origin["num_layers"] = len(out["layers_block_type"]), "layers_block_type"
    if out.get("model_type") in MLA_AS_MHA_TYPES and out.get("kv_lora_rank"):
        k_dim = (out.get("qk_nope_head_dim") or 0) + (out.get("qk_rope_head_dim") or 0)
        out.update(kv_lora_rank=None, head_dim=k_dim, v_head_dim=k_dim, num_kv_heads=out.get("num_attention_heads"))
    if out.get("model_type") == "zamba2" and fields.get("attention_head_dim"):
        out["head_dim"], origin["head_dim"] = fields["attention_head_dim"], "attention_head_dim"
    if out.get("mamba_head_dim") == "auto":
        out["mamba_head_dim"] = None
    return out


def refuse_unmodelled(values: dict[str, Any], origin: dict[str, str], source: str,
                      architectures: Any = None) -> None:
    """One line naming the field, never a wrong number, for architectures kvplan does not model."""
    for name, why in UNMODELLED_FIELDS.items():
        if values.get(name) is not None:
            raise ConfigError(f"{source}: config field '{origin.get(name, name)}': {why}")
    for arch in architectures if isinstance(architectures, list) else ():
        if isinstance(arch, str) and arch in UNMODELLED_ARCHITECTURES:
            why, first = UNMODELLED_ARCHITECTURES[arch], served_from(arch)
            raise ConfigError(f"{source}: config field 'architectures': {arch} (vLLM serves it from {first}) is not "
                              f"modelled: {why}")


def unknown_type_note(values: dict[str, Any], origin: dict[str, str], source: str, architectures: Any) -> str | None:
    """A model_type kvplan has no rule or class defaults for: every field it needs must be named in the config (exit 2
    naming the missing ones), and then the answer says kvplan does not know the architecture."""
    model_type = values.get("model_type")
    archs = architectures if isinstance(architectures, list) else []
    known = (*KNOWN_MODEL_TYPES, *DSV4_TYPES, *MIMO_V2_TYPES)
    if (not isinstance(model_type, str) or not model_type or model_type in known or class_defaults(model_type)
            or set(archs) & set(KNOWN_ARCHITECTURES)):
        return None
    named = {k for k, v in origin.items() if "(default of" not in v}
    missing = [what for name, what in UNKNOWN_NEEDS
               if (values.get(name) is None or name not in named) and not (name == "head_dim" and values.get("hidden_size"))]
    if missing:
        raise ConfigError(f"{source}: model_type {model_type!r} is not one kvplan knows, and the config does not name "
                          f"{', '.join(missing)}; kvplan does not guess them")
    return (f"model_type {model_type!r} is not an architecture kvplan knows: sized from the fields it names (KV heads, "
            "head_dim, windows, MLA, states) as kvplan reads every config; no rule of its own family applies")


def nas_kv_heads(cfg: HFConfig) -> int | None:
    """NAS model-level KV heads: those of the first block with attention (vLLM
    NemotronNasModelArchConfigConvertor, model_arch_config_convertor.py:535-551)."""
    for block in cfg.block_configs or ():
        attention = block.get("attention") if isinstance(block, dict) else None
        group = attention.get("n_heads_in_group") if isinstance(attention, dict) else None
        if isinstance(attention, dict) and not attention.get("no_op") and isinstance(group, int) and group > 0:
            return cfg.num_attention_heads // group
    return None


def layer_specs_of(cfg: HFConfig, fields: dict[str, Any], kinds: tuple[str, ...], geo: Geometry,
                   source: str) -> tuple[tuple[LayerSpec, ...], LinearState | None]:
    """The per-layer specs, and the state of the model's linear layers (None when it has none)."""
    state = linear_state(cfg, fields, geo.head_dim, source) if set(kinds) & set(STATE_KINDS) else None
    geo = Geometry(num_attention_heads=geo.num_attention_heads, num_kv_heads=geo.num_kv_heads,
                   head_dim=geo.head_dim, v_head_dim=geo.v_head_dim, mla=geo.mla, state=state)
    return build_layer_specs(cfg, kinds, geo, source), state


def kinds_and_specs(cfg: HFConfig, fields: dict[str, Any], geo: Geometry,
                    source: str) -> tuple[tuple[str, ...], tuple[LayerSpec, ...], LinearState | None]:
    """Each layer's kind, its specs, and the state of the model's linear layers. DeepSeek-V4's layers are
    named by their compression (kvplan.config.compressed); every one has attention weights ("full"). MiMo-V2's
    kinds have their own geometry (kvplan.config.per_kind)."""
    if is_deepseek_v4(cfg):
        return ("full",) * cfg.num_layers, deepseek_v4_specs(cfg, fields, source), None
    if is_mimo_v2(cfg):
        return (*mimo_v2_specs(cfg, fields, geo.head_dim, geo.num_kv_heads, source), None)
    kinds = derive_layer_kinds(cfg, source)
    specs, state = layer_specs_of(cfg, fields, kinds, geo, source)
    return kinds, with_index_keys(specs, fields, source), state


DSV4_KV_DTYPE = "fp8_ds_mla"  # vLLM 0.33 turns DeepSeek-V4's auto into fp8_ds_mla (models/deepseek_v4/attention.py:94-126)


def native_kv_dtype(cfg: HFConfig, fields: dict[str, Any], is_mla: bool) -> str | None:
    """What KV dtype auto becomes: the checkpoint's own KV quantization, or DeepSeek-V4's packed fp8 cell."""
    return DSV4_KV_DTYPE if is_deepseek_v4(cfg) else checkpoint_kv_dtype(fields, is_mla)


def family_notes(cfg: HFConfig) -> tuple[str, ...]:
    if is_deepseek_v4(cfg):
        return ("DeepSeek-V4: KV dtype auto is vLLM's fp8_ds_mla (584 B per latent), as its default CUDA backends "
                "store it (vllm/models/deepseek_v4/attention.py:94-126)",)
    return ()


def checkpoint_kv_dtype(fields: dict[str, Any], is_mla: bool) -> str | None:
    """The KV-cache dtype a checkpoint declares, which vLLM's kv_cache_dtype=auto takes: a modelopt
    `kv_cache_scheme` / `kv_cache_quant_algo` (fp8 -> fp8_e4m3, nvfp4; a dict of 8-bit floats is fp8,
    of 4-bit floats nvfp4; vllm/utils/torch_utils.py:443-516), or an llm-compressor `kv_cache_scheme`
    on a non-MLA attention layer (fp8; vllm/model_executor/layers/attention/attention.py:281-291)."""
    quant = fields.get("quantization_config")
    if not isinstance(quant, dict):
        return None
    method = quant.get("quant_method")
    if not (isinstance(method, str) and method.startswith("modelopt")):
        return "fp8" if quant.get("kv_cache_scheme") is not None and not is_mla else None
    nested = quant.get("quantization")
    inner: dict[str, Any] = nested if isinstance(nested, dict) else quant
    algo = (inner.get("kv_cache_scheme") or quant.get("kv_cache_scheme") or inner.get("kv_cache_quant_algo")
            or quant.get("kv_cache_quant_algo"))
    if isinstance(algo, dict):
        bits = algo.get("num_bits")
        algo = {8: "fp8", 4: "nvfp4"}.get(bits) if isinstance(bits, int) and algo.get("type") == "float" else None
    return {"fp8": "fp8_e4m3", "nvfp4": "nvfp4"}.get(str(algo).lower()) if algo else None


def mla_spec(cfg: HFConfig) -> MLAAttn | None:
    if cfg.kv_lora_rank and cfg.qk_rope_head_dim:
        return MLAAttn(kv_lora_rank=cfg.kv_lora_rank, qk_rope_head_dim=cfg.qk_rope_head_dim)
    return None


def coarse_kinds(kinds: tuple[str, ...]) -> tuple[str, ...]:
    """One of full, sliding, chunked, linear, none per layer (what the weights model reads: a
    KV-shared layer keeps its attention weights, so it keeps its kind)."""
    return tuple(COARSE_KINDS.get(kind, kind) for kind in kinds)
