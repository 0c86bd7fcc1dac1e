"""Which kind of layer each decoder layer is, following transformers' config classes.

Order of the rules (first that applies): an explicit `layer_types` list; Nemotron-H's
`hybrid_override_pattern`; Qwen3-Next's `full_attention_interval`; Jamba's `attn_layer_period`;
Llama-4's `attention_chunk_size` with `no_rope_layers`; a sliding window (Gemma's `sliding_window_pattern`, Qwen's
`use_sliding_window` + `max_window_layers`, else every layer, as Mistral-7B-v0.1); else full.
"""

from __future__ import annotations

from kvplan.config.aliases import LAYER_TYPE_NAMES
from kvplan.config.schema import HFConfig
from kvplan.errors import ConfigError
from kvplan.specs import LinearState


def effective_sliding_window(cfg: HFConfig) -> int | None:
    """Qwen2/3: the window applies only with use_sliding_window; 0 means none."""
    if cfg.use_sliding_window is False or not cfg.sliding_window:
        return None
    return cfg.sliding_window


def _from_layer_types(cfg: HFConfig, source: str) -> tuple[str, ...]:
    assert cfg.layer_types is not None
    if len(cfg.layer_types) != cfg.num_layers:
        raise ConfigError(f"{source}: layer_types has {len(cfg.layer_types)} entries for {cfg.num_layers} layers")
    unknown = sorted({t for t in cfg.layer_types if t not in LAYER_TYPE_NAMES})
    if unknown:
        raise ConfigError(f"{source}: unknown layer type(s) {', '.join(map(repr, unknown))} in layer_types")
    return tuple(LAYER_TYPE_NAMES[t] for t in cfg.layer_types)


_PATTERN_KINDS = {"M": "linear", "*": "full", "-": "none", "E": "none"}  # Nemotron-H hybrid_override_pattern


def _from_pattern(cfg: HFConfig, source: str) -> tuple[str, ...]:
    pattern = cfg.hybrid_override_pattern or ""
    if len(pattern) != cfg.num_layers or set(pattern) - set(_PATTERN_KINDS):
        raise ConfigError(f"{source}: hybrid_override_pattern must have one of M * - E per layer "
                          f"({cfg.num_layers} layers), got {pattern[:40]!r}")
    return tuple(_PATTERN_KINDS[c] for c in pattern)


def _sliding_kinds(cfg: HFConfig) -> tuple[str, ...]:
    n = cfg.num_layers
    if cfg.sliding_window_pattern:
        return tuple("sliding" if (i + 1) % cfg.sliding_window_pattern else "full" for i in range(n))
    if cfg.use_sliding_window and cfg.max_window_layers is not None:
        return tuple("sliding" if i >= cfg.max_window_layers else "full" for i in range(n))
    return ("sliding",) * n


def derive_layer_kinds(cfg: HFConfig, source: str) -> tuple[str, ...]:
    """One kind per layer: full, sliding, chunked, linear or none (MLA is decided per model)."""
    n = cfg.num_layers
    if cfg.layer_types is not None:
        kinds = _from_layer_types(cfg, source)
    elif cfg.hybrid_override_pattern:
        kinds = _from_pattern(cfg, source)
    elif cfg.full_attention_interval:
        kinds = tuple("linear" if (i + 1) % cfg.full_attention_interval else "full" for i in range(n))
    elif cfg.attn_layer_period:
        offset = cfg.attn_layer_offset or 0
        kinds = tuple("full" if i % cfg.attn_layer_period == offset else "linear" for i in range(n))
    elif cfg.attention_chunk_size:
        no_rope = cfg.no_rope_layers or [int((i + 1) % 4 != 0) for i in range(n)]
        if len(no_rope) != n:
            raise ConfigError(f"{source}: no_rope_layers has {len(no_rope)} entries for {n} layers")
        kinds = tuple("chunked" if flag else "full" for flag in no_rope)
    elif effective_sliding_window(cfg):
        kinds = _sliding_kinds(cfg)
    else:
        kinds = ("full",) * n
    _check_windows(cfg, kinds, source)
    return kinds


def _check_windows(cfg: HFConfig, kinds: tuple[str, ...], source: str) -> None:
    if "sliding" in kinds and not cfg.sliding_window:
        raise ConfigError(f"{source}: sliding layers but no positive sliding_window")
    if "chunked" in kinds and not cfg.attention_chunk_size:
        raise ConfigError(f"{source}: chunked layers but no positive attention_chunk_size")


def linear_dims(cfg: HFConfig, source: str) -> LinearState:
    """State shape of linear layers: gated DeltaNet (Qwen3-Next) or Mamba-1 (Jamba)."""
    nk, nv = cfg.linear_num_key_heads, cfg.linear_num_value_heads
    dk, dv, k = cfg.linear_key_head_dim, cfg.linear_value_head_dim, cfg.linear_conv_kernel_dim
    if nk and nv and dk and dv and k:
        # conv over q, k (nk × dk each) and v (nv × dv); recurrent state (nv, dv, dk)
        return LinearState(conv_kernel=k, conv_channels=2 * nk * dk + nv * dv,
                              num_state_heads=nv, state_rows=dv, state_cols=dk)
    heads, head_dim, d_state, d_conv = cfg.mamba_num_heads, cfg.mamba_head_dim, cfg.mamba_d_state, cfg.mamba_d_conv
    if heads and head_dim and d_state and d_conv:
        inner = heads * head_dim  # Mamba-2: conv over x, B, C: inner + 2 × groups × d_state; ssm (heads, head_dim, d_state)
        return LinearState(conv_kernel=d_conv, conv_channels=inner + 2 * (cfg.mamba_n_groups or 1) * d_state,
                              num_state_heads=heads, state_rows=head_dim, state_cols=d_state)
    if cfg.mamba_d_state and cfg.mamba_d_conv and cfg.mamba_expand and cfg.hidden_size:
        inner = cfg.mamba_expand * cfg.hidden_size  # Mamba-1: conv (d_conv-1, inner), ssm (inner, d_state)
        return LinearState(conv_kernel=cfg.mamba_d_conv, conv_channels=inner,
                              num_state_heads=inner, state_rows=cfg.mamba_d_state, state_cols=1)
    raise ConfigError(f"{source}: linear/Mamba layers but no state dimensions (linear_* or mamba_* fields)")
