"""Parts from a checkpoint's own safetensors headers: for a config read from a folder or the HF cache that has
(or whose hub repo has) the weights, and no tensor table (``kvplan.config.checkpoint`` reads the headers).

Every tensor as stored: its dtype's bytes, scales and packing included, so the weight format is not applied
again (the checkpoint is the format). An unquantized checkpoint (every tensor a float, no scale tensors) is
the exception: its tensors take the model dtype, as the engine loads them, and ``weights_dtype`` applies.
Roles and TP rules: ``roles``, as for the tables. Per-expert tensors are stacked into one part per layer;
MTP layers a checkpoint stores (DeepSeek's index 61) are left to the MTP recipe, like the tables'.
"""

from __future__ import annotations

from pathlib import Path

from kvplan.config.checkpoint import Checkpoint, Tensors, find_checkpoint
from kvplan.config.model import ModelConfig
from kvplan.planning.weights.part import ModelParts
from kvplan.planning.weights.roles import QUANT_TENSORS, Context, classify, pattern_of
from kvplan.planning.weights.tables import Table, group_rows
from kvplan.planning.weights.tensors import table_parts

FLOATS = ("F16", "BF16", "F32", "F64")
LINEAR_ROLES = ("attention", "mixer", "mlp", "experts", "shared_experts", "vision", "audio", "projector")


def _quantized(tensors: Tensors) -> bool:
    """Whether the checkpoint stores quantized weights: a non-float tensor, or a scale tensor beside one."""
    return any(dtype not in FLOATS or name.rpartition(".")[2] in QUANT_TENSORS for name, dtype, _ in tensors)


def _item(name: str, dtype: str, shape: tuple[int, ...], ctx: Context, experts: int,
          quantized: bool) -> tuple[str, str, str, tuple[int, ...], int, int | None, bool, str | None]:
    role, tp, layer = classify(name, shape, ctx)
    pattern = pattern_of(name, layer)
    count = 1
    if role == "experts" and ".experts.{n}." not in pattern and len(shape) >= 2 and shape[0] == experts:
        count, shape = shape[0], shape[1:]  # a stack of experts in one tensor
    linear = not quantized and role in LINEAR_ROLES and name.endswith(("weight", "_proj")) and len(shape) == 2
    stored = dtype if quantized or dtype == "F32" else None
    return pattern, role, tp, shape, count, layer, linear, stored


def header_table(checkpoint: Checkpoint, model: ModelConfig) -> Table:
    ctx = Context(hidden=model.hidden_size, layer_kinds=model.layer_kinds,
                  encoder_decoder=bool(model.raw.get("is_encoder_decoder")))
    quantized = _quantized(checkpoint.tensors)
    experts = int(model.field("num_experts") or 0)
    items = [_item(name, dtype, shape, ctx, experts, quantized) for name, dtype, shape in checkpoint.tensors]
    items = [i for i in items if i[5] is None or i[5] < model.num_layers]  # MTP layers: the recipe
    rows = tuple(group_rows(items))
    tied = not any(r.role == "lm_head" for r in rows)
    notes = ("weights as the checkpoint stores them (a weights_dtype does not apply to a quantized checkpoint)",) \
        if quantized else ()
    return Table(name=checkpoint.where, model_class="safetensors headers", num_layers=model.num_layers, tied=tied,
                 rows=rows, notes=notes)


def checkpoint_parts(model: ModelConfig) -> ModelParts | None:
    """The parts of the checkpoint beside the model's config file, or None when there is none."""
    source = Path(model.source)
    if not source.is_file():
        return None
    found = find_checkpoint(source)
    if found is None:
        return None
    table = header_table(found, model)
    return table_parts(table, model, f"safetensors headers of {found.where}")
