"""`kvplan size` and `kvplan models`."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from kvplan.cli.common import (
    Attention,
    BlockSize,
    Dcp,
    Explain,
    Json,
    KvDtypeOpt,
    KvHeads,
    LayerTypes,
    Model,
    ModelDtype,
    Pp,
    QuantGroup,
    Revision,
    SsmStateDtype,
    StateDtype,
    Tp,
    Window,
    batch_option,
    emit,
    length_option,
    overrides,
    reports_errors,
)
from kvplan.config import bundled_index, load_model, with_dtype
from kvplan.errors import KvplanError
from kvplan.formulas import KvCacheResult, kv_cache
from kvplan.render.size import model_row, models_tables, size_payload, size_tables
from kvplan.units import parse_count, parse_positive_tokens, parse_tokens

SeqLen = Annotated[str | None, length_option("Tokens per sequence (4096, 32k); default: the model's max length.")]
Batch = Annotated[str, batch_option("Number of sequences.")]
SharedPrefix = Annotated[str, typer.Option("--shared-prefix", help="Prompt tokens all --batch requests share "
                                           "(prefix caching; paged engines share full blocks only).")]
BeamWidth = Annotated[int, typer.Option("--beam-width", help="Beams per request.")]
PromptLen = Annotated[str | None, typer.Option("--prompt-len", help="Prompt tokens of --seq-len (shared by the "
                                               "beams); the rest is generated per beam. Default: all.")]
Allocator = Annotated[str | None, typer.Option("--allocator", help="contiguous|paged|exact: the allocator "
                                               "reported in the workload section (all three are shown).")]


def _workload(result: KvCacheResult, payload: dict[str, Any], shared_prefix: str, beam_width: int,
              prompt_len: str | None, allocator: str | None) -> tuple[dict[str, Any], Any]:
    """The payload and tables, with the workload section when one of its options is given."""
    prefix_tokens = parse_tokens(shared_prefix)
    if not prefix_tokens and beam_width == 1 and prompt_len is None and allocator is None:
        return payload, size_tables
    from kvplan.render.workflows import size_and_workload_tables, workload_payload
    from kvplan.workflows.size_section import size_workload

    memory = size_workload(result, shared_prefix_tokens=prefix_tokens, beam_width=beam_width,
                           prompt_tokens=parse_positive_tokens(prompt_len, "--prompt-len") if prompt_len else None,
                           allocator=allocator)
    return {**payload, "workload": workload_payload(memory, allocator or "paged")}, size_and_workload_tables


@reports_errors
def size(
    model: Model,
    tp: Tp = 1, pp: Pp = 1, dcp: Dcp = 1, seq_len: SeqLen = None, batch: Batch = "1", kv_dtype: KvDtypeOpt = "auto",
    block_size: BlockSize = 16, quant_group: QuantGroup = 8, attention: Attention = None, kv_heads: KvHeads = None,
    layer_types: LayerTypes = None, window: Window = None, json: Json = False, explain: Explain = False,
    state_dtype: StateDtype = "auto", shared_prefix: SharedPrefix = "0", beam_width: BeamWidth = 1,
    prompt_len: PromptLen = None, allocator: Allocator = None, revision: Revision = None, dtype: ModelDtype = "auto",
    ssm_state_dtype: SsmStateDtype = "auto",
) -> None:
    """KV cache per token, per sequence and per GPU."""
    m = with_dtype(load_model(model, revision=revision), dtype)
    result = kv_cache(
        m, tp=tp, pp=pp, dcp=dcp, batch=parse_count(batch, "--batch"),
        seq_len=parse_positive_tokens(seq_len, "--max-model-len") if seq_len is not None else None,
        kv_dtype=kv_dtype, block_size=block_size, quant_group=quant_group,
        overrides=overrides(attention, kv_heads, layer_types, window, m.num_layers), state_dtype=state_dtype,
        ssm_state_dtype=ssm_state_dtype)
    payload, tables = _workload(result, size_payload(result), shared_prefix, beam_width, prompt_len, allocator)
    lines = None
    if explain:
        from kvplan.render.explain import explain as explain_lines

        lines = explain_lines(result)
    emit(payload, json, tables, lines, notes=result.notes)


@reports_errors
def models(json: Json = False) -> None:
    """The bundled models: attention kind, layers, KV heads, head dim, bytes per token."""
    rows, refused = [], []
    for model_id in bundled_index():
        try:
            rows.append(model_row(kv_cache(load_model(model_id), seq_len=1)))
        except KvplanError as exc:  # a config kvplan refuses names the field in one line
            refused.append(f"warning: not sized: {model_id}: {str(exc).rpartition('config.json: ')[2]}")
    emit(rows, json, models_tables, notes=refused)
