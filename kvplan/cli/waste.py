"""`kvplan waste`: max-length preallocation vs paging vs exact, for a list of real lengths."""

from __future__ import annotations

from typing import Annotated

import typer

from kvplan.cli.common import (
    BlockSize,
    Json,
    KvDtypeOpt,
    Model,
    ModelDtype,
    Pp,
    Revision,
    Tp,
    emit,
    length_option,
    reports_errors,
)
from kvplan.config import load_model, with_dtype
from kvplan.units import parse_positive_tokens

SPEC_HELP = "uniform:LO..HI:N, normal:MEAN,STD:N, lognormal:MEDIAN,SIGMA:N or fixed:LEN:N"  # see workflows/lengths.py


@reports_errors
def waste(
    model: Model,
    max_seq_len: Annotated[str, length_option("Tokens preallocated per sequence (4096, 4k).")],
    lengths: Annotated[str, typer.Option("--lengths", help=f"File with one length per line, or {SPEC_HELP}.")],
    tp: Tp = 1, pp: Pp = 1, kv_dtype: KvDtypeOpt = "auto", block_size: BlockSize = 16, json: Json = False,
    revision: Revision = None, dtype: ModelDtype = "auto",
) -> None:
    """Memory each allocator needs for the given sequence lengths, and the share that is waste."""
    from kvplan.render.workflows import waste_payload, waste_tables
    from kvplan.workflows.lengths import lengths_from
    from kvplan.workflows.waste import waste as run_waste

    max_len = parse_positive_tokens(max_seq_len, "--max-model-len")
    result = run_waste(with_dtype(load_model(model, revision=revision), dtype), lengths=lengths_from(lengths, max_len), max_seq_len=max_len, tp=tp, pp=pp,
                       kv_dtype=kv_dtype, block_size=block_size)
    emit(waste_payload(result), json, waste_tables)
