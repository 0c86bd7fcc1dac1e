"""`kvplan sweep`: sizes over a grid, as a table, CSV, JSON lines or a plot."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from kvplan.cli.common import (
    PP_NAMES,
    TP_NAMES,
    BlockSize,
    KvDtypes,
    ModelDtype,
    QuantGroup,
    Revision,
    SsmStateDtype,
    StateDtype,
    batch_option,
    emit,
    length_option,
    print_notes,
    reports_errors,
)
from kvplan.cli.values import kv_budget as kv_budget_option
from kvplan.config import load_model, with_dtype

if TYPE_CHECKING:
    from kvplan.workflows.sweep import EngineAxis, Sweep

Axis = "`a..b` doubles from a to b (1k..128k); or a comma list (1,2,4)."


Csv = Annotated[str | None, typer.Option("--csv", help="Write CSV to this file ('-': stdout).")]
JsonLines = Annotated[bool, typer.Option("--json", help="Print JSON lines, one object per point.")]
Plot = Annotated[str | None, typer.Option("--plot", help="Draw KV memory (or, with --engine, concurrency) vs context to "
                                          "a .png/.svg file (needs kvplan\\[plot]).")]
Gpu = Annotated[str | None, typer.Option("--gpu", help="The GPU: the engines' budget with --engine, and the plot's "
                                         "memory line (H100, A100-40G...).")]
KvBudget = Annotated[str | None, typer.Option("--kv-budget", help="KV memory per GPU (20GiB): the plot's budget line, "
                                              "and the engines' budget with --engine.")]
Engine = Annotated[str | None, typer.Option("--engine", help="Add capacity columns for these engines "
                                            "(vllm,sglang,trtllm,hf, or releases: vllm@0.11); --plot then draws concurrency.")]


@reports_errors
def sweep(
    models: Annotated[list[str], typer.Argument(help="One or more model ids, config.json files or folders.")],
    seq_len: Annotated[str, length_option(f"Tokens per sequence: {Axis}")],
    batch: Annotated[str, batch_option(f"Sequences: {Axis}")] = "1",
    tp: Annotated[str, typer.Option(*TP_NAMES, help=f"Tensor-parallel sizes: {Axis}")] = "1",
    pp: Annotated[str, typer.Option(*PP_NAMES, help=f"Pipeline-parallel sizes: {Axis}")] = "1",
    kv_dtype: KvDtypes = "auto", block_size: BlockSize = 16, csv: Csv = None, json: JsonLines = False,
    plot: Plot = None, gpu: Gpu = None, kv_budget: KvBudget = None, engine: Engine = None, revision: Revision = None,
    dtype: ModelDtype = "auto", quant_group: QuantGroup = 8, state_dtype: StateDtype = "auto",
    ssm_state_dtype: SsmStateDtype = "auto",
) -> None:
    """KV-cache sizes over models × tp × pp × kv-dtype [× engine] × seq-len × batch.

    A table (first 200 rows) unless --json or --csv is given; --plot FILE draws the plot as well.
    """
    from kvplan.cli.progress import progress
    from kvplan.render.notes import summarize_skipped
    from kvplan.render.workflows import sweep_tables
    from kvplan.units import parse_count
    from kvplan.workflows.ranges import parse_int_axis, parse_str_axis
    from kvplan.workflows.sweep import sweep as run_sweep

    _check_files(plot, csv)
    with progress("sweeping") as step:
        result = run_sweep([with_dtype(load_model(m, revision=revision), dtype) for m in models], seq_lens=parse_int_axis(seq_len, "--max-model-len"),
                           batches=parse_int_axis(batch, "--batch", parse_count),
                           tps=parse_int_axis(tp, "--tensor-parallel-size", parse_count),
                           pps=parse_int_axis(pp, "--pipeline-parallel-size", parse_count),
                           kv_dtypes=parse_str_axis(kv_dtype, "--kv-cache-dtype"), block_size=block_size,
                           engines=_engines(engine, gpu, kv_budget), progress=step, quant_group=quant_group,
                           state_dtype=state_dtype, ssm_state_dtype=ssm_state_dtype)
    _write(result, csv, json)
    if plot:
        _plot(result, plot, gpu, kv_budget)
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
    """CSV to a file or stdout ('-'), and JSON lines to stdout."""
    from kvplan.cli.files import write_text_file
    from kvplan.render.workflows import write_csv, write_json_lines

    if csv == "-":
        write_csv(result, sys.stdout)
    elif csv:
        write_text_file(csv, "--csv", lambda out: write_csv(result, out))
        print(f"kvplan: wrote {csv} ({len(result.rows):,} row{'s' if len(result.rows) != 1 else ''})",
              file=sys.stderr)
    if json:
        write_json_lines(result, sys.stdout)


def _engines(engine: str | None, gpu: str | None, kv_budget: str | None) -> EngineAxis | None:
    if not engine:
        return None
    from kvplan.workflows.ranges import parse_str_axis
    from kvplan.workflows.sweep import EngineAxis

    return EngineAxis(engines=parse_str_axis(engine, "--engine"), gpu=gpu,
                      kv_budget_bytes=kv_budget_option(kv_budget) if kv_budget else None)


def _plot(result: Sweep, path: str, gpu: str | None, kv_budget: str | None) -> None:
    from kvplan.render.plot import capacity_series, memory_series, plot_capacity, plot_memory

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
    budget = min(kv_budget_option(kv_budget)) if kv_budget else None
    plot_memory(memory_series(result), path, title=f"KV cache per GPU vs context: {models}",
                gpu_name=device.name if device else None, gpu_memory_bytes=device.memory_bytes if device else None,
                kv_budget_bytes=budget, room_bytes=_room(result, device.memory_bytes) if device else None,
                max_lengths=_max_lengths(names))
    print(f"kvplan: wrote {path}", file=sys.stderr)


def _room(result: Sweep, memory_bytes: int) -> dict[str, int]:
    """GPU memory minus the weights per GPU, per (model, tp, pp) of the sweep (at most 6; models whose
    weights kvplan cannot count are left out)."""
    from kvplan.config import load_model
    from kvplan.errors import KvplanError
    from kvplan.planning.weights import weight_bytes_per_gpu

    layouts = list(dict.fromkeys((row[0], row[1], row[2]) for row in result.rows))[:6]
    many = len({name for name, _, _ in layouts}) > 1
    room = {}
    for name, tp, pp in layouts:
        try:
            weights = weight_bytes_per_gpu(load_model(name), tp=tp, pp=pp)
        except KvplanError:
            continue
        room[(f"{name} " if many else "") + f"tp{tp} pp{pp}"] = memory_bytes - weights
    return room


def _max_lengths(names: list[str]) -> dict[str, int]:
    from kvplan.config import load_model

    models = [load_model(name) for name in names]
    return {m.model_id: m.max_model_len for m in models if m.max_model_len}
