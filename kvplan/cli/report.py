"""`kvplan report`: one self-contained HTML page (and its JSON) for a model on a GPU under the engines.

The options take vLLM's names (`--tensor-parallel-size`, `--max-model-len`, `--kv-cache-dtype`,
`--gpu-memory-utilization`, ...), with kvplan's short forms as aliases. The command parses, calls
``kvplan.workflows.report``, renders the payload and the page, and writes the file.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kvplan.cli.common import (
    Dcp,
    Model,
    ModelDtype,
    Pp,
    QuantGroup,
    Revision,
    SsmStateDtype,
    StateDtype,
    Tp,
    fail,
    length_option,
    reports_errors,
)
from kvplan.cli.engine_options import (
    Batched,
    BlockSizeOpt,
    Dp,
    FreeFraction,
    Gpu,
    GpuMem,
    GpuUtil,
    KvBudget,
    MemFraction,
    NoAsync,
    NoHybrid,
    Overhead,
    Quantization,
    WeightsDtype,
    engine_settings,
    weights_option,
)
from kvplan.errors import InputError
from kvplan.units import parse_bytes, parse_positive_tokens

if TYPE_CHECKING:
    from kvplan.config import ModelConfig
    from kvplan.workflows.report import ReportRequest

MaxModelLen = Annotated[str | None, length_option("Tokens per request (32k); default: the model's.")]
Engines = Annotated[list[str] | None, typer.Option("--engine", help="vllm, sglang, trtllm, hf or all: a comma list "
                                                   "or repeated (default: all).")]
KvDtypes = Annotated[list[str] | None, typer.Option("--kv-cache-dtype", "--kv-dtype", help="KV dtypes to compare: "
                                                    "auto, fp8, int8, ... (comma list or repeated; default auto).")]
Probe = Annotated[list[str] | None, typer.Option("--probe", help="A `kvplan probe --json` file: measured next to "
                                                 "predicted (repeatable).")]
Output = Annotated[str | None, typer.Option("--output", "-o", help="The HTML file to write ('-': standard output); "
                                            "default: MODEL-report.html.")]
Json = Annotated[bool, typer.Option("--json", help="Print the page's JSON (writes the page only with -o).")]
UNSHOWN = ("output", "json")  # options that do not change the page: left out of the command it shows


def listed(values: list[str] | None, default: str) -> tuple[str, ...]:
    """Repeated options and comma lists -> one tuple ('auto,fp8' -> ('auto', 'fp8'))."""
    return tuple(v.strip() for item in values or [default] for v in item.split(",") if v.strip())


def read_probe(path: str) -> dict[str, Any]:
    from kvplan.workflows.probe_file import check_probe

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"--probe {path}: cannot read it ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        return check_probe(json.loads(text), path)
    except json.JSONDecodeError as exc:
        raise InputError(f"--probe {path}: not JSON ({exc.msg}, line {exc.lineno})") from None


def shown_command(ctx: typer.Context) -> str:
    """The command line that makes this page, options under their vLLM names, defaults left out."""
    words = ["kvplan", "report"]
    for param in ctx.command.params:
        value = ctx.params.get(param.name or "")
        if param.name in UNSHOWN or value in (None, False, [], ()) or value == param.default:
            continue
        if param.param_type_name == "argument":
            words.append(str(value))
        else:
            words += [param.opts[0]] if value is True else [param.opts[0], ",".join(value) if isinstance(value, list)
                                                            else str(value)]
    return shlex.join(words)


def default_output(model: str) -> str:
    name = Path(model.rstrip("/")).name or "model"
    return re.sub(r"[^\w.-]+", "-", name) + "-report.html"


def write_page(page: str, output: str) -> None:
    if output == "-":
        sys.stdout.write(page)
        return
    try:
        Path(output).write_text(page, encoding="utf-8")
    except OSError as exc:
        raise fail(f"cannot write -o {output}: {exc.strerror or exc}") from None
    print(f"kvplan: wrote {output} ({len(page.encode()) / 1024:,.0f} KB)", file=sys.stderr)


@reports_errors
def report(
    ctx: typer.Context, model: Model, gpu: Gpu = None, tensor_parallel_size: Tp = 1, pipeline_parallel_size: Pp = 1,
    decode_context_parallel_size: Dcp = 1, max_model_len: MaxModelLen = None, engine: Engines = None,
    kv_cache_dtype: KvDtypes = None, block_size: BlockSizeOpt = None, kv_budget: KvBudget = None,
    gpu_mem: GpuMem = None, overhead: Overhead = None, weights_dtype: WeightsDtype = None,
    gpu_memory_utilization: GpuUtil = None, mem_fraction_static: MemFraction = None,
    free_gpu_memory_fraction: FreeFraction = None, max_num_batched_tokens: Batched = None, dp: Dp = 1,
    disable_hybrid_kv_cache_manager: NoHybrid = False, no_async_scheduling: NoAsync = False,
    quant_group: QuantGroup = 8, state_dtype: StateDtype = "auto", ssm_state_dtype: SsmStateDtype = "auto", probe: Probe = None,
    output: Output = None, json: Json = False, dtype: ModelDtype = "auto", quantization: Quantization = None,
    revision: Revision = None,
) -> None:
    """One self-contained HTML page: inputs, sizes with formulas, memory per engine, capacity, curves, probe."""
    from kvplan.config import load_model, with_dtype
    from kvplan.render import to_json
    from kvplan.render.html import report_html
    from kvplan.render.report import report_payload
    from kvplan.workflows.report import report as build

    m = with_dtype(load_model(model, revision=revision), dtype)
    request = _request(ctx.params, m, engine_settings(locals()), [read_probe(p) for p in probe or []])
    payload = report_payload(build(m, request))
    for warning in payload["warnings"]:
        print(f"kvplan: {warning}", file=sys.stderr)
    if json:
        print(to_json(payload))
    if output or not json:
        write_page(report_html(payload, shown_command(ctx)), output or default_output(model))


def _request(p: dict[str, Any], model: ModelConfig, settings: Any, probes: list[dict[str, Any]]) -> ReportRequest:
    from kvplan.planning.budget import parse_budget
    from kvplan.workflows.report import ReportRequest

    return ReportRequest(
        engines=listed(p["engine"], "all"), kv_dtypes=listed(p["kv_cache_dtype"], "auto"),
        tp=p["tensor_parallel_size"], pp=p["pipeline_parallel_size"], dcp=p["decode_context_parallel_size"],
        max_model_len=parse_positive_tokens(p["max_model_len"], "--max-model-len") if p["max_model_len"] else None,
        gpu=p["gpu"], gpu_memory_bytes=parse_bytes(p["gpu_mem"]) if p["gpu_mem"] is not None else None,
        kv_budget_bytes=parse_budget(p["kv_budget"]) if p["kv_budget"] else None,
        overhead_bytes=parse_bytes(p["overhead"]) if p["overhead"] is not None else None,
        weights_dtype=weights_option(model, p["weights_dtype"], p["quantization"]), settings=settings, quant_group=p["quant_group"],
        state_dtype=p["state_dtype"], ssm_state_dtype=p["ssm_state_dtype"], probes=tuple(probes))
