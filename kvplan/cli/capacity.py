"""`kvplan capacity`."""

from __future__ import annotations

import sys
from contextlib import suppress
from dataclasses import replace
from typing import Annotated, Any

import typer

from kvplan.cli.common import emit, long_lived
from kvplan.cli.engine_options import EngineArgs, Engines, MemoryArgs
from kvplan.cli.expand import Expand, command, given_options
from kvplan.cli.launch import CLUSTER_FORMATS, Asked, Format, model_or_command, output_format, resolve
from kvplan.cli.options import Explain, GpusPerNode, Json, KvDtypes, Plot, cache_options, listed
from kvplan.errors import InputError, KvplanError
from kvplan.formulas import CacheRequest
from kvplan.planning.request import CapacityRequest

# The KV dtype is a list here (compared side by side); a capacity question holds no batch.
CapacityCache = Annotated[CacheRequest, Expand(cache_options, without=("kv_dtype", "batch"))]
ModelOrCommand = Annotated[Asked, Expand(model_or_command)]


def lists(engine: list[str] | None, kv_dtype: list[str] | None) -> tuple[list[str], list[str]]:
    """--engine and --kv-cache-dtype as lists (`all`: every engine's newest release)."""
    from kvplan.engines import ENGINE_NAMES

    engines = [e for name in listed(engine, "engine", "vllm")
               for e in (ENGINE_NAMES if name.lower() == "all" else (name,))]
    return list(dict.fromkeys(engines)), list(listed(kv_dtype, "kv_dtype", "auto"))


def _run(question: CapacityRequest, engines: list[str], kv_dtypes: list[str]) -> list[Any]:
    """One result per (KV dtype, engine); one engine and one dtype: its error is the command's (exit 2)."""
    with long_lived():  # the planning modules, and each engine's modules and release rows (loaded on first use)
        from kvplan.engines import get_engine
        from kvplan.planning.capacity import capacity, capacity_all

        for name in engines:
            with suppress(KvplanError):  # an unknown engine: reported where its question is asked (below)
                get_engine(name)

    def asking(kv_dtype: str) -> CapacityRequest:
        return question if question.cache.kv_dtype == kv_dtype else question.with_cache(kv_dtype=kv_dtype)

    if len(engines) == 1 and len(kv_dtypes) == 1:
        return [capacity(asking(kv_dtypes[0]), engine=engines[0])]
    return [r for d in kv_dtypes for r in capacity_all(asking(d), engines=engines)]


@command
def capacity(model: ModelOrCommand, cache: CapacityCache, settings: EngineArgs, memory: MemoryArgs,
             engine: Engines = None, kv_dtype: KvDtypes = None, json: Json = False, explain: Explain = False,
             plot: Plot = None, format: Format = None, gpus_per_node: GpusPerNode = None) -> None:
    """KV capacity an engine release reaches on a GPU: its budget term by term, blocks, tokens, concurrency,
    the lines it logs, and its verdict (exit 1 when it would refuse to start; the answer is still printed).
    Engines and KV dtypes given as lists are shown side by side. What shares the GPU beside the cache: a
    speculative draft, LoRA slots, the encoder cache; and the host tier behind it.

    A launch command after -- is read with the flags of the --engine release (default: its engine's newest);
    every answer carries the command to launch it with (the launch page of the documentation)."""
    fmt = output_format(format, json)
    if plot:  # before any work: a bad path or a missing matplotlib is one line, not a table then a failure
        from kvplan.render.plot import check_plot_path

        check_plot_path(plot)
    engines, kv_dtypes = lists(engine, kv_dtype)
    loaded, launch, engines = resolve(model, engines, named="engine" in given_options())
    cache = cache if kv_dtypes[0] == cache.kv_dtype else replace(cache, kv_dtype=kv_dtypes[0])
    question = CapacityRequest(model=loaded, cache=cache, settings=settings, memory=memory)
    if launch is not None:
        if len(kv_dtypes) > 1:
            raise InputError("a launch command is one question: give one --kv-cache-dtype (or none)", arg="kv_dtype")
        from kvplan.launch.read import question_of  # the launch command's reader: only with a command

        question = question_of(launch, question, explicit(question))
        kv_dtypes = [question.cache.kv_dtype]
    if gpus_per_node is not None and gpus_per_node < 1:
        raise InputError(f"gpus_per_node must be positive, got {gpus_per_node}", arg="gpus_per_node")
    refused = _show(_run(question, engines, kv_dtypes), fmt, explain, launch, gpus_per_node)
    if plot:
        _plot(question, plot, engines)  # several dtypes: the first one's curves
    if refused:
        raise typer.Exit(1)


# Options whose field has another name (the override flags build one Overrides; the switches say the negation).
OPTION_FIELDS = {"attention": "overrides", "kv_heads": "overrides", "layer_types": "overrides", "window": "overrides",
                 "disable_hybrid_kv_cache_manager": "hybrid_kv_cache_manager", "no_async_scheduling": "async_scheduling"}


def explicit(question: CapacityRequest) -> dict[str, tuple[str, Any]]:
    """The question's fields given as options on the command line (field -> (option, value)), as the question holds
    them: what a pasted command must agree with."""
    values = {**vars(question.cache), **dict(question.settings.items()), **vars(question.memory)}
    given = {OPTION_FIELDS.get(name, name): name for name in sorted(given_options())}
    return {field: (option, values[field]) for field, option in given.items() if field in values}


def _show(results: list[Any], fmt: str, explain: bool, launch: Any, gpus_per_node: int | None) -> bool:
    """Print the answers (one column each), their --explain lines and notes; whether an engine refuses."""
    with long_lived():
        from kvplan.render.capacity import capacity_payload, explain_lines
        from kvplan.render.capacity_tables import capacity_tables, column_labels

    payloads = [_with_notes(capacity_payload(r, _layout_extra(r, launch, gpus_per_node)), launch, r) for r in results]
    lines = [line for r in results for line in explain_lines(r)] if explain else None
    labels = column_labels(payloads) if len(payloads) > 1 else [""]
    if fmt in CLUSTER_FORMATS:
        from kvplan.cli.launch import cluster_manifest
        from kvplan.render.kubernetes import block_yaml

        if len(payloads) > 1:
            raise InputError(f"--format {fmt}: one engine and one KV dtype (one answer)", arg="format")
        print(block_yaml(cluster_manifest(fmt, payloads[0], results[0])), end="")
        return any(p.refusal for p in payloads)
    if fmt == "yaml":
        from kvplan.cli.launch import manifest, yaml_text

        print(yaml_text(manifest(payloads[0]) if len(payloads) == 1 else {"plans": [manifest(p) for p in payloads]}),
              end="")
        return any(p.refusal for p in payloads)
    if fmt == "table":  # after the tables and --explain, before the notes
        from kvplan.render.tables import CommandLine

        lines = [*(lines or []), *(CommandLine(f"launch{f' ({label})' if label else ''}", p.command)
                                   for label, p in zip(labels, payloads, strict=True) if p.command)]
    emit(payloads if len(payloads) > 1 else payloads[0], fmt == "json", capacity_tables, lines or None,
         notes=[(label, n) for label, p in zip(labels, payloads, strict=True) for n in p.notes])
    return any(p.refusal for p in payloads)


def _layout_extra(result: Any, launch: Any, gpus_per_node: int | None) -> dict[str, Any] | None:
    """The layout beyond the request, for the command written: a pasted command's (its --nnodes, ...), else the
    nodes one replica needs at --gpus-per-node (fit's rule: vLLM DP ranks per node, --nnodes, TRT-LLM's
    --gpus_per_node)."""
    extra = dict(launch.part("layout")) if launch is not None else {}
    if gpus_per_node and result.cache is not None and not extra:
        from kvplan.engines import get_engine

        extra = get_engine(result.engine).multi_node(result.cache.parallel, gpus_per_node)
    return extra or None


def _with_notes(payload: Any, launch: Any, result: Any) -> Any:
    """The command's notes (no effect on memory, not modelled) join the answer's."""
    if launch is None:
        return payload
    from kvplan.launch.read import model_notes

    return replace(payload, notes=(*model_notes(launch, result.model), *payload.notes))


def _plot(question: CapacityRequest, path: str, engines: list[str]) -> None:
    """Max concurrency vs context, from 1k to max_model_len, for each engine asked: the command's own
    question at each length (every option the table used, and only the length changed)."""
    from kvplan.render.plot import plot_capacity
    from kvplan.workflows.capacity_curve import capacity_curve, context_lengths

    curve = capacity_curve(question, max_model_lens=context_lengths(question.max_model_len), engines=engines)
    memory = question.memory
    where = f"on {memory.gpu}" if memory.gpu else "with the given KV budget" if memory.kv_budget_bytes else \
        "on the default GPU"
    plot_capacity(curve.series(labelled=False), path, title=f"Max concurrency vs context {where}: "
                  f"{question.model.model_id}, tp {question.cache.tp} pp {question.cache.pp}")
    print(f"kvplan: wrote {path}", file=sys.stderr)


