"""`kvplan sweep`: sizes over a grid, as a table, CSV, JSON lines or a plot."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from kvplan.cli.common import emit, print_notes
from kvplan.cli.engine_options import EngineArgs, Engines, MemoryArgs
from kvplan.cli.expand import Expand, command
from kvplan.cli.options import (
    OUTPUT,
    Batch,
    Json,
    KvDtypes,
    LengthAxis,
    ModelDtype,
    Plot,
    PpAxis,
    Revision,
    TpAxis,
    cache_options,
    listed,
    option,
)
from kvplan.engines import Settings
from kvplan.formulas import CacheRequest
from kvplan.planning.request import Memory

if TYPE_CHECKING:
    from kvplan.workflows.sweep import EngineAxis, Sweep

Models = Annotated[list[str], typer.Argument(help="One or more model ids, config.json files or folders.",
                                             metavar="MODEL...", show_default=False)]
Csv = Annotated[str | None, option("--csv", "Write CSV to this file ('-': stdout), row by row.", OUTPUT, "FILE")]
# tp, pp, the KV dtype, the length and the batch are the sweep's axes; overrides and DP attention are not swept.
SweepCache = Annotated[CacheRequest, Expand(cache_options, without=(
    "tp", "pp", "kv_dtype", "max_model_len", "batch", "dp", "ep", "dcp", "attention", "kv_heads", "layer_types", "window"))]


@command
def sweep(models: Models, max_model_len: LengthAxis, cache: SweepCache, settings: EngineArgs, memory: MemoryArgs,
          batch: Batch = "1", tp: TpAxis = "1", pp: PpAxis = "1", kv_dtype: KvDtypes = None,
          engine: Engines = None, revision: Revision = None, dtype: ModelDtype = "auto", csv: Csv = None,
          json: Json = False, plot: Plot = None) -> None:
    """KV-cache sizes over models × tp × pp × kv-dtype [× engine] × max-model-len × batch.

    A table (first 200 rows) unless --json (JSON lines) or --csv is given (both stream: memory stays flat
    however many rows); --plot FILE draws the plot as well (with --engine: concurrency). With --engine, the
    capacity columns plan with the GPU, budget and engine options given.
    """
    from kvplan.cli.progress import progress
    from kvplan.config import load_model, with_dtype
    from kvplan.render.notes import summarize_skipped
    from kvplan.render.workflows import sweep_tables
    from kvplan.units import parse_count
    from kvplan.workflows.ranges import parse_int_axis
    from kvplan.workflows.sweep import sweep as run_sweep

    _check_files(plot, csv)
    with progress("sweeping") as step:
        result = run_sweep([with_dtype(load_model(m, revision=revision), dtype) for m in models],
                           max_model_lens=parse_int_axis(max_model_len, "max_model_len"),
                           batches=parse_int_axis(batch, "batch", parse_count),
                           tps=parse_int_axis(tp, "tp", parse_count), pps=parse_int_axis(pp, "pp", parse_count),
                           kv_dtypes=listed(kv_dtype, "kv_dtype", "auto"), request=cache,
                           engines=_engines(engine, settings, memory), progress=step)
    _write(result, csv, json)
    if plot:
        _plot(result, plot, memory)
    notes = summarize_skipped(result.notes)
    if json or csv:
        print_notes(notes, as_json=False)
    else:
        emit(result, False, sweep_tables, notes=notes)


def _check_files(plot: str | None, csv: str | None) -> None:
    """Before any work: a plot or CSV file that cannot be written is one line and exit 2."""
    if plot:
        from kvplan.render.plot import check_plot_path

        check_plot_path(plot)
    if csv and csv != "-":
        from kvplan.cli.files import check_output_file

        check_output_file(csv, "--csv")


def _write(result: Sweep, csv: str | None, json: bool) -> None:
    """CSV to a file or stdout ('-'), and JSON lines to stdout, one row at a time."""
    from kvplan.cli.files import write_text_file
    from kvplan.render.workflows import write_csv, write_json_lines

    if csv == "-":
        write_csv(result, sys.stdout)
    elif csv:
        write_text_file(csv, "--csv", lambda out: write_csv(result, out))
        rows = result.num_rows
        print(f"kvplan: wrote {csv} ({rows:,} row{'s' if rows != 1 else ''})", file=sys.stderr)
    if json:
        write_json_lines(result, sys.stdout)


def _engines(engine: list[str] | None, settings: Settings, memory: Memory) -> EngineAxis | None:
    if not engine:
        return None
    from kvplan.workflows.sweep import EngineAxis

    return EngineAxis(engines=listed(engine, "engine", "vllm"), settings=settings, memory=memory)


def _plot(result: Sweep, path: str, memory: Memory) -> None:
    from kvplan.render.plot import capacity_series, memory_series, plot_capacity, plot_memory

    names = list(dict.fromkeys(layout.model.model_id for layout in result.layouts))
    models = names[0] if len(names) == 1 else f"{len(names)} models"
    budget = min(memory.kv_budget_bytes) if memory.kv_budget_bytes else None
    if result.engines:
        where = f" on {memory.gpu}" if memory.gpu else f" with {budget / 2**30:.2f} GiB of KV per GPU" if budget else ""
        plot_capacity(capacity_series(result), path, title=f"Max concurrency vs context{where}: {models}")
        print(f"kvplan: wrote {path}", file=sys.stderr)
        return
    lines = len(result.layouts) * len(result.batches)
    if lines > 12:
        print(f"kvplan: note: {lines} lines in one plot; narrow --batch/--tp/--kv-dtype for a readable one",
              file=sys.stderr)
    device = None
    if memory.gpu:
        from kvplan.planning.gpus import lookup_gpu

        device = lookup_gpu(memory.gpu)
    plot_memory(memory_series(result), path, title=f"KV cache per GPU vs context: {models}",
                gpu_name=device.name if device else None, gpu_memory_bytes=device.memory_bytes if device else None,
                kv_budget_bytes=budget, room_bytes=_room(result, device.memory_bytes) if device else None,
                max_lengths={layout.model.model_id: layout.model.max_model_len for layout in result.layouts
                             if layout.model.max_model_len})
    print(f"kvplan: wrote {path}", file=sys.stderr)


def _room(result: Sweep, memory_bytes: int) -> dict[str, int]:
    """GPU memory minus the weights per GPU, per (model, tp, pp) of the sweep (at most 6; models whose
    weights kvplan cannot count are left out)."""
    from kvplan.errors import KvplanError
    from kvplan.planning.weights import weight_bytes_per_gpu

    layouts = list(dict.fromkeys((layout.model, layout.tp, layout.pp) for layout in result.layouts))[:6]
    many = len({m.model_id for m, _, _ in layouts}) > 1
    room = {}
    for m, tp, pp in layouts:
        try:
            weights = weight_bytes_per_gpu(m, tp=tp, pp=pp)
        except KvplanError:
            continue
        room[(f"{m.model_id} " if many else "") + f"tp{tp} pp{pp}"] = memory_bytes - weights
    return room
