"""`kvplan diff`."""

from __future__ import annotations

from typing import Annotated

from kvplan.cli.common import emit
from kvplan.cli.engine_options import EngineArgs, Engines, MemoryArgs
from kvplan.cli.expand import Expand, command
from kvplan.cli.launch import Asked, model_or_command, resolve
from kvplan.cli.options import Json, KvDtypes, cache_options
from kvplan.errors import InputError
from kvplan.formulas import CacheRequest
from kvplan.planning.request import CapacityRequest

# Each side's KV dtype is its own option (given twice: one per side); a diff holds no batch.
DiffCache = Annotated[CacheRequest, Expand(cache_options, without=("kv_dtype", "batch"))]
Model = Annotated[Asked, Expand(model_or_command)]
TWO = "give --engine twice (--engine vllm@0.25 --engine vllm@0.29), or --kv-cache-dtype twice"


def sides(values: list[str] | None, name: str, default: str) -> tuple[str, str]:
    """An option given once (both sides), twice (the first side, then the second) or not at all (`default`)."""
    items = [v.strip() for item in values or [] for v in item.split(",")]
    if any(not v for v in items) or len(items) > 2:
        raise InputError(f"{name} {','.join(values or [])!r}: diff compares two setups; {TWO}", arg=name)
    return (items[0], items[-1]) if items else (default, default)


@command
def diff(model: Model, cache: DiffCache, settings: EngineArgs, memory: MemoryArgs, engine: Engines = None,
         kv_dtype: KvDtypes = None, json: Json = False) -> None:
    """What changes between two setups of one question, quantity by quantity (budget terms, blocks, tokens,
    concurrency, verdict, log lines), and the release rule behind each change with its file:line: two releases
    (--engine vllm@0.25 --engine vllm@0.29), two engines, or two KV dtypes (--kv-cache-dtype given twice). The
    last line says it in one sentence."""
    from kvplan.render.diff import diff_payload, diff_tables
    from kvplan.workflows.diff import diff as run_diff

    if not engine and not kv_dtype:
        raise InputError(f"diff compares two setups: {TWO}", arg="engine")
    engines = sides(engine, "engine", "vllm")
    loaded, _, _ = resolve(model, [engines[0]])
    question = CapacityRequest(model=loaded, cache=cache, settings=settings, memory=memory)
    result = run_diff(question, engines=engines, kv_dtypes=sides(kv_dtype, "kv_dtype", cache.kv_dtype))
    payload = diff_payload(result)
    emit(payload, json, diff_tables, notes=notes(result.labels, (result.a.notes, result.b.notes)))


def notes(labels: tuple[str, str], said: tuple[tuple[str, ...], tuple[str, ...]]) -> list[str]:
    """Each side's notes, named by its setup; a note both sides give, once."""
    both = [n for n in said[0] if n in said[1]]
    return [*both, *(f"{label}: {n}" for label, ns in zip(labels, said, strict=True) for n in ns if n not in both)]
