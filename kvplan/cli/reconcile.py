"""`kvplan reconcile`: an engine's start-up log next to kvplan's numbers."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from kvplan.cli.common import KV_DTYPE_NAMES, PP_NAMES, TP_NAMES, Json, length_option, reports_errors
from kvplan.errors import InputError
from kvplan.units import parse_positive_tokens

MAX_LOG_BYTES = 64 * 1024**2  # a start-up log is kilobytes; a bigger file is not one


def read_log(name: str) -> str:
    """The log's text: a file, or standard input for '-' (undecodable bytes become U+FFFD)."""
    try:
        if name == "-":
            return sys.stdin.read(MAX_LOG_BYTES)
        with Path(name).open("rb") as handle:
            return handle.read(MAX_LOG_BYTES).decode("utf-8", errors="replace")
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InputError(f"cannot read the log {name}: {reason}") from None


@reports_errors
def reconcile(
    logfile: Annotated[str, typer.Argument(help="A vLLM, SGLang or TensorRT-LLM start-up log; - reads stdin.")],
    model: Annotated[str | None, typer.Option("--model", help="The model, where the log names none or one "
                                              "kvplan cannot load (bundled id, config.json or folder).")] = None,
    tp: Annotated[int | None, typer.Option(*TP_NAMES, help="Tensor-parallel size, where the log does not say.")]
    = None,
    pp: Annotated[int | None, typer.Option(*PP_NAMES, help="Pipeline-parallel size, where the log does not say.")]
    = None,
    max_model_len: Annotated[str | None, length_option("Tokens (32k), where the log does not say.")] = None,
    engine: Annotated[str | None, typer.Option("--engine", help="vllm | sglang | trtllm (default: "
                                               "recognized from the log).")] = None,
    gpu: Annotated[str | None, typer.Option("--gpu", help="GPU type, for vLLM's attention backend "
                                            "(default H100).")] = None,
    kv_dtype: Annotated[str | None, typer.Option(*KV_DTYPE_NAMES, help="KV dtype, where the log does not say.")]
    = None,
    json: Json = False,
) -> None:
    """Recompute every KV number an engine's start-up log prints; exit 1 if any differs from kvplan."""
    from kvplan.cli.common import emit
    from kvplan.reconcile import Options, parse_log
    from kvplan.reconcile import reconcile as run
    from kvplan.render.reconcile import reconcile_payload, reconcile_tables

    for name, value in (("--tensor-parallel-size", tp), ("--pipeline-parallel-size", pp)):
        if value is not None and value <= 0:
            raise InputError(f"{name} must be positive, got {value}")
    options = Options(model=model, tp=tp, pp=pp, kv_dtype=kv_dtype, gpu=gpu,
                      max_model_len=parse_positive_tokens(max_model_len, "--max-model-len") if max_model_len else None)
    result = run(parse_log(read_log(logfile), engine), options)
    emit(reconcile_payload(result), json, reconcile_tables)
    if not result.ok:
        raise typer.Exit(1)
