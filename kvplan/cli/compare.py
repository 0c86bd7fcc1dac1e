"""`kvplan compare`: several models side by side under one layout."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from kvplan.cli.common import emit
from kvplan.cli.engine_options import EngineArgs, Engines, MemoryArgs
from kvplan.cli.expand import Expand, command
from kvplan.cli.options import Json, KvDtypes, ModelDtype, Plot, Revision, cache_options, listed
from kvplan.errors import InputError
from kvplan.formulas import CacheRequest

if TYPE_CHECKING:
    from kvplan.workflows.compare import Comparison

Models = Annotated[list[str], typer.Argument(help="Two or more model ids, config.json files or folders.",
                                             metavar="MODEL...", show_default=False)]
# The KV dtype is a list here; overrides describe one model, and DP attention is an engine's.
CompareCache = Annotated[CacheRequest, Expand(cache_options, without=(
    "kv_dtype", "dp", "ep", "attention", "kv_heads", "layer_types", "window"))]


@command
def compare(models: Models, cache: CompareCache, settings: EngineArgs, memory: MemoryArgs,
            kv_dtype: KvDtypes = None, engine: Engines = None, revision: Revision = None,
            dtype: ModelDtype = "auto", json: Json = False, plot: Plot = None) -> None:
    """Bytes per token, per sequence and per GPU of several models, side by side (with --engine, each engine's
    capacity too, on --gpu)."""
    from kvplan.config import load_model, with_dtype
    from kvplan.render.workflows import compare_payload, compare_tables
    from kvplan.workflows.compare import compare as run_compare

    if len(models) < 2:
        raise InputError(f"compare takes two or more models, got {len(models)}; for one model use kvplan size "
                         f"{models[0] if models else 'MODEL'}")
    if plot:
        from kvplan.render.plot import check_plot_path

        check_plot_path(plot)
    engines = listed(engine, "engine", "none") if engine else ()
    result = run_compare([with_dtype(load_model(m, revision=revision), dtype) for m in models],
                         cache, kv_dtypes=listed(kv_dtype, "kv_dtype", "auto"), engines=engines, settings=settings,
                         memory=memory)
    emit(compare_payload(result), json, compare_tables, notes=result.notes)
    if plot:
        _plot(result, plot, cache)


def _plot(result: Comparison, path: str, cache: CacheRequest) -> None:
    from kvplan.render.plot import plot_layer_groups

    lengths = sorted({r.max_model_len for r in result.results})
    context = f"{lengths[0]:,} tokens" if len(lengths) == 1 else "each model's max length"
    plot_layer_groups(result.results, path, title=f"KV cache per sequence per GPU by layer group ({context}, "
                      f"tp {cache.tp} pp {cache.pp})")
    print(f"kvplan: wrote {path}", file=sys.stderr)
