"""Models whose sliding layers have their own heads and widths: MiMo-V2 (``hybrid_layer_pattern``).

vLLM 0.33 ``model_executor/models/mimo_v2.py``: layer i is sliding when ``hybrid_layer_pattern[i] == 1``
(``:499-500``), with ``swa_num_key_value_heads``, ``swa_head_dim`` and ``swa_v_head_dim`` and a window of
``sliding_window_size`` tokens (``:408-429``); the other layers are full attention with ``num_key_value_heads``,
``head_dim`` and ``v_head_dim`` (``:430-445``). K and V widths differ, and both are stored. vLLM reads
``sliding_window_size`` itself: transformers' ``MiMoV2FlashConfig`` sets ``sliding_window`` to the size + 1, which
vLLM does not use for this model. The config's ``attention_chunk_size`` is deleted by vLLM from 0.21 on (the
architecture does not use chunked attention; ``transformers_utils/model_arch_config_convertor.py:598-620``);
before, it turned the hybrid KV cache manager off (``kvplan.engines.vllm.families``).
"""

from __future__ import annotations

from typing import Any

from kvplan.config.schema import HFConfig
from kvplan.errors import ConfigError
from kvplan.specs import FullAttn, LayerSpec, SlidingAttn

MIMO_V2_TYPES = ("mimo_v2_flash", "mimo_v2")


def is_mimo_v2(cfg: HFConfig) -> bool:
    return cfg.model_type in MIMO_V2_TYPES or cfg.hybrid_layer_pattern is not None


def _int(fields: dict[str, Any], key: str, source: str, default: int | None = None) -> int:
    value = fields.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= 10_000_000:
        raise ConfigError(f"{source}: config field '{key}': expected a positive integer, got {value!r}")
    return value


def _pattern(cfg: HFConfig, source: str) -> list[int]:
    pattern = cfg.hybrid_layer_pattern
    if not isinstance(pattern, list) or len(pattern) != cfg.num_layers or set(pattern) - {0, 1}:
        raise ConfigError(f"{source}: config field 'hybrid_layer_pattern': expected 0 (full) or 1 (sliding) for each "
                          f"of the {cfg.num_layers} layers")
    return pattern


def mimo_v2_specs(cfg: HFConfig, fields: dict[str, Any], head_dim: int, kv_heads: int,
                  source: str) -> tuple[tuple[str, ...], tuple[LayerSpec, ...]]:
    """Each layer's kind and spec."""
    pattern = _pattern(cfg, source)
    full = FullAttn(num_kv_heads=kv_heads, head_dim=head_dim, v_head_dim=cfg.v_head_dim or head_dim)
    swa_head = _int(fields, "swa_head_dim", source, head_dim)
    window = fields.get("sliding_window_size", cfg.sliding_window)
    sliding = SlidingAttn(num_kv_heads=_int(fields, "swa_num_key_value_heads", source, kv_heads), head_dim=swa_head,
                          v_head_dim=_int(fields, "swa_v_head_dim", source, swa_head),
                          window=_int({"sliding_window_size": window}, "sliding_window_size", source))
    kinds = tuple("sliding" if p else "full" for p in pattern)
    return kinds, tuple(sliding if p else full for p in pattern)
