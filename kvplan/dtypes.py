"""Element types: the one table of dtype names, KV-cache dtypes and the bytes their scales add.

Every dtype name kvplan reads (a config's ``torch_dtype``, ``--kv-dtype``, ``--state-dtype``,
``--weights-dtype``) goes through ``_DTYPES`` and ``_CANONICAL`` here. Sizes are kept in bits so
that int4 (half a byte) stays an integer. The scale schemes are the
ones engines actually allocate:

- ``group``: one fp16 scale per ``quant_group`` elements (int8/int4 in the ppl.nn cache operator):
  ``elements × bits + elements / G × 16`` bits.
- ``per_token_head``: vLLM's ``fp8_per_token_head`` / ``int8_per_token_head``: one fp32 scale per
  token per KV head, for K and for V: ``+ 2 × heads × 4`` bytes per token.
- ``nvfp4``: 4-bit elements plus one 1-byte scale per 16 elements (``x/2 + x/16`` bytes).
- ``ds_mla``: vLLM's ``fp8_ds_mla`` latent: fp8 NoPE part, one fp32 scale per 128 NoPE values,
  RoPE part kept in bf16 (512 + 16 + 128 = 656 bytes for DeepSeek).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from kvplan.errors import InputError
from kvplan.records import Record

ScaleScheme = Literal["none", "group", "per_token_head", "nvfp4", "ds_mla"]


class KvDtype(Record):
    """A KV cache element type: its width in bits and how it is scaled."""

    name: str
    element_bits: int
    scale: ScaleScheme = "none"
    quant_group: int = 0  # elements per fp16 scale, for scale == "group"

    @property
    def is_scaled(self) -> bool:
        return self.scale != "none"


# name -> (element bits, scale scheme). Aliases are rows, not branches.
_DTYPES: dict[str, tuple[int, ScaleScheme]] = {
    "fp32": (32, "none"), "float32": (32, "none"), "float": (32, "none"),
    "fp16": (16, "none"), "float16": (16, "none"), "half": (16, "none"),
    "bf16": (16, "none"), "bfloat16": (16, "none"),
    "fp8": (8, "none"), "fp8_e4m3": (8, "none"), "fp8_e5m2": (8, "none"), "fp8_inc": (8, "none"),
    "int8": (8, "group"), "int4": (4, "group"),
    "fp8_per_token_head": (8, "per_token_head"), "int8_per_token_head": (8, "per_token_head"),
    "nvfp4": (4, "nvfp4"),
    "fp8_ds_mla": (8, "ds_mla"),
}
_CANONICAL = {"float32": "fp32", "float": "fp32", "float16": "fp16", "half": "fp16",
              "bfloat16": "bf16", "fp8_e4m3": "fp8_e4m3", "fp8": "fp8"}
KV_DTYPE_NAMES = ("auto", "fp32", "fp16", "bf16", "fp8", "fp8_e4m3", "fp8_e5m2", "int8", "int4",
                  "fp8_per_token_head", "int8_per_token_head", "nvfp4", "fp8_ds_mla")
DEFAULT_QUANT_GROUP = 8  # ppl.nn MultiHeadCacheAttention's quant_group default
KNOWN_NAMES = frozenset(("auto", *_DTYPES))  # exact spellings every check accepts (others: the full check)


def canonical_dtype(name: str) -> str | None:
    """`bfloat16`, `torch.float16`, `half`, `FP8` -> `bf16`, `fp16`, `fp16`, `fp8` (None: not a dtype name)."""
    key = name.strip().lower().removeprefix("torch.")
    return _CANONICAL.get(key, key) if key in _DTYPES else None


def element_bits(name: str) -> int:
    """Bits of one element of a named dtype (scales not included)."""
    key = canonical_dtype(name)
    if key is None:
        raise InputError(f"unknown dtype {name!r}")
    return _DTYPES[key][0]


# torch's names of kvplan's dtypes, as the engines print them (SGLang's pool line, vLLM's attention selector)
TORCH_NAMES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "fp8": "float8_e4m3fn",
               "fp8_e4m3": "float8_e4m3fn", "fp8_e5m2": "float8_e5m2"}


class KvDtypeName(str):
    """A KV cache dtype as asked, parsed once (``CacheRequest.kv_dtype``): kvplan's canonical name of it
    (``bfloat16``, `` BF16`` -> ``bf16``), or ``auto`` (the checkpoint's KV quantization, else the model's dtype).
    It compares, hashes and prints as that name; ``spelled`` gives an engine's own spelling of it."""

    __slots__ = ()

    def __new__(cls, text: str, arg: str = "kv_dtype") -> KvDtypeName:
        if isinstance(text, KvDtypeName):
            return text
        if not isinstance(text, str):
            raise InputError(f"{arg} must be a dtype name, got {text!r}", arg=arg)
        key = text.strip().lower()
        if key != "auto" and key not in _DTYPES:
            resolve_kv_dtype(text, "bf16")  # its message: the names kvplan takes
        return super().__new__(cls, _CANONICAL.get(key, key))

    @property
    def is_auto(self) -> bool:
        return self == "auto"

    def spelled(self, names: Mapping[str, str]) -> str:
        """The engine's spelling (`names`: kvplan's name -> the engine's, where they differ)."""
        return names.get(self, str(self))


def resolve_kv_dtype(name: str, model_dtype: str, quant_group: int = DEFAULT_QUANT_GROUP,
                     arg: str = "", checkpoint: str | None = None) -> KvDtype:
    """`auto` -> the checkpoint's KV quantization (`checkpoint`), else the model's dtype; otherwise the named KV
    cache dtype. `arg`: the argument an unknown name came from, when it is not the KV dtype (state_dtype,
    ssm_state_dtype)."""
    key = name.strip().lower()
    if key == "auto":
        key = (checkpoint or model_dtype).strip().lower()
    if key not in _DTYPES:
        what = f"{arg}: unknown dtype" if arg else "unknown KV dtype"
        raise InputError(f"{what} {name!r}; choose one of: {', '.join(KV_DTYPE_NAMES)}", arg=arg or ())
    bits, scale = _DTYPES[key]
    if scale == "group" and quant_group <= 0:
        raise InputError(f"quant_group must be positive, got {quant_group}", arg="quant_group")
    return KvDtype(name=_CANONICAL.get(key, key), element_bits=bits, scale=scale,
                   quant_group=quant_group if scale == "group" else 0)


def _require_divisible(width: int, by: int, dtype: KvDtype) -> None:
    if width % by:
        raise InputError(f"KV dtype {dtype.name} needs head widths divisible by {by}, got {width}")


def head_bits(width: int, dtype: KvDtype) -> int:
    """Bits of one head vector of `width` elements, scales included (group / nvfp4 schemes)."""
    if dtype.scale == "group":
        _require_divisible(width, dtype.quant_group, dtype)
        return width * dtype.element_bits + width // dtype.quant_group * 16
    if dtype.scale == "nvfp4":
        _require_divisible(width, 16, dtype)
        return width * 4 + width // 16 * 8
    return width * dtype.element_bits


def attention_bytes_per_token(num_kv_heads: int, head_dim: int, v_head_dim: int, dtype: KvDtype) -> int:
    """num_kv_heads × (head_dim + v_head_dim) × bytes (+ scales), one layer, one token."""
    if dtype.scale == "ds_mla":
        raise InputError("fp8_ds_mla is a layout of the MLA latent; this layer has K/V heads")
    bits = num_kv_heads * (head_bits(head_dim, dtype) + head_bits(v_head_dim, dtype))
    if dtype.scale == "per_token_head":
        bits += 2 * num_kv_heads * 32  # one fp32 scale per token per head, for K and for V
    return _whole_bytes(bits)


def attention_formula(num_kv_heads: int, head_dim: int, v_head_dim: int, dtype: KvDtype) -> str:
    """attention_bytes_per_token's arithmetic in words and numbers, scheme for scheme (head_bits' branches)."""
    h, widths = num_kv_heads, f"({head_dim} + {v_head_dim})"
    if dtype.scale == "group":
        return f"{h} × {widths} × ({element_text(dtype)} + 2 B / {dtype.quant_group} scale)"
    if dtype.scale == "nvfp4":
        return f"{h} × {widths} × (0.5 B + 1 B / 16 scale)"
    if dtype.scale == "per_token_head":
        return f"{h} × {widths} × 1 B + 2 × {h} × 4 B fp32 scales"
    return f"{h} × {widths} × {element_text(dtype)}"


def mla_bytes_per_token(kv_lora_rank: int, qk_rope_head_dim: int, dtype: KvDtype) -> int:
    """(kv_lora_rank + qk_rope_head_dim) × bytes: one latent per token per layer, never ×2."""
    if dtype.scale == "ds_mla":
        _require_divisible(kv_lora_rank, 128, dtype)
        return kv_lora_rank + kv_lora_rank // 128 * 4 + qk_rope_head_dim * 2
    if dtype.scale == "per_token_head":
        raise InputError(f"{dtype.name} scales K/V heads; MLA caches one latent (use fp8 or fp8_ds_mla)")
    return _whole_bytes(head_bits(kv_lora_rank + qk_rope_head_dim, dtype))


def mla_formula(kv_lora_rank: int, qk_rope_head_dim: int, dtype: KvDtype) -> str:
    """mla_bytes_per_token's arithmetic in words and numbers, scheme for scheme."""
    r, rope = kv_lora_rank, qk_rope_head_dim
    if dtype.scale == "ds_mla":
        return f"{r} × 1 B + {r}/128 × 4 B scales + {rope} × 2 B rope ({dtype.name})"
    scales = {"group": f" + {r + rope}/{dtype.quant_group} × 2 B scales",
              "nvfp4": f" + {r + rope}/16 × 1 B scales"}.get(dtype.scale, "")
    return f"({r} + {rope}) × {element_text(dtype)}{scales} (one latent, no ×2 for V)"


def element_text(dtype: KvDtype) -> str:
    """One element's bytes as the formulas print them: `2 B`, `0.5 B` (scales apart)."""
    return f"{dtype.element_bits / 8:g} B"


def _whole_bytes(bits: int) -> int:
    """Storage is byte-addressed: an odd number of 4-bit values still takes a whole byte."""
    return -(-bits // 8)


def check_dtype_name(name: str, arg: str) -> None:
    """Refuse a KV or state dtype name no engine has (`auto` is always valid), naming the argument."""
    if not isinstance(name, str):
        raise InputError(f"{arg} must be a dtype name, got {name!r}", arg=arg)
    resolve_kv_dtype(name, "bf16", arg="" if arg == "kv_dtype" else arg)
