"""`kvplan compare`: several models side by side under one layout."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from kvplan.cli.common import (
    BlockSize,
    Dcp,
    Json,
    KvDtypes,
    ModelDtype,
    Pp,
    QuantGroup,
    Revision,
    Tp,
    batch_option,
    emit,
    length_option,
    reports_errors,
)
from kvplan.config import load_model, with_dtype
from kvplan.errors import InputError
from kvplan.units import parse_count, parse_positive_tokens

if TYPE_CHECKING:
    from kvplan.workflows.compare import Comparison


@reports_errors
def compare(
    models: Annotated[list[str], typer.Argument(help="Two or more model ids, config.json files or folders.")],
    seq_len: Annotated[str | None, length_option("Tokens per sequence (32k); default: each model's max length.")]
    = None,
    batch: Annotated[str, batch_option("Number of sequences.")] = "1",
    tp: Tp = 1, pp: Pp = 1, dcp: Dcp = 1, kv_dtype: KvDtypes = "auto", block_size: BlockSize = 16,
    quant_group: QuantGroup = 8, json: Json = False,
    plot: Annotated[str | None, typer.Option("--plot", help="Draw per-layer-group stacked bars to a .png/.svg.")] = None,
    engine: Annotated[str | None, typer.Option("--engine", help="Also compare these engines' capacity "
                                               "(vllm,sglang,trtllm,hf, or releases: vllm@0.11) at max_model_len = --max-model-len.")] = None,
    gpu: Annotated[str | None, typer.Option("--gpu", help="With --engine: the GPU (H100, A100-80G...).")] = None,
    kv_budget: Annotated[str | None, typer.Option("--kv-budget", help="With --engine: KV memory per GPU "
                                                  "(20GiB), instead of the GPU's estimate.")] = None,
    revision: Revision = None, dtype: ModelDtype = "auto",
) -> None:
    """Bytes per token, per sequence and per GPU of several models, side by side."""
    from kvplan.cli.values import kv_budget as kv_budget_option
    from kvplan.render.workflows import compare_payload, compare_tables
    from kvplan.workflows.compare import compare as run_compare
    from kvplan.workflows.ranges import parse_str_axis

    if len(models) < 2:
        raise InputError(f"compare takes two or more models, got {len(models)}; for one model use kvplan size "
                         f"{models[0] if models else 'MODEL'}")
    if plot:
        from kvplan.render.plot import check_plot_path

        check_plot_path(plot)
    engines = parse_str_axis(engine, "--engine") if engine else ()
    budget = kv_budget_option(kv_budget) if kv_budget and engines else None
    result = run_compare([with_dtype(load_model(m, revision=revision), dtype) for m in models],
                         seq_len=parse_positive_tokens(seq_len, "--max-model-len") if seq_len else None,
                         batch=parse_count(batch, "--batch"), tp=tp, pp=pp, dcp=dcp,
                         kv_dtype=parse_str_axis(kv_dtype, "--kv-cache-dtype"),
                         block_size=block_size, quant_group=quant_group, engines=engines, gpu=gpu,
                         kv_budget_bytes=budget)
    emit(compare_payload(result), json, compare_tables, notes=result.notes)
    if plot:
        _plot(result, plot, tp, pp)


def _plot(result: Comparison, path: str, tp: int, pp: int) -> None:
    from kvplan.render.plot import plot_layer_groups

    lengths = sorted({r.seq_len for r in result.results})
    context = f"{lengths[0]:,} tokens" if len(lengths) == 1 else "each model's max length"
    plot_layer_groups(result.results, path, title=f"KV cache per sequence per GPU by layer group ({context}, "
                      f"tp {tp} pp {pp})")
    print(f"kvplan: wrote {path}", file=sys.stderr)
