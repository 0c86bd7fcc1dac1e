"""Per-model work outside the grid: the model's maximum length (which also
warms the parent's imports before forking) and the per-layer spec file."""

from __future__ import annotations

import inspect
from typing import Any

from . import engine, records
from .runner import BuildPoint, error_text, start_log_capture
from .worker import build_stage


def model_max_len(model_dir: str) -> tuple[int | None, str | None]:
    """vLLM's derived max_model_len at tp 1 (no --max-model-len), or its error.
    Runs in the parent on purpose: it imports the config and model modules
    once, so every forked build starts warm."""
    from vllm.model_executor.models import ModelRegistry

    start_log_capture(verbose=False)
    try:
        config = engine.create_engine_config(
            engine.serve_argv(model_dir, 1, 1, "auto", None, None))
        resolve = ModelRegistry.resolve_model_cls
        if len(inspect.signature(resolve).parameters) >= 2:  # the model config joined in 0.10
            resolve(config.model_config.architectures, config.model_config)
        else:
            resolve(config.model_config.architectures)
    except Exception as exc:
        return None, error_text(exc)
    return config.model_config.max_model_len, None


def _layer_record(point: BuildPoint, verbose: bool) -> dict[str, Any]:
    start_log_capture(verbose)
    argv = engine.serve_argv(point.model_dir, 1, 1, "auto", None, None)
    out: dict[str, Any] = {"model": point.model, "tp": 1, "pp": 1,
                           "kv_cache_dtype": "auto", "serve_args": argv}
    try:
        config = engine.create_engine_config(argv)
        stage = build_stage(config, 0)
    except Exception as exc:
        return {**out, "error": error_text(exc), "layers": []}
    layers = [{"layer": name, **records.spec_dict(spec)}
              for name, spec in stage.specs.items()]
    per_token = [layer["page_size_bytes_per_token"] for layer in layers
                 if layer.get("page_size_bytes_per_token") is not None]
    return {**out, "error": None, "max_model_len": config.model_config.max_model_len,
            "attention_backends": stage.backends,
            "attention_bytes_per_token": sum(per_token),
            "settings": records.settings_dict(config), "layers": layers}


def layer_specs(model: str, model_dir: str) -> dict[str, Any]:
    """Every layer's spec at tp 1, auto KV dtype, default block size."""
    from .forking import run_in_order

    point = BuildPoint(model, model_dir, 1, 1, "auto", None, None)
    [(_, result)] = list(run_in_order([point], fn=_layer_record))
    return result
