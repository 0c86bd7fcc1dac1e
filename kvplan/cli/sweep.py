"""`kvplan sweep`: sizes over a grid, as a table, CSV, JSON lines or a plot."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from kvplan.cli.common import BlockSize, KvDtypeOpt, Revision, emit, reports_errors
from kvplan.config import load_model

if TYPE_CHECKING:
    from kvplan.workflows.sweep import EngineAxis, Sweep

Axis = "`a..b` doubles from a to b (1k..128k); or a comma list (1,2,4)."


@reports_errors
def sweep(
    models: Annotated[list[str], typer.Argument(help="One or more model ids, config.json files or folders.")],
    seq_len: Annotated[str, typer.Option("--seq-len", help=f"Tokens per sequence: {Axis}")],
    batch: Annotated[str, typer.Option("--batch", help=f"Sequences: {Axis}")] = "1",
    tp: Annotated[str, typer.Option("--tp", help=f"Tensor-parallel sizes: {Axis}")] = "1",
    pp: Annotated[str, typer.Option("--pp", help=f"Pipeline-parallel sizes: {Axis}")] = "1",
    kv_dtype: KvDtypeOpt = "auto", block_size: BlockSize = 16,
    csv: Annotated[str | None, typer.Option("--csv", help="Write CSV to this file ('-': stdout).")] = None,
    json: Annotated[bool, typer.Option("--json", help="Print JSON lines, one object per point.")] = False,
    plot: Annotated[str | None, typer.Option("--plot", help="Draw KV memory vs context to a .png/.svg file.")] = None,
    gpu: Annotated[str | None, typer.Option("--gpu", help="Plot: draw this GPU's memory (H100, A100-40G...).")] = None,
    kv_budget: Annotated[str | None, typer.Option("--kv-budget", help="KV memory per GPU (20GiB): the plot's "
                                                  "budget line, and the engines' budget with --engine.")] = None,
    engine: Annotated[str | None, typer.Option("--engine", help="Add capacity columns for these engines "
                                               "(vllm,sglang,trtllm,hf); --plot then draws concurrency.")] = None,
    revision: Revision = None,
) -> None:
    """KV-cache sizes over models × tp × pp × kv-dtype [× engine] × seq-len × batch."""
    from kvplan.render.workflows import sweep_tables
    from kvplan.workflows.ranges import parse_int_axis, parse_str_axis
    from kvplan.workflows.sweep import sweep as run_sweep

    if plot:
        from kvplan.render.plot import check_plot_path

        check_plot_path(plot)
    result = run_sweep([load_model(m, revision=revision) for m in models], seq_lens=parse_int_axis(seq_len, "--seq-len"), batches=parse_int_axis(batch, "--batch"),
                       tps=parse_int_axis(tp, "--tp"), pps=parse_int_axis(pp, "--pp"),
                       kv_dtypes=parse_str_axis(kv_dtype, "--kv-dtype"), block_size=block_size,
                       engines=_engines(engine, gpu, kv_budget))
    for note in result.notes:
        print(f"kvplan: {note}", file=sys.stderr)
    _write(result, csv, json)
    if plot:
        _plot(result, plot, gpu, kv_budget)
    if not (csv or json or plot):
        emit(result, False, sweep_tables)


def _write(result: Sweep, csv: str | None, json: bool) -> None:
    """CSV to a file or stdout ('-'), and JSON lines to stdout."""
    from kvplan.render.workflows import write_csv, write_json_lines

    if csv == "-":
        write_csv(result, sys.stdout)
    elif csv:
        with open(csv, "w", newline="") as out:
            write_csv(result, out)
    if json:
        write_json_lines(result, sys.stdout)


def _engines(engine: str | None, gpu: str | None, kv_budget: str | None) -> EngineAxis | None:
    if not engine:
        return None
    from kvplan.planning.budget import parse_budget
    from kvplan.workflows.ranges import parse_str_axis
    from kvplan.workflows.sweep import EngineAxis

    return EngineAxis(engines=parse_str_axis(engine, "--engine"), gpu=gpu,
                      kv_budget_bytes=parse_budget(kv_budget) if kv_budget else None)


def _plot(result: Sweep, path: str, gpu: str | None, kv_budget: str | None) -> None:
    from kvplan.render.plot import capacity_series, memory_series, plot_capacity, plot_memory
    from kvplan.units import parse_bytes

    names = list(dict.fromkeys(row[0] for row in result.rows))
    models = names[0] if len(names) == 1 else f"{len(names)} models"
    if "engine" in result.columns:
        where = f" on {gpu}" if gpu else f" with {kv_budget} of KV per GPU" if kv_budget else ""
        plot_capacity(capacity_series(result), path, title=f"Max concurrency vs context{where}: {models}")
        print(f"kvplan: wrote {path}", file=sys.stderr)
        return
    lines = len({(*row[:4], row[7]) for row in result.rows})  # model, tp, pp, dtype, batch
    if lines > 12:
        print(f"kvplan: note: {lines} lines in one plot; narrow --batch/--tp/--kv-dtype for a readable one",
              file=sys.stderr)
    device = None
    if gpu:
        from kvplan.planning.gpus import lookup_gpu

        device = lookup_gpu(gpu)
    plot_memory(memory_series(result), path, title=f"KV cache per GPU vs context: {models}",
                gpu_name=device.name if device else None, gpu_memory_bytes=device.memory_bytes if device else None,
                kv_budget_bytes=parse_bytes(kv_budget) if kv_budget else None)
    print(f"kvplan: wrote {path}", file=sys.stderr)
