"""The fixed per-sequence state of linear-attention, Mamba and short-convolution layers.

Shapes follow vLLM 0.33's ``MambaStateShapeCalculator``
(``vllm/model_executor/layers/mamba/mamba_utils.py:152-319``), whole model (TP 1), with the fields each
model file reads:

- gated DeltaNet (Qwen3-Next, Qwen3.5; OLMo-Hybrid): conv (K-1, 2·nk·dk + nv·dv), recurrent (nv, dv, dk);
- Mamba-2 (Nemotron-H, Granite-4-H, Falcon-H1, Zamba2, Mamba2): conv (K-1, I + 2·G·N), ssm (H, P, N);
- Mamba-1 (Jamba, Mamba, FalconMamba): conv (K-1, I), ssm (I, N);
- KDA (Kimi-Linear; AliceAI on linear_* fields): conv (K-1, 3·H·D), recurrent (H, D, D), recurrent fp32 unless told
  otherwise;
- short conv (LFM2): conv (L_cache-1, conv_dim) only;
- lightning attention (MiniMax-M1): (H, D, D) in the conv dtype (a single-tensor state).

Which dtype the recurrent state takes at auto is the config's where vLLM reads it (``SSM_DTYPE_HOOKS``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from kvplan.config.aliases import KDA_ON_LINEAR_FIELDS, SSM_DTYPE_HOOKS
from kvplan.config.schema import HFConfig
from kvplan.dtypes import canonical_dtype
from kvplan.errors import ConfigError
from kvplan.specs import LinearState

MAMBA2_TYPES = ("nemotron_h", "granitemoehybrid", "falcon_h1", "zamba2", "mamba2", "bamba")
FALCON_H1_D_SSM = 1024  # FalconH1Config(mamba_d_ssm=1024) when the JSON omits it (transformers 5.20)


def ssm_dtype_hook(fields: dict[str, Any], source: str) -> str | None:
    """The recurrent state's dtype vLLM takes at auto, for the architectures that set one."""
    for arch in fields.get("architectures") or ():
        if arch in SSM_DTYPE_HOOKS:
            key, default = SSM_DTYPE_HOOKS[arch]
            value = fields.get(key, default)
            if value is not None and (not isinstance(value, str) or canonical_dtype(value) is None):
                raise ConfigError(f"{source}: config field '{key}': expected a dtype name, got {value!r}")
            return canonical_dtype(value) if value else None
    return None


def _gdn(cfg: HFConfig, mixer: str) -> LinearState | None:
    nk, nv = cfg.linear_num_key_heads, cfg.linear_num_value_heads
    dk, dv, k = cfg.linear_key_head_dim, cfg.linear_value_head_dim, cfg.linear_conv_kernel_dim
    if not (nk and nv and dk and dv and k):
        return None
    return LinearState(mixer="olmo_gdn" if mixer == "olmo_hybrid" else "gdn", conv_kernel=k,
                       conv_channels=2 * nk * dk + nv * dv, num_state_heads=nv, state_rows=dv, state_cols=dk)


def _mamba2(cfg: HFConfig) -> LinearState | None:
    heads, d_state, d_conv = cfg.mamba_num_heads, cfg.mamba_d_state, cfg.mamba_d_conv
    inner = _mamba2_inner(cfg)
    if not (heads and d_state and d_conv and inner):
        return None
    head_dim = cfg.mamba_head_dim or inner // heads  # Granite / Falcon-H1 "auto": I / heads
    return LinearState(mixer="mamba2", conv_kernel=d_conv, conv_channels=inner, num_groups=cfg.mamba_n_groups or 1,
                       group_channels=2 * d_state, num_state_heads=heads, state_rows=head_dim, state_cols=d_state)


def _mamba2_inner(cfg: HFConfig) -> int | None:
    """I: Nemotron-H heads × head_dim; Falcon-H1 mamba_d_ssm; else mamba_expand × hidden_size."""
    if cfg.model_type == "falcon_h1":
        return cfg.mamba_d_ssm or FALCON_H1_D_SSM
    if cfg.model_type == "nemotron_h" and cfg.mamba_num_heads and cfg.mamba_head_dim:
        return cfg.mamba_num_heads * cfg.mamba_head_dim
    if cfg.mamba_expand and cfg.hidden_size:
        return cfg.mamba_expand * cfg.hidden_size
    return None


def _mamba1(cfg: HFConfig, fields: dict[str, Any]) -> LinearState | None:
    """conv (d_conv - 1, I), ssm (I, d_state). I: Jamba mamba_expand × hidden_size; Mamba / FalconMamba
    the checkpoint's intermediate_size (transformers 5 recomputes it as expand × hidden_size, which for
    falcon-mamba-7b, `expand: 16`, is not the checkpoint's 8,192)."""
    inner = fields.get("intermediate_size") if cfg.model_type in ("mamba", "falcon_mamba") else None
    if not isinstance(inner, int) or isinstance(inner, bool) or inner <= 0:
        inner = cfg.mamba_expand * cfg.hidden_size if cfg.mamba_expand and cfg.hidden_size else None
    if not (cfg.mamba_d_state and cfg.mamba_d_conv and inner):
        return None
    return LinearState(mixer="mamba1", conv_kernel=cfg.mamba_d_conv, conv_channels=inner, num_state_heads=inner,
                       state_rows=cfg.mamba_d_state, state_cols=1)


def _positive(value: Any, key: str, source: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= 10_000_000:
        raise ConfigError(f"{source}: config field '{key}': expected a positive integer, got {value!r}")
    return value


def _kda(cfg: HFConfig, source: str) -> LinearState:
    """Kimi-Linear KDA (vllm mamba_utils.py:295-319, kda_state_dtype :132-149: recurrent fp32 at auto)."""
    conf = cfg.linear_attn_config or {}
    heads, dim, kernel = (_positive(conf.get(k, d), f"linear_attn_config.{k}", source)
                          for k, d in (("num_heads", None), ("head_dim", None), ("short_conv_kernel_size", 4)))
    return LinearState(mixer="kda", conv_kernel=kernel, conv_channels=3 * heads * dim, num_state_heads=heads,
                       state_rows=dim, state_cols=dim, ssm_dtype="fp32")


def _short_conv(cfg: HFConfig) -> LinearState | None:
    """LFM2 ShortConv (vllm/model_executor/models/lfm2.py:556-577): conv (L_cache - 1, conv_dim)."""
    if not cfg.conv_l_cache:
        return None
    channels = cfg.conv_dim or cfg.hidden_size or 0
    return LinearState(mixer="short_conv", conv_kernel=cfg.conv_l_cache, conv_channels=channels,
                       num_state_heads=0, state_rows=0, state_cols=0)


def _lightning(cfg: HFConfig, head_dim: int) -> LinearState:
    """MiniMax-M1 lightning attention: one (heads, D, D) state (vLLM <= 0.23's MiniMaxText01)."""
    return LinearState(mixer="lightning", conv_kernel=0, conv_channels=0, num_state_heads=cfg.num_attention_heads,
                       state_rows=head_dim, state_cols=head_dim)


def _kda_on_linear_fields(cfg: HFConfig, source: str) -> LinearState:
    """AliceAI: Kimi's KDA layer on Qwen-Next-style linear_* fields, which must name equal key and value heads and
    widths (vllm/model_executor/models/alice_ai.py:118-137); shapes kda_state_shape, recurrent fp32 at auto (:677-700)."""
    nk, nv, dk, dv = cfg.linear_num_key_heads, cfg.linear_num_value_heads, cfg.linear_key_head_dim, cfg.linear_value_head_dim
    if not (nk and dk and cfg.linear_conv_kernel_dim) or (nk, dk) != (nv, dv):
        raise ConfigError(f"{source}: AliceAI KDA requires matching key/value head counts and dimensions (vLLM "
                          f"alice_ai.py:124-127); got linear_num_key_heads {nk}, linear_num_value_heads {nv}, "
                          f"linear_key_head_dim {dk}, linear_value_head_dim {dv}, linear_conv_kernel_dim "
                          f"{cfg.linear_conv_kernel_dim}")
    return LinearState(mixer="kda", conv_kernel=cfg.linear_conv_kernel_dim, conv_channels=3 * nk * dk,
                       num_state_heads=nk, state_rows=dk, state_cols=dk, ssm_dtype="fp32")


def linear_state(cfg: HFConfig, fields: dict[str, Any], head_dim: int, source: str) -> LinearState:
    """The state of the model's linear/Mamba/conv layers, with its recurrent dtype at auto."""
    if cfg.linear_attn_config is not None:
        return _kda(cfg, source)
    if set(fields.get("architectures") or ()) & set(KDA_ON_LINEAR_FIELDS):
        return _kda_on_linear_fields(cfg, source)
    if cfg.attn_type_list is not None:
        state: LinearState | None = _lightning(cfg, head_dim)
    elif cfg.model_type in MAMBA2_TYPES or cfg.mamba_num_heads:
        state = _mamba2(cfg)
    else:
        state = _gdn(cfg, str(cfg.model_type)) or _short_conv(cfg) or _mamba1(cfg, fields)
    if state is None:
        raise ConfigError(f"{source}: linear/Mamba layers but no state dimensions (linear_*, mamba_* or conv_* fields)")
    hook = ssm_dtype_hook(fields, source)
    return replace(state, ssm_dtype=hook) if hook else state
