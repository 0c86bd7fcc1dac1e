"""`kvplan reconcile`: an engine's start-up log next to kvplan's numbers."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from kvplan.cli.engine_options import Engines, Gpu
from kvplan.cli.expand import command
from kvplan.cli.options import Json, KvDtypeOrNone, MaxModelLen, ModelOrNone, PpOrNone, TpOrNone, listed
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


Log = Annotated[str, typer.Argument(help="A vLLM, SGLang or TensorRT-LLM start-up log; - reads stdin.",
                                    metavar="LOGFILE", show_default=False)]


@command
def reconcile(logfile: Log, model: ModelOrNone = None, tp: TpOrNone = None, pp: PpOrNone = None,
              max_model_len: MaxModelLen = None, engine: Engines = None, gpu: Gpu = None,
              kv_dtype: KvDtypeOrNone = None, json: Json = False) -> None:
    """Recompute every KV number an engine's start-up log prints; exit 1 if any differs from kvplan. Each option
    is used where the log does not say (the engine: recognized from the log)."""
    from kvplan.cli.common import emit
    from kvplan.reconcile import Options, parse_log
    from kvplan.reconcile import reconcile as run
    from kvplan.render.reconcile import reconcile_payload, reconcile_tables

    engines = listed(engine, "engine", "") if engine else ()
    if len(engines) > 1:
        raise InputError("reconcile reads one engine's log: give one engine", arg="engine")
    options = Options(model=model, tp=tp, pp=pp, kv_dtype=kv_dtype, gpu=gpu,
                      max_model_len=parse_positive_tokens(max_model_len, "max_model_len") if max_model_len else None)
    result = run(parse_log(read_log(logfile), engines[0] if engines else None), options)
    emit(reconcile_payload(result), json, reconcile_tables)
    if not result.ok:
        raise typer.Exit(1)
