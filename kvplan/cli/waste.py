"""`kvplan waste`: max-length preallocation vs paging vs exact, for a list of real lengths."""

from __future__ import annotations

from typing import Annotated

from kvplan.cli.common import emit
from kvplan.cli.expand import Expand, command
from kvplan.cli.options import CACHE, Json, ModelArgs, cache_options, option
from kvplan.formulas import CacheRequest

SPEC_HELP = "uniform:LO..HI:N, normal:MEAN,STD:N, lognormal:MEDIAN,SIGMA:N or fixed:LEN:N"  # see workflows/lengths.py
Lengths = Annotated[str, option("--lengths", f"File with one length per line, or {SPEC_HELP}.", CACHE, "LENGTHS")]
# Each length is one request: no batch; DP attention is an engine's.
WasteCache = Annotated[CacheRequest, Expand(cache_options, without=("batch", "dp", "ep", "dcp"))]


@command
def waste(model: ModelArgs, cache: WasteCache, lengths: Lengths, json: Json = False) -> None:
    """Memory each allocator needs for the given sequence lengths (each preallocated --max-model-len tokens),
    and the share that is waste."""
    from kvplan.errors import InputError
    from kvplan.render.workflows import waste_payload, waste_tables
    from kvplan.workflows.lengths import lengths_from
    from kvplan.workflows.waste import waste as run_waste

    if cache.max_model_len is None:
        raise InputError("waste needs max_model_len: the tokens preallocated per sequence (4k)", arg="max_model_len")
    result = run_waste(model, cache, lengths=lengths_from(lengths, cache.max_model_len))
    emit(waste_payload(result), json, waste_tables)
