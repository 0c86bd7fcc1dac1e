"""The model a log names, resolved through kvplan's loader: the id (an HF-cache snapshot path as its hub id), its
last path part, then without checkpoint suffixes (``-FP8``, ``-AWQ``, Unsloth's ``-unsloth-bnb-4bit``), with the
weight format a suffix implies. Formats kvplan does not count (bitsandbytes, GGUF) are named so that the weights figure is listed
instead of checked.
"""

from __future__ import annotations

import re

from kvplan.config import load_model
from kvplan.config.model import ModelConfig
from kvplan.errors import ConfigError, InputError
from kvplan.planning.weights import WEIGHT_DTYPE_NAMES
from kvplan.reconcile.parse import StartupLog

# Checkpoint-name suffixes dropped to find a bundled config, with the weight format they imply.
CHECKPOINT_SUFFIXES: tuple[tuple[str, str | None], ...] = (
    ("-fp8-dynamic", "fp8"), ("-fp8-block", "fp8"), ("-fp8", "fp8"), ("-awq", "int4"), ("-gptq-int4", "int4"),
    ("-gptq-int8", "int8"), ("-autoround-gptq-4bit", "int4"), ("-unsloth-bnb-4bit", "bitsandbytes"),
    ("-bnb-4bit", "bitsandbytes"), ("-nvfp4", None), ("-2507", None))
# weight formats kvplan has no count for: the weights figure is listed, not checked
UNCOUNTED_WEIGHTS = ("bitsandbytes", "gguf")

# a Hugging Face cache snapshot: <cache>/hub/models--<org>--<name>/snapshots/<commit>[/...] (the hub's "/" written
# as "--"; a repo name never holds "--"), as vLLM logs the model once HF_HUB_OFFLINE resolves it to a path
HF_CACHE_PATH = re.compile(r"(?:^|/)models--([^/]+)(?:/snapshots/[^/]+)?/?")


def hub_id(name: str) -> str | None:
    """The hub id an HF-cache path names (…/models--meta-llama--Llama-3.1-8B/snapshots/<hash> -> meta-llama/
    Llama-3.1-8B), else None."""
    found = HF_CACHE_PATH.search(name)
    return found.group(1).replace("--", "/", 1) if found else None


def name_candidates(name: str) -> list[tuple[str, str | None]]:
    """The id (a path: its folder where it exists here), an HF-cache path's hub id, then the last path part, each
    then without checkpoint suffixes: (name, implied weights)."""
    out: list[tuple[str, str | None]] = []
    for base in dict.fromkeys(b for b in (name, hub_id(name), name.rstrip("/").rpartition("/")[2]) if b):
        current, implied = base, None
        out.append((current, implied))
        while hit := next(((s, d) for s, d in CHECKPOINT_SUFFIXES if current.lower().endswith(s)), None):
            current, implied = current[: -len(hit[0])], implied or hit[1]
            out.append((current, implied))
    return out


def load_named(name: str) -> tuple[ModelConfig, str | None] | None:
    """The first candidate kvplan can load, or None."""
    for candidate, implied in name_candidates(name):
        try:
            return load_model(candidate), implied
        except ConfigError:
            continue
    return None


def resolve_model(log: StartupLog, flag: str | None) -> tuple[ModelConfig, bool, str | None]:
    """(model, whether it stands in for another model the log names, weights format its name implies)."""
    named = log.setting("model")
    found = next((f for n in (named, log.setting("served_model_name")) if n and (f := load_named(n))), None)
    if flag is not None:
        model = load_model(flag)
        return model, named is not None and (found is None or found[0].model_id != model.model_id), None
    if found is not None:
        return found[0], False, found[1]
    said = f"the log names {named!r}, which kvplan cannot load" if named else "the log does not name its checkpoint"
    raise InputError(f"{said}; pass model as a bundled id, a config.json or a folder", arg="model")


def weights_dtype_of(log: StartupLog, implied: str | None) -> str | None:
    """The log's quantization where kvplan has that weight format (fp8, int8, int4), else the name's."""
    quantization = (log.setting("quantization") or "").lower()
    if quantization in WEIGHT_DTYPE_NAMES:
        return quantization
    return implied if implied in WEIGHT_DTYPE_NAMES else None


def uncounted_of(log: StartupLog, implied: str | None) -> str | None:
    """A weight format kvplan does not count, from the log's quantization or the checkpoint's name."""
    quantization = (log.setting("quantization") or "").lower()
    return next((q for q in (quantization, implied) if q in UNCOUNTED_WEIGHTS), None)
