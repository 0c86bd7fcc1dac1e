"""How a weight is stored: ``WeightFormat`` (bits, scales, per-module formats) and the bytes of a tensor in it.

The formats themselves, and how a config's quantization_config becomes one: ``formats`` (and ``per_module`` for the
formats that differ by module).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import replace
from typing import Literal

from kvplan.records import Record
from kvplan.units import cdiv

ScaleScheme = Literal["none", "block", "group", "channel", "tensor"]


class WeightFormat(Record):
    """How a checkpoint stores its weights: bits per element and the scales of quantized linears."""

    name: str  # e.g. "bf16", "fp8 (128x128 blocks)", "mxfp4", "int4 (g128)"
    base_bits: int  # every tensor that is not a quantized linear weight
    linear_bits: int
    scheme: ScaleScheme = "none"
    block: tuple[int, int] = (0, 0)  # (rows, cols) per scale; group: (1, group)
    scale_bits: int = 0
    zero_bits: int = 0  # GPTQ/AWQ zero point per group
    tensor_bytes: int = 0  # per quantized tensor besides its scales (NVFP4's two fp32 scalars)
    skip: tuple[str, ...] = ()  # module patterns left unquantized (modules_to_not_convert ...)
    source: str = ""
    # Linear weights stored in another format, by module pattern (first match wins; a skipped module never):
    # DeepSeek-V4's expert_dtype, ModelOpt MIXED_PRECISION's quantized_layers.
    modules: tuple[tuple[str, WeightFormat], ...] = ()

    def __hash__(self) -> int:  # cheap: a few hundred per-module formats are hashed by the byte caches' keys
        return hash((self.name, self.linear_bits, self.scheme, self.block, len(self.modules), self.source))

    def for_module(self, module: str) -> WeightFormat:
        """The format of the linear weight at `module`: its per-module format, else this one without them."""
        return self.named_format(module) or (replace(self, modules=()) if self.modules else self)

    def named_format(self, module: str) -> WeightFormat | None:
        """The per-module format that names `module` (the longest module-path prefix a plain pattern names, else
        the first glob that matches); None when none does or a skip pattern names it."""
        if not self.modules:
            return None
        plain, globs, resolved = _module_index(self.modules)
        if module not in resolved:
            resolved[module] = None if any(_skipped(module, p) for p in self.skip) else _lookup(module, plain, globs)
        return resolved[module]

    def is_quantized(self, module: str) -> bool:
        """Whether a linear weight at this module path (e.g. "model.layers.3.self_attn.q_proj") is quantized.
        A skip pattern is a glob over the path (or its prefix), or a "re:" regex (compressed-tensors' ignore)."""
        if not self.quantizes:
            return False
        return not any(_skipped(module, p) for p in self.skip)

    @property
    def quantizes(self) -> bool:
        """Whether the format stores any linear weight quantized (scales, or fewer bits than the rest)."""
        return self.scheme != "none" or self.linear_bits != self.base_bits


Globs = tuple[tuple[str, "WeightFormat"], ...]
_INDEXES: dict[int, tuple[object, dict[str, WeightFormat], Globs, dict[str, WeightFormat | None]]] = {}


def is_awq_with_zeros(fmt: WeightFormat) -> bool:
    """An AWQ checkpoint with zero points (``wna16``'s kernels keep them their own way)."""
    return fmt.source == "quantization_config (awq)" and fmt.scheme == "group" and fmt.zero_bits > 0


def _module_index(modules: Globs) -> tuple[dict[str, WeightFormat], Globs, dict[str, WeightFormat | None]]:
    """The per-module formats as a dict of plain module paths (first one wins), the glob patterns, and the modules
    already resolved; built once per tuple (kept beside it, so its id stays its own)."""
    found = _INDEXES.get(id(modules))
    if found is None or found[0] is not modules:
        plain: dict[str, WeightFormat] = {}
        for pattern, fmt in modules:
            if not any(c in pattern for c in "*?[") and not pattern.startswith("re:"):
                plain.setdefault(pattern, fmt)
        globs = tuple((p, f) for p, f in modules if p not in plain)
        if len(_INDEXES) > 256:
            _INDEXES.clear()
        found = _INDEXES[id(modules)] = (modules, plain, globs, {})
    return found[1], found[2], found[3]


def _lookup(module: str, plain: dict[str, WeightFormat], globs: Globs) -> WeightFormat | None:
    """The longest module-path prefix of `module` a plain pattern names, else the first glob that matches."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        if (found := plain.get(".".join(parts[:end]))) is not None:
            return found
    return next((fmt for pattern, fmt in globs if _skipped(module, pattern)), None)


def _skipped(module: str, pattern: str) -> bool:
    if pattern.startswith("re:"):
        try:
            return re.match(pattern[3:], module) is not None
        except re.error:
            return False
    return fnmatch.fnmatchcase(module, pattern) or fnmatch.fnmatchcase(module, pattern + ".*")


def tensor_bytes(shape: tuple[int, ...], count: int, fmt: WeightFormat, *, quantized: bool) -> int:
    """Bytes of `count` tensors of `shape` ((out, in) for matrices), scales included."""
    elements = count
    for dim in shape:
        elements *= dim
    if not quantized or len(shape) != 2:
        return cdiv(elements * fmt.base_bits, 8)
    rows, cols = shape
    scales = {"none": 0, "tensor": 1, "channel": rows,
              "block": cdiv(rows, fmt.block[0] or 1) * cdiv(cols, fmt.block[1] or 1),
              "group": rows * cdiv(cols, fmt.block[1] or 1)}[fmt.scheme]
    bits = rows * cols * fmt.linear_bits + scales * (fmt.scale_bits + fmt.zero_bits)
    return count * (cdiv(bits, 8) + fmt.tensor_bytes)


NVFP4 = {"linear_bits": 4, "scheme": "group", "block": (1, 16), "scale_bits": 8, "tensor_bytes": 8}
MXFP4 = {"linear_bits": 4, "scheme": "group", "block": (1, 32), "scale_bits": 8}
