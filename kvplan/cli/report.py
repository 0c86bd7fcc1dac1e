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
from typing import Annotated, Any

import typer

from kvplan.cli.engine_options import EngineArgs, Engines, MemoryArgs
from kvplan.cli.expand import Expand, command, fail
from kvplan.cli.options import OUTPUT, Json, KvDtypes, ModelArgs, cache_options, listed, option
from kvplan.errors import InputError
from kvplan.formulas import CacheRequest

Probe = Annotated[list[str] | None, option("--probe", "A `kvplan probe --json` file: measured next to predicted "
                                           "(repeatable).", OUTPUT, "FILE")]
Output = Annotated[str | None, option("--output", "The HTML file to write (also -o; '-': standard output); default: "
                                      "MODEL-report.html.", OUTPUT, "FILE")]
UNSHOWN = ("output", "json")  # options that do not change the page: left out of the command it shows
# The KV dtypes are a list (compared); the report plans one request at a time, no batch.
ReportCache = Annotated[CacheRequest, Expand(cache_options, without=(
    "kv_dtype", "batch", "attention", "kv_heads", "layer_types", "window"))]


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


@command
def report(ctx: typer.Context, model: ModelArgs, cache: ReportCache, *, engine: Engines = None,
           kv_dtype: KvDtypes = None, settings: EngineArgs, memory: MemoryArgs, probe: Probe = None,
           output: Output = None, json: Json = False) -> None:
    """One self-contained HTML page: inputs, sizes with formulas, memory per engine, capacity, curves, probe."""
    from kvplan.planning.request import CapacityRequest
    from kvplan.render import to_json
    from kvplan.render.html import report_html
    from kvplan.render.report import report_payload
    from kvplan.workflows.report import ReportRequest
    from kvplan.workflows.report import report as build

    request = ReportRequest(question=CapacityRequest(model=model, cache=cache, settings=settings, memory=memory),
                            engines=listed(engine, "engine", "all"), kv_dtypes=listed(kv_dtype, "kv_dtype", "auto"),
                            probes=tuple(read_probe(p) for p in probe or []))
    payload = report_payload(build(request))
    for warning in payload.warnings:
        print(f"kvplan: {warning}", file=sys.stderr)
    if json:
        print(to_json(payload))
    if output or not json:
        write_page(report_html(payload, shown_command(ctx)), output or default_output(ctx.params["model"]))
