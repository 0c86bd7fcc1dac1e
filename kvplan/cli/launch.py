"""`kvplan capacity -- vllm serve MODEL ...`: a launch command as the model argument, and `--format yaml`.

The words after ``--`` are the command; its engine comes from the entry point, the release from --engine
(default: the engine's newest row). The command's flags and kvplan's options build one question
(``kvplan.launch.read.question_of``): an option given before ``--`` that the command gives otherwise is a conflict
(exit 2, both values named), the same value on both sides is one value, and the command fills every option left to
its default; a model given before ``--`` as well must be the command's.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from kvplan.cli.expand import given_options
from kvplan.cli.options import OUTPUT, ModelDtype, Revision, model_options, option
from kvplan.errors import InputError
from kvplan.records import Record

Words = Annotated[list[str], typer.Argument(
    help="Model id (bundled, HF cache or hub), config.json, or folder; or, after --, a launch command: vllm serve "
         "MODEL ..., python -m vllm.entrypoints.openai.api_server --model MODEL ..., python -m sglang.launch_server "
         "--model-path MODEL ..., sglang serve ..., trtllm-serve MODEL ... (every flag of the --engine release).",
    show_default=False, metavar="MODEL | -- COMMAND")]
Format = Annotated[str | None, option("--format", "table, json, yaml, kserve or llm-d; json, yaml: the fields a deployment takes: model, "
                                      "engine, release, GPUs per replica, replicas, flags, min GPU memory; kserve (a "
                                      "KServe LLMInferenceService) or llm-d (a Kustomize patch of llm-d's Deployment),"
                                      " with the pod's memory: engine + pinned host tier + /dev/shm.", OUTPUT,
                                      "FORMAT")]
CLUSTER_FORMATS = ("kserve", "llm-d")


class Asked(Record, kw_only=False):
    """The model argument: one model id, or a launch command's words."""

    words: tuple[str, ...]
    revision: str | None
    dtype: str


def model_or_command(model: Words, revision: Revision = None, dtype: ModelDtype = "auto") -> Asked:
    return Asked(tuple(model), revision, dtype)


def output_format(fmt: str | None, as_json: bool) -> str:
    name = (fmt or ("json" if as_json else "table")).lower()
    if name not in ("table", "json", "yaml", *CLUSTER_FORMATS):
        raise InputError(f"--format {fmt}: choose table, json, yaml, kserve or llm-d")
    return name


def resolve(asked: Asked, engines: list[str], named: bool = False) -> tuple[Any, Any, list[str]]:
    """(model, Launch or None, engines): a plain model id, or the command read with the --engine release (`named`:
    --engine was given; else the command's engine, its newest release). A model given before -- as well is the
    command's, or a conflict (exit 2)."""
    from kvplan.launch.words import is_command

    words = list(asked.words)
    if not is_command(words):
        return model_options(words[0], asked.revision, asked.dtype), None, engines
    from kvplan.launch.command import read_command  # the engines' launch readers: only for a command
    from kvplan.launch.read import read_launch

    split = len(words) > 1 and not is_command(words[:1]) and is_command(words[1:2])  # a model, then the command
    before, words = (words[0], words[1:]) if split else (None, words)
    if len(engines) > 1:
        raise InputError("a launch command is one engine release: give one --engine (vllm@0.19, sglang@0.5.2)")
    command = read_command(words, engines[0] if named else None)
    if before is not None and before != command.model:
        raise InputError(f"the model {before} (before --) and the command's {command.model} disagree: give one "
                         "model, or the same on both sides")
    launch = read_launch(command)
    part, given = launch.part("model"), given_options()
    for name, value in (("revision", asked.revision), ("dtype", asked.dtype)):
        if name in given and name in part and _dtype_name(part[name]) != _dtype_name(value):
            raise InputError(f"{name} {value} (before --) and the command's {launch.typed.get(name, name)} "
                             f"{part[name]} disagree: give one value, or the same on both sides", arg=name)
    model = model_options(command.model, part.get("revision", asked.revision), part.get("dtype", asked.dtype))
    return model, launch, [engines[0] if named else command.engine]


def _dtype_name(value: Any) -> Any:
    """A dtype by kvplan's name (bfloat16 -> bf16); a revision, or auto, as it is."""
    from kvplan.dtypes import canonical_dtype

    return canonical_dtype(value) or value if isinstance(value, str) else value


def manifest(payload: Any) -> dict[str, Any]:
    """--format yaml: one answer as a deployment takes it (None where kvplan has no command for its release)."""
    from kvplan.render.payload import plain

    layout = payload.layout
    return {"model": payload.model, "engine": payload.engine, "release": payload.command_release,
            "gpu": payload.gpu, "gpus_per_replica": layout.gpus, "replicas": 1, "layout": plain(layout), "command": payload.command, "flags": dict(payload.flags or {}),
            "min_gpu_memory_bytes": payload.gpu_memory_bytes, "kv_tokens": payload.kv_tokens,
            "max_concurrency": payload.max_concurrency, "notes": list(payload.notes)}


def cluster_manifest(fmt: str, payload: Any, result: Any) -> dict[str, Any]:
    """--format kserve / llm-d: the resource a cluster takes for one answer (its launch command on a pod sized by
    kvplan.launch.pod)."""
    from kvplan.launch.pod import pod
    from kvplan.render.kubernetes import kserve, llm_d

    if not payload.command:
        raise InputError(f"--format {fmt}: kvplan writes no launch command for {payload.engine_version}", arg="format")
    sized = pod(result)
    return kserve(payload, sized) if fmt == "kserve" else llm_d(payload, sized)


def yaml_text(data: Any, indent: int = 0) -> str:
    """A small YAML writer for the manifest (mappings, lists, scalars as JSON scalars: valid YAML)."""
    import json

    pad = " " * indent
    if isinstance(data, dict):
        return "".join(f"{pad}{json.dumps(k) if str(k).startswith('-') else k}:" + (f"\n{yaml_text(v, indent + 2)}" if isinstance(v, (dict, list)) and v else
                                       f" {json.dumps(v)}\n") for k, v in data.items())
    if isinstance(data, list):
        return "".join(f"{pad}- {json.dumps(v)}\n" for v in data)
    return f"{pad}{json.dumps(data)}\n"


def fit_manifest(payload: Any) -> dict[str, Any]:
    """--format yaml of fit: the best setup as a deployment takes it (the closest one when none serves)."""
    best = payload.best or (payload.alternatives[0] if payload.alternatives else None)
    if best is None:
        return {"model": payload.model, "engine": payload.engine, "fits": False}
    return {"model": payload.model, "engine": payload.engine, "release": best.release, "fits": payload.fits,
            "gpu": best.gpu, "gpus_per_replica": best.gpus_per_replica, "replicas": best.replicas,
            "layout": dict(best.layout or {}), "kv_dtype": best.kv_dtype, "command": best.command,
            "flags": dict(best.flags or {}), "min_gpu_memory_bytes": best.gpu_memory_bytes,
            "requests": best.requests, "concurrency": payload.concurrency}
