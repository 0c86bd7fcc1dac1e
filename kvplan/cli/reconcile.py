"""`kvplan reconcile`: an engine's start-up log next to kvplan's numbers."""

from __future__ import annotations

import io
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kvplan.cli.engine_options import EngineArgs, Engines, memory_options
from kvplan.cli.expand import Expand, command, given_options
from kvplan.cli.options import Json, KvDtypeOrNone, ModelOrNone, cache_options, listed
from kvplan.errors import InputError
from kvplan.formulas.request import CacheRequest

if TYPE_CHECKING:
    from kvplan.reconcile.parse import StartupLog

# capacity's cache options but the batch (a log holds no batch); the KV dtype: one, or the log's
ReconcileCache = Annotated[CacheRequest, Expand(cache_options, without=("batch", "kv_dtype"))]
# capacity's memory options but overhead/non-torch: they replace budget estimates, and reconcile recomputes the
# budget from the terms the log prints, not from kvplan's estimates
ReconcileMemory = Annotated[Any, Expand(memory_options, without=("overhead_bytes", "non_torch_bytes"))]
CACHE_FIELDS = ("tp", "pp", "dcp", "dp", "ep", "max_model_len", "block_size")  # those a log may state


def read_log(name: str, engine: str | None) -> StartupLog:
    """The log's start-up records: a file, or standard input for '-', read in one pass (undecodable bytes become
    U+FFFD)."""
    from kvplan.reconcile.scan import read_startup_log

    try:
        if name == "-":
            stdin = getattr(sys.stdin, "buffer", None)
            if stdin is None:  # a text stream without bytes beneath it (an embedding program's)
                return read_startup_log(io.BytesIO(sys.stdin.read().encode("utf-8", errors="replace")), engine)
            return read_startup_log(stdin, engine)
        with Path(name).open("rb") as handle:
            return read_startup_log(handle, engine)
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise InputError(f"cannot read the log {name}: {reason}") from None


Log = Annotated[str, typer.Argument(help="A vLLM, SGLang or TensorRT-LLM start-up log; - reads stdin.",
                                    metavar="LOGFILE", show_default=False)]


@command
def reconcile(logfile: Log, cache: ReconcileCache, settings: EngineArgs, memory: ReconcileMemory,
              model: ModelOrNone = None, engine: Engines = None, kv_dtype: KvDtypeOrNone = None,
              json: Json = False) -> None:
    """Recompute every KV number an engine's start-up log prints; exit 1 if any differs from kvplan. Takes
    capacity's options: each is used where the log does not say, and one that disagrees with the log is refused
    (the engine: recognized from the log; a release, vllm@0.25, gives the rules where the log prints no
    version)."""
    from kvplan.cli.common import emit
    from kvplan.reconcile import Options
    from kvplan.reconcile import reconcile as run
    from kvplan.render.reconcile import reconcile_payload, reconcile_tables

    engines = listed(engine, "engine", "") if engine else ()
    if len(engines) > 1:
        raise InputError("reconcile reads one engine's log: give one engine", arg="engine")
    # an option given on the command line (not left at its default) states a value the log may contradict, a flag
    # that repeats a default (--tp 1) too
    given = {name: getattr(cache, name) for name in sorted(given_options() & set(CACHE_FIELDS))}
    options = Options(model=model, engine=engines[0] if engines else None, kv_dtype=kv_dtype,
                      cache=cache, settings=settings, memory=memory, **given)
    result = run(read_log(logfile, engines[0] if engines else None), options)
    emit(reconcile_payload(result), json, reconcile_tables)
    if not result.ok:
        raise typer.Exit(1)
