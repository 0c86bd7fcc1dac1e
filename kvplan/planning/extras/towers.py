"""The vision towers vLLM's profile run encodes: how big its dummy item is, and what one tower layer keeps alive.

The dummy item is the processor's largest (``get_image_size_with_most_features``):
- Qwen2-VL, Qwen2.5-VL, Qwen3-VL, Qwen3.5/3.6 (and EXAONE-4.5's Qwen2.5-VL-style tower): ``max_pixels //
  (patch × merge)²`` merged tokens, each from merge² patches (0.23 ``model_executor/models/qwen2_vl.py:965-1016``).
  ``max_pixels`` is the checkpoint's image processor's, not in config.json: kvplan takes the Qwen processors'
  published defaults, 12,845,056 (Qwen2/2.5-VL, 28 × 28 × 16,384) and 16,777,216 (Qwen3-VL and Qwen3.5's
  ``size.longest_edge``); a vLLM 0.19 Qwen3.5-9B log shows the latter's 16,384 tokens per image.
- Gemma-3 (SigLIP) and LLaVA (CLIP): one fixed-size image, ``(image_size / patch_size)²`` patches (CLIP adds its
  class token), ``mm_tokens_per_image`` (Gemma-3, 256) or one token per patch (LLaVA) from the config.

One layer's peak per patch (vLLM's modules, eager; ``h`` the tower width, ``I`` its MLP width, ``t`` the TP size,
2-byte activations): Qwen's attention holds the residual, the normed input (the caller's argument), q/k/v (3h/t),
the contiguous q/k copy and its rotated copy (2 × 2h/t) and the attention output beside its contiguous copy or the
projection (0.23 ``qwen2_5_vl.py:400-458``); its MLP the residual, the normed input, fc1 and the activation (a gated
MLP: gate_up 2I/t and the product I/t). SigLIP/CLIP keep the residual, the normed input, qkv and the output
(``siglip.py:420-520``) or the MLP's fc1 and activation. Alive the whole forward: the pixel values as the processor
made them (fp32; SigLIP/CLIP also their cast to the model dtype, an argument of the tower call), Qwen3-VL/3.5's
interpolated position embeddings. These are estimates: kvplan does not trace the kernels' workspaces.
"""

from __future__ import annotations

from typing import Any

from kvplan.config.model import ModelConfig
from kvplan.planning.weights.vision import vision_config
from kvplan.records import Value
from kvplan.units import cdiv

QWEN_MAX_PIXELS = {"qwen2_vl": 12_845_056, "qwen2_5_vl": 12_845_056, "exaone4_5": 12_845_056, "qwen3_vl": 16_777_216,
                   "qwen3_vl_moe": 16_777_216, "qwen3_5": 16_777_216, "qwen3_5_moe": 16_777_216}
GATED_MLP = ("qwen2_5_vl", "exaone4_5")  # SwiGLU vision MLPs (Qwen2.5-VL, EXAONE-4.5); the others fc1 → act → fc2
PIXEL_BYTES = 4  # the HF processors' pixel_values are float32
GEMMA3_TOKENS_PER_IMAGE = 256  # Gemma3Config.mm_tokens_per_image default (transformers)


class Tower(Value):
    """A vision tower's dummy item and its per-patch sizes (elements unless named bytes). A plain class: a NamedTuple
    is compiled when the module is imported (~0.4 ms of every vision model's capacity)."""

    FIELDS = ("family", "kind", "patches_per_item", "tokens_per_item", "output_width", "hidden", "intermediate",
              "kv_width", "gated", "pixel_bytes_per_patch", "assumed")
    __slots__ = ("assumed", "family", "gated", "hidden", "intermediate", "kind", "kv_width", "output_width",
                 "patches_per_item", "pixel_bytes_per_patch", "tokens_per_item")

    def __init__(self, *, family: str, kind: str, patches_per_item: int, tokens_per_item: int, output_width: int,
                 hidden: int, intermediate: int, kv_width: int, gated: bool, pixel_bytes_per_patch: int,
                 assumed: str) -> None:
        self.family = family  # qwen, siglip, clip
        self.kind = kind  # the vision_config's model_type
        self.patches_per_item = patches_per_item
        self.tokens_per_item = tokens_per_item  # placeholder tokens one item takes (the encoder cache's rows per item)
        self.output_width = output_width  # one cached row (the text hidden, × (1 + DeepStack levels) for Qwen3-VL)
        self.hidden = hidden
        self.intermediate = intermediate
        self.kv_width = kv_width  # K and V width (EXAONE-4.5's tower has fewer KV heads)
        self.gated = gated
        self.pixel_bytes_per_patch = pixel_bytes_per_patch  # the pixel values alive through the forward
        self.assumed = assumed  # a processor default the config does not state ("": every input from the config)


def _int(fields: dict[str, Any], *keys: str, default: int = 0) -> int:
    found = next((fields[k] for k in keys if isinstance(fields.get(k), int) and not isinstance(fields[k], bool)), default)
    return int(found)


def _family_key(kind: str) -> str:
    return kind.removesuffix("_vision").removesuffix("_text")


def _qwen(model: ModelConfig, kind: str, f: dict[str, Any]) -> Tower | None:
    key = _family_key(kind)
    patch, merge = _int(f, "patch_size", "spatial_patch_size"), _int(f, "spatial_merge_size", default=2)
    h, heads = _int(f, "hidden_size", "embed_dim"), _int(f, "num_heads", "num_attention_heads")
    if not (patch and merge and h and heads) or key not in QWEN_MAX_PIXELS:
        return None
    tokens = QWEN_MAX_PIXELS[key] // (patch * merge) ** 2
    channels, frames = _int(f, "in_channels", "in_chans", default=3), _int(f, "temporal_patch_size", default=2)
    deepstack = f.get("deepstack_visual_indexes") or []
    kv_heads = _int(f, "num_key_value_heads", default=heads)
    return Tower(family="qwen", kind=kind, patches_per_item=tokens * merge * merge, tokens_per_item=tokens,
                 output_width=_int(f, "out_hidden_size", default=model.hidden_size) * (1 + len(deepstack)),
                 hidden=h, intermediate=_int(f, "intermediate_size", default=4 * h), kv_width=h * kv_heads // heads,
                 gated=key in GATED_MLP, pixel_bytes_per_patch=channels * frames * patch * patch * PIXEL_BYTES,
                 assumed=f"max_pixels {QWEN_MAX_PIXELS[key]:,} (the {key} image processor's default)")


def _vit(model: ModelConfig, kind: str, f: dict[str, Any]) -> Tower | None:
    size, patch, h = _int(f, "image_size"), _int(f, "patch_size"), _int(f, "hidden_size")
    if not (size and patch and h):
        return None
    grid = (size // patch) ** 2
    clip = kind == "clip_vision_model"
    tokens = grid if clip else int(model.raw.get("mm_tokens_per_image") or GEMMA3_TOKENS_PER_IMAGE)
    channels = _int(f, "num_channels", default=3)
    return Tower(family="clip" if clip else "siglip", kind=kind, patches_per_item=grid + int(clip),
                 tokens_per_item=tokens, output_width=model.hidden_size, hidden=h,
                 intermediate=_int(f, "intermediate_size", default=4 * h), kv_width=h, gated=False,
                 pixel_bytes_per_patch=channels * patch * patch * (PIXEL_BYTES + 2), assumed="")


def tower(model: ModelConfig) -> Tower | None:
    """The tower vLLM's profile run encodes, where kvplan knows its processor (None: no tower, or not modelled)."""
    found = vision_config(model)
    if found is None:
        return None
    kind, fields = found
    if _family_key(kind) in QWEN_MAX_PIXELS:
        return _qwen(model, kind, fields)
    is_gemma3 = bool(model.raw.get("mm_tokens_per_image")) or model.model_type in ("gemma3", "gemma3_text")
    if kind == "clip_vision_model" or (kind == "siglip_vision_model" and is_gemma3):
        return _vit(model, kind, fields)
    return None


def layer_peak_per_patch(t: Tower, tp: int, act_bytes: int) -> int:
    """Bytes one patch holds at a tower layer's peak (the module docstring's count), without the pixel values."""
    h, inter, kv = t.hidden, cdiv(t.intermediate, tp), cdiv(t.kv_width, tp)
    q, out = cdiv(t.hidden, tp), t.hidden
    if t.family == "qwen":
        attention = 2 * h + (q + 2 * kv) + 2 * (q + kv) + max(2 * q, q + out)
        pos = h if t.kind.startswith(("qwen3_vl", "qwen3_5")) else 0  # learned position embeddings, interpolated
    else:
        attention, pos = 2 * h + (q + 2 * kv) + q + out, 0
    mlp = 2 * h + (3 if t.gated else 2) * inter
    return act_bytes * (max(attention, mlp) + pos)


def forward_peak(t: Tower, items: int, tp: int, act_bytes: int) -> int:
    """The tower's forward over `items` dummy items at once: every patch's layer peak and its pixel values."""
    patches = items * t.patches_per_item
    return patches * (layer_peak_per_patch(t, tp, act_bytes) + t.pixel_bytes_per_patch)
