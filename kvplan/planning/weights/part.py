"""The unit every weight count is made of: a ``Part`` (one tensor, or a stack of alike tensors), and a model's
parts laid out as the PP stages place them (``ModelParts``).

Parts come from a tensor table (``tensors``: transformers' meta-device build, the checkpoint's headers) or,
for a config with neither, from kvplan's formula (``parts``). Shapes are (out, in) for matrices whatever
the checkpoint's storage order, so quantization scales (grouped along the input dimension) and TP splits
read the same way for every family.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from kvplan.config.mtp_families import family_key
from kvplan.records import Record

if TYPE_CHECKING:
    from kvplan.config.model import ModelConfig
    from kvplan.config.mtp import MtpModules

Category = Literal["embedding", "lm_head", "attention", "mixer", "mlp_dense", "moe_experts", "moe_shared_experts",
                   "router", "norms", "vision", "audio"]
# How tensor parallelism cuts a part (kvplan.planning.weights.roles): column = output rows split, row = input
# columns split, kv = K/V rows split by KV heads (replicated once tp > heads), qkv = fused Q/K/V, vocab =
# vocab-parallel rows; expert-* = a stack of experts split over EP ranks, each cut as column / row / whole.
TpRule = Literal["column", "row", "kv", "qkv", "vocab", "replicated", "expert-column", "expert-row",
                 "expert-replicated"]


class Part(Record, kw_only=False):
    """One weight tensor (or stack of experts): its module path, category, shape and TP rule."""

    name: str  # module path, HF-style: "model.layers.3.self_attn.q_proj" (weight quantization matches it)
    category: Category
    shape: tuple[int, ...]  # (out, in) for matrices; one expert's for a stack of experts
    tp: TpRule
    is_linear: bool = False  # a matrix weight that weight quantization applies to
    count: int = 1  # experts stacked in one tensor, alike tensors of a tower's blocks
    bits: int | None = None  # stored bits per element when fixed (fp32-kept, a checkpoint header's dtype)

    @property
    def params(self) -> int:
        n = self.count
        for dim in self.shape:
            n *= dim
        return n


class ModelParts(Record, kw_only=False):
    """A model's parts by where PP puts them: the first stage holds ``first`` (embeddings, vision and audio
    towers, projectors), the last ``last`` (final norm, lm_head) and, with tied embeddings and pp > 1, its own
    copy of ``tied`` (vLLM builds an lm_head on the last rank); ``layers`` are split as pp_layer_counts."""

    first: tuple[Part, ...]
    last: tuple[Part, ...]
    layers: tuple[tuple[Part, ...], ...]  # one tuple per decoder layer
    mtp_layers: tuple[tuple[Part, ...], ...] = ()  # DeepSeek/GLM next-token-prediction modules (last stage)
    tied: Part | None = None  # the embedding an lm_head shares
    source: str = ""  # where the tensors come from
    estimate: bool = False  # kvplan's formula, not a table of the model's tensors
    notes: tuple[str, ...] = ()
    mtp_exact: bool = False  # mtp_layers are the checkpoint's own tensors (False: a copy of the last decoder layer)


def declared_mtp(model: ModelConfig) -> MtpModules | None:
    """``config.mtp.declared_modules``, importing that module only for a model with an MTP drafter (most have none)."""
    if family_key(model) is None:
        return None
    from kvplan.config.mtp import declared_modules

    return declared_modules(model)
