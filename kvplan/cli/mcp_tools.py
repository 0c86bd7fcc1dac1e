"""The tools `kvplan mcp` serves: size, capacity, fit, reconcile, models and engines, each with the JSON Schema of
its arguments (the public function's keywords, kvplan.api) and of its answer (the command's --json,
kvplan.render.schema), and the answer itself: the payload the command prints with --json.

No MCP import here: the server (kvplan.cli.mcp) wraps these in the SDK's types.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kvplan.render.payload import plain

Schema = dict[str, Any]  # a JSON Schema

_INT = {"type": ["integer", "string"]}
ARGUMENT_TYPES: dict[str, Schema] = {  # the public keywords' annotations (kvplan.api.planning) -> JSON Schema
    "str": {"type": "string"}, "str | None": {"type": ["string", "null"]}, "bool": {"type": "boolean"},
    "Int": _INT, "OptInt": {"type": ["integer", "string", "null"]}, "Length": {"type": ["integer", "string", "null"]},
    "Size": {"type": ["integer", "string", "null"]}, "Fraction": {"type": ["number", "string", "null"]},
    "Budget": {"type": ["integer", "string", "array", "null"], "items": {"type": ["integer", "string"]}},
    "Names": {"type": ["string", "array"], "items": {"type": "string"}},
    "Names | None": {"type": ["string", "array", "null"], "items": {"type": "string"}},
    "Mapping[str, float] | str | None": {"type": ["object", "string", "null"],
                                         "additionalProperties": {"type": "number"}},
}
NOT_ARGUMENTS = {"request", "cache", "settings", "memory", "progress"}  # Python objects a JSON call cannot give


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_schema: Schema
    output_schema: Schema
    answer: Callable[[dict[str, Any]], Any]  # arguments -> JSON data


def arguments_schema(function: Callable[..., Any], first: tuple[str, str] | None = None) -> Schema:
    """The JSON Schema of a public function's keywords (`first`: its positional argument, as a string)."""
    from kvplan.api.docs import PARAMETERS

    properties: dict[str, Any] = {}
    required = []
    for name, p in inspect.signature(function).parameters.items():
        if name in NOT_ARGUMENTS:
            continue
        kind = {"type": "string"} if first and name == first[0] else ARGUMENT_TYPES[str(p.annotation)]
        described = first[1] if first and name == first[0] else PARAMETERS.get(name, "")
        properties[name] = {**kind, "description": described}
        if p.default is inspect.Parameter.empty:
            required.append(name)
        elif p.default is not None:
            properties[name]["default"] = p.default
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def answer_schema(command: str, root: str | None = None) -> Schema:
    """The command's --json schema as an object at its root (an MCP tool's structured answer is an object): the
    `root` payload's, or the list wrapped in {"models": [...]}."""
    from kvplan.render.schema import command_schema

    whole = command_schema(command)
    defs = whole["$defs"]
    assert isinstance(defs, dict)
    if root is not None:
        return {**defs[root], "$defs": defs}
    return {"type": "object", "properties": {command: {k: v for k, v in whole.items() if k.startswith(("type", "items"))}},
            "required": [command], "additionalProperties": False, "$defs": defs}


def _size(args: dict[str, Any]) -> Any:
    from kvplan.api.planning import kv_cache
    from kvplan.render.size import size_payload

    return plain(size_payload(kv_cache(**args)))


def _capacity(args: dict[str, Any]) -> Any:
    from kvplan.api.planning import capacity
    from kvplan.render.capacity import capacity_payload

    return plain(capacity_payload(capacity(**args)))


def _fit(args: dict[str, Any]) -> Any:
    from kvplan.api.planning import fit
    from kvplan.render.fit import fit_payload

    return plain(fit_payload(fit(**args)))


def _reconcile(args: dict[str, Any]) -> Any:
    from kvplan.api.workflows import reconcile
    from kvplan.render.reconcile import reconcile_payload

    return plain(reconcile_payload(reconcile(**args)))


def _models(args: dict[str, Any]) -> Any:
    from kvplan.cli.models import model_rows

    return {"models": plain(model_rows()[0])}


def _engines(args: dict[str, Any]) -> Any:
    from kvplan.engines.listing import engine_releases
    from kvplan.render.engines import engines_payload

    return plain(engines_payload(engine_releases(args.get("engine"))))


def tools() -> list[Tool]:
    from kvplan.api import planning, workflows

    model = ("model", "a model id: bundled (kvplan models lists them), in the HF cache or on the hub")
    log = ("log", "the text of a vLLM, SGLang or TensorRT-LLM start-up log")
    engines_input = {"type": "object", "properties": {"engine": {
        "type": ["string", "null"], "description": "narrow to an engine or release: vllm, vllm@0.19"}},
        "additionalProperties": False}
    return [
        Tool("size", "KV cache per token, per sequence and per GPU of a model (kvplan size).",
             arguments_schema(planning.kv_cache, model), answer_schema("size", "SizePayload"), _size),
        Tool("capacity", "KV capacity an engine release reaches on a GPU: budget term by term, blocks, tokens, "
             "concurrency and its verdict (refusal set when it would not start) (kvplan capacity).",
             arguments_schema(planning.capacity, model), answer_schema("capacity", "CapacityPayload"), _capacity),
        Tool("fit", "The cheapest setups (GPU type, replicas × TP × PP, KV dtype) serving `batch` requests of "
             "`max_model_len` tokens (kvplan fit).", arguments_schema(planning.fit, model),
             answer_schema("fit", "FitPayload"), _fit),
        Tool("reconcile", "Every KV number an engine's start-up log prints, recomputed by kvplan; ok is false when "
             "one differs (kvplan reconcile).", arguments_schema(workflows.reconcile, log),
             answer_schema("reconcile", "ReconcilePayload"), _reconcile),
        Tool("models", "The bundled models with their KV bytes per token (kvplan models).",
             {"type": "object", "properties": {}, "additionalProperties": False}, answer_schema("models"), _models),
        Tool("engines", "The engine releases kvplan follows and the rules new in each (kvplan engines).",
             engines_input, answer_schema("engines", "EnginesPayload"), _engines),
    ]
