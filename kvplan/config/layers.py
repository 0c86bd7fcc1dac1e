"""Which kind of layer each decoder layer is, following transformers' config classes and vLLM's models.

Order of the rules (first that applies): an explicit `layer_types` list; `layers_block_type`
(Nemotron-H's newer form, Zamba2); Nemotron-H's `hybrid_override_pattern`; NAS `block_configs`;
MiniMax's `attn_type_list`; Kimi-Linear's `linear_attn_config.kda_layers`; LFM2's `full_attn_idxs`;
Qwen3-Next's `full_attention_interval`; Jamba's `attn_layer_period`; Llama-4's `attention_chunk_size`
with `no_rope_layers`; a sliding window (Gemma's `sliding_window_pattern`, an int or EXAONE-4's
"LLLG" string, Qwen's `use_sliding_window` + `max_window_layers`, else every layer, as
Mistral-7B-v0.1); else full. Families whose every layer holds two caches are named by model_type
(Falcon-H1: "parallel"; Whisper's decoder: "cross"); mllama's `cross_attention_layers` are "image_cross" (a
cross-attention cache only).

Kinds: full, sliding, chunked, linear, none, and the two-cache kinds parallel (attention beside a
Mamba-2 mixer), hybrid (a Mamba-2 mixer plus a shared attention block) and cross (self- plus
cross-attention). ``kvplan.config.geometry`` turns kinds into specs.
"""

from __future__ import annotations

from typing import Any

from kvplan.config.aliases import LAYER_TYPE_NAMES
from kvplan.config.schema import HFConfig
from kvplan.errors import ConfigError

PARALLEL_HYBRID_TYPES = ("falcon_h1",)  # FalconH1ParallelHybrid: attention and Mamba-2 in every layer
ATTENTION_FREE_TYPES = ("mamba", "falcon_mamba")  # MambaForCausalLM: a Mamba-1 mixer in every layer


def effective_sliding_window(cfg: HFConfig) -> int | None:
    """Qwen2/3: the window applies only with use_sliding_window; 0 means none."""
    if cfg.use_sliding_window is False or not cfg.sliding_window:
        return None
    return cfg.sliding_window


def _named(names: list[str], key: str, cfg: HFConfig, source: str) -> tuple[str, ...]:
    if len(names) != cfg.num_layers:
        raise ConfigError(f"{source}: {key} has {len(names)} entries for {cfg.num_layers} layers")
    unknown = sorted({t for t in names if t not in LAYER_TYPE_NAMES})
    if unknown:
        raise ConfigError(f"{source}: unknown layer type(s) {', '.join(map(repr, unknown))} in {key}")
    return tuple(LAYER_TYPE_NAMES[t] for t in names)


_PATTERN_KINDS = {"M": "linear", "*": "full", "-": "none", "E": "none"}  # Nemotron-H hybrid_override_pattern


def _from_pattern(cfg: HFConfig, source: str) -> tuple[str, ...]:
    pattern = cfg.hybrid_override_pattern or ""
    if len(pattern) != cfg.num_layers or set(pattern) - set(_PATTERN_KINDS):
        raise ConfigError(f"{source}: hybrid_override_pattern must have one of M * - E per layer "
                          f"({cfg.num_layers} layers), got {pattern[:40]!r}")
    return tuple(_PATTERN_KINDS[c] for c in pattern)


def _from_block_configs(cfg: HFConfig, source: str) -> tuple[str, ...]:
    """NAS (vllm/model_executor/models/nemotron_nas.py:133-161): attention.no_op -> no cache."""
    blocks = cfg.block_configs or []
    if len(blocks) != cfg.num_layers:
        raise ConfigError(f"{source}: block_configs has {len(blocks)} entries for {cfg.num_layers} layers")
    return tuple("none" if _attention_block(b, i, source).get("no_op") else "full" for i, b in enumerate(blocks))


def _attention_block(block: Any, index: int, source: str) -> dict[str, Any]:
    attention = block.get("attention") if isinstance(block, dict) else None
    if not isinstance(attention, dict):
        raise ConfigError(f"{source}: block_configs[{index}] has no 'attention' object")
    return attention


def _from_indices(indices: list[int], one_based: bool, key: str, cfg: HFConfig, source: str) -> set[int]:
    shift = 1 if one_based else 0
    picked = {i - shift for i in indices if isinstance(i, int) and not isinstance(i, bool)}
    if len(picked) != len(indices) or not all(0 <= i < cfg.num_layers for i in picked):
        raise ConfigError(f"{source}: {key} must list distinct layer numbers within the {cfg.num_layers} layers")
    return picked


def _kda_kinds(cfg: HFConfig, source: str) -> tuple[str, ...]:
    """Kimi-Linear: layer i is KDA iff (i + 1) in kda_layers (1-based), MLA otherwise
    (vllm/transformers_utils/configs/kimi_linear.py:157-161)."""
    kda = (cfg.linear_attn_config or {}).get("kda_layers")
    if not isinstance(kda, list):
        raise ConfigError(f"{source}: linear_attn_config has no kda_layers list")
    linear = _from_indices(kda, True, "linear_attn_config.kda_layers", cfg, source)
    return tuple("linear" if i in linear else "full" for i in range(cfg.num_layers))


def _sliding_kinds(cfg: HFConfig, source: str) -> tuple[str, ...]:
    n, pattern = cfg.num_layers, cfg.sliding_window_pattern
    if isinstance(pattern, str):  # EXAONE-4: L local, G global, repeated from layer 0 (configuration_exaone4.py)
        if not pattern or set(pattern) - {"L", "G"}:
            raise ConfigError(f"{source}: sliding_window_pattern must be letters L (local) and G (global), "
                              f"got {pattern[:40]!r}")
        return tuple("sliding" if pattern[i % len(pattern)] == "L" else "full" for i in range(n))
    if pattern:
        return tuple("sliding" if (i + 1) % pattern else "full" for i in range(n))
    if cfg.use_sliding_window and cfg.max_window_layers is not None:
        return tuple("sliding" if i >= cfg.max_window_layers else "full" for i in range(n))
    return ("sliding",) * n


def _chunked_kinds(cfg: HFConfig, source: str) -> tuple[str, ...]:
    n = cfg.num_layers
    no_rope = cfg.no_rope_layers or [int((i + 1) % 4 != 0) for i in range(n)]
    if len(no_rope) != n:
        raise ConfigError(f"{source}: no_rope_layers has {len(no_rope)} entries for {n} layers")
    return tuple("chunked" if flag else "full" for flag in no_rope)


def _listed_kinds(cfg: HFConfig, source: str) -> tuple[str, ...] | None:
    """The rules that name every layer in a list or a pattern (None: the config has none)."""
    n = cfg.num_layers
    if cfg.layer_types is not None:
        return _named(cfg.layer_types, "layer_types", cfg, source)
    if cfg.layers_block_type is not None:
        return _named(cfg.layers_block_type, "layers_block_type", cfg, source)
    if cfg.hybrid_override_pattern:
        return _from_pattern(cfg, source)
    if cfg.block_configs is not None:
        return _from_block_configs(cfg, source)
    if cfg.attn_type_list is not None:  # MiniMax: 0 lightning attention, 1 softmax attention
        return _named(["linear_attention" if t == 0 else "full_attention" for t in cfg.attn_type_list],
                      "attn_type_list", cfg, source)
    if cfg.linear_attn_config is not None:
        return _kda_kinds(cfg, source)
    if cfg.full_attn_idxs is not None:  # LFM2: the listed layers attend, the others are short convolutions
        full = _from_indices(cfg.full_attn_idxs, False, "full_attn_idxs", cfg, source)
        return tuple("full" if i in full else "linear" for i in range(n))
    return None


def _periodic_kinds(cfg: HFConfig, source: str) -> tuple[str, ...]:
    n = cfg.num_layers
    if cfg.full_attention_interval:
        return tuple("linear" if (i + 1) % cfg.full_attention_interval else "full" for i in range(n))
    if cfg.attn_layer_period:
        offset = cfg.attn_layer_offset or 0
        return tuple("full" if i % cfg.attn_layer_period == offset else "linear" for i in range(n))
    if cfg.attention_chunk_size:
        return _chunked_kinds(cfg, source)
    if effective_sliding_window(cfg):
        return _sliding_kinds(cfg, source)
    return ("full",) * n


def derive_layer_kinds(cfg: HFConfig, source: str) -> tuple[str, ...]:
    """One kind per layer (see the module docstring; MLA is decided per model)."""
    if cfg.model_type in PARALLEL_HYBRID_TYPES:
        kinds: tuple[str, ...] = ("parallel",) * cfg.num_layers
    elif cfg.model_type in ATTENTION_FREE_TYPES:
        kinds = ("linear",) * cfg.num_layers
    elif cfg.decoder_layers and cfg.is_encoder_decoder:
        kinds = ("cross",) * cfg.num_layers
    else:
        kinds = _listed_kinds(cfg, source) or _periodic_kinds(cfg, source)
    if cfg.cross_attention_layers is not None:  # mllama: these layers attend to the image's tokens only
        listed = _from_indices(cfg.cross_attention_layers, False, "cross_attention_layers", cfg, source)
        kinds = tuple("image_cross" if i in listed else k for i, k in enumerate(kinds))
    if cfg.model_type in ("gemma4", "gemma4_text") and kinds[-1] != "full":
        kinds = (*kinds[:-1], "full")  # Gemma4TextConfig.__post_init__ forces the last layer to full attention
    _check_windows(cfg, kinds, source)
    return kinds


def _check_windows(cfg: HFConfig, kinds: tuple[str, ...], source: str) -> None:
    if "sliding" in kinds and not cfg.sliding_window:
        raise ConfigError(f"{source}: sliding layers but no positive sliding_window")
    if "chunked" in kinds and not cfg.attention_chunk_size:
        raise ConfigError(f"{source}: chunked layers but no positive attention_chunk_size")
