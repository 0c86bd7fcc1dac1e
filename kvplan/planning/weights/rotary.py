"""The rotary cos/sin caches vLLM builds while it loads a model: one per RoPE configuration the layers use.

``get_rope`` (``model_executor/layers/rotary_embedding/__init__.py``) caches one module per distinct (head size,
rotary dim, positions, scaling) key; each registers a ``cos_sin_cache`` buffer of ``positions × rotary_dim`` in
the model dtype (``base.py`` ``cache.to(dtype)``; gpt-oss builds its own in fp32), allocated inside the load that
"Model loading took" measures. How many positions a cache holds depends on the scaling type (vLLM 0.19 paths;
the same in 0.9.2-0.33 unless said):

- default, ``llama3``, ``ntk``, dynamic-NTK by ``alpha``: ``max_position_embeddings``;
- ``linear``: ``max_position_embeddings × factor`` (``linear_scaling_rope.py:90``);
- ``dynamic`` with a factor: ``max_position_embeddings × factor`` (``dynamic_ntk_scaling_rope.py:56``);
- ``yarn``, ``deepseek_yarn``: ``original_max_position_embeddings × factor`` (``yarn_scaling_rope.py:78``);
- ``longrope`` (Phi-3): the short and the long cache concatenated, ``original + max_position_embeddings``
  (``phi3_long_rope_scaled_rope.py:82-93``);
- M-RoPE (an ``mrope_section``, Qwen-VL, Qwen3.5): ``max_position_embeddings × 4`` (``mrope.py:238``, 0.9-0.31);
  from 0.32 a model passes its own factor, 1 for Qwen3-VL and Qwen3.5 unless video pruning is on (0.32
  ``models/qwen3_vl.py:1818-1825``), still 4 for the others;
- ``proportional`` (Gemma-4): ``rotary_dim`` = the whole head (``gemma4_rope.py:44-51``);
- DeepSeek-V4: ``qk_rope_head_dim`` dims in fp32, a second cache for the compressed layers' own theta.

Gemma-3 builds two: its sliding layers use ``rope_local_base_freq`` without scaling, its global layers the config's
``rope_scaling`` (``models/gemma3.py:154-169``); a config whose ``rope_parameters`` is keyed by layer type
(transformers 5, Gemma-4) builds one per type, Gemma-4's full-attention layers at ``global_head_dim``
(``models/gemma4.py:441-451, 570``). ``partial_rotary_factor`` may sit in the RoPE parameters
(``__init__.py`` get_rope) or at the top of the config.
"""

from __future__ import annotations

from typing import Any

from kvplan.config.model import ModelConfig
from kvplan.dtypes import element_bits
from kvplan.records import Value

ROTARY_FP32 = frozenset({"gpt_oss", "deepseek_v4"})  # model files that build their rotary cache in fp32
# DeepSeek-V4: rope over the last qk_rope_head_dim dims (rope_parameters["rope_dim"]), an fp32 cache
# (DeepseekV4ScalingRotaryEmbedding), one cache per rope_theta: compress_rope_theta for the compressed layers
# (vLLM 0.25 models/deepseek_v4/common/rope.py:9-37, model_executor/layers/rotary_embedding/__init__.py:66,
# deepseek_scaling_rope.py:233-248)
ROPE_DIM_TYPES = frozenset({"deepseek_v4"})
LOCAL_ROPE_TYPES = frozenset({"gemma3", "gemma3_text"})  # a second, unscaled cache for the sliding layers
MROPE_FACTOR_ONE = frozenset({"qwen3_vl", "qwen3_vl_text", "qwen3_vl_moe", "qwen3_vl_moe_text", "qwen3_5",
                              "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text"})  # 0.32 on: positions × 1
LAYER_TYPES = ("full_attention", "sliding_attention", "chunked_attention")


class RopeCache(Value):
    """One cos/sin cache: its positions, rotary dim and bytes per element (a plain class: a NamedTuple is compiled at
    import, ~0.3 ms of every capacity run)."""

    __slots__ = ("kind", "positions", "rotary_dim", "width")
    FIELDS = ("positions", "rotary_dim", "width", "kind")

    def __init__(self, *, positions: int, rotary_dim: int, width: int, kind: str) -> None:
        self.positions = positions
        self.rotary_dim = rotary_dim
        self.width = width
        self.kind = kind  # the scaling type it was built for

    @property
    def bytes(self) -> int:
        return self.positions * self.rotary_dim * self.width


def _params(model: ModelConfig) -> dict[str, Any]:
    for key in ("rope_parameters", "rope_scaling"):
        value = model.field(key) if key != "rope_parameters" else model.raw.get(key)
        if isinstance(value, dict):
            return value
    return {}


def _positions(params: dict[str, Any], max_positions: int, mrope_factor: int, original: Any) -> int:
    """Positions of one cache; `original`: the config's top-level original_max_position_embeddings (Phi-3)."""
    kind = str(params.get("rope_type") or params.get("type") or "default")
    factor = params.get("factor")
    original = params.get("original_max_position_embeddings", original)
    if "mrope_section" in params:
        return max_positions * mrope_factor
    if kind in ("linear", "dynamic") and isinstance(factor, (int, float)) and "alpha" not in params:
        return int(max_positions * factor)
    if kind in ("yarn", "deepseek_yarn") and isinstance(factor, (int, float)) and isinstance(original, int):
        return int(original * factor)
    if kind == "longrope" and isinstance(original, int):
        return original + max_positions
    return max_positions


def _cache(model: ModelConfig, params: dict[str, Any], head_dim: int, mrope_factor: int) -> RopeCache:
    kind = str(params.get("rope_type") or params.get("type") or "default")
    factor = params.get("partial_rotary_factor", model.field("partial_rotary_factor"))
    rotary_dim = head_dim if kind == "proportional" else int(head_dim * float(factor or 1.0))
    if model.is_mla or model.model_type in ROPE_DIM_TYPES:
        rotary_dim = model.qk_rope_head_dim or int(model.raw.get("qk_rope_head_dim") or 0)
    elif isinstance(params.get("rope_dim"), int):
        rotary_dim = params["rope_dim"]  # get_rope: an explicit rope_dim wins over partial_rotary_factor
    width = 4 if model.model_type in ROTARY_FP32 else element_bits(model.dtype) // 8
    positions = _positions(params, int(model.field("max_position_embeddings") or 0), mrope_factor,
                           model.raw.get("original_max_position_embeddings"))
    return RopeCache(positions=positions, rotary_dim=rotary_dim, width=width,
                     kind="mrope" if "mrope_section" in params else kind)


def mrope_factor(model: ModelConfig, *, per_model: bool) -> int:
    """Positions × this for an M-RoPE cache: 4, or (vLLM 0.32 on, `per_model`) 1 for Qwen3-VL and Qwen3.5."""
    return 1 if per_model and model.model_type in MROPE_FACTOR_ONE else 4


def rope_caches(model: ModelConfig, *, mrope_per_model: bool = False) -> tuple[RopeCache, ...]:
    """The caches a load builds (none without max_position_embeddings), deduplicated as get_rope does."""
    if not model.field("max_position_embeddings"):
        return ()
    params, factor = _params(model), mrope_factor(model, per_model=mrope_per_model)
    by_type = [(t, params[t]) for t in LAYER_TYPES if isinstance(params.get(t), dict)]
    if by_type:  # one module per distinct (head size, parameters): identical entries share one
        global_dim = model.raw.get("global_head_dim")
        dims = {t: int(global_dim) if t == "full_attention" and global_dim else model.head_dim for t, _ in by_type}
        unique = {(dims[t], repr(sorted(p.items()))): (dims[t], p) for t, p in by_type}
        return tuple(_cache(model, p, dim, factor) for dim, p in unique.values())
    caches = [_cache(model, params, model.head_dim, factor)]
    if model.model_type in LOCAL_ROPE_TYPES and "sliding" in model.layer_kinds:
        caches.append(_cache(model, {}, model.head_dim, factor))  # the sliding layers' rope_local_base_freq cache
    if _compressed_theta(model):
        caches.append(caches[0])  # DeepSeek-V4's compressed layers: the same cache on compress_rope_theta
    return tuple(caches)


def _compressed_theta(model: ModelConfig) -> bool:
    """A DeepSeek-V4 with compressed layers on a rope_theta of their own (a second cache)."""
    if model.model_type not in ROPE_DIM_TYPES:
        return False
    compressed = any(isinstance(r, int) and r > 1 for r in model.raw.get("compress_ratios") or ())
    return compressed and model.raw.get("compress_rope_theta") not in (None, model.raw.get("rope_theta"))
