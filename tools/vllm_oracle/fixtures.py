"""Compact oracle records into kvplan's test fixtures (pure JSON; vLLM is not needed here).

    python -m vllm_oracle.fixtures RECORDS_DIR... --out tests/data/vllm-oracle [--per-model 24]

One file per model, ``<org>__<name>.json``: {"model", "config", "layers", "records"}. ``config`` is
the bundled config's path, or, with ``--embed-configs`` (configs that are not bundled, e.g. those
make_transformers_configs.py writes from transformers' defaults), the config itself.

- ``layers``: the per-layer specs of the ``.layers.json`` file (tp 1, KV dtype auto, default block),
  consecutive equal layers run-length encoded (``count``), with the fields kvplan compares: KV heads,
  head sizes, window, bytes per token; for Mamba specs the unpadded state bytes, shapes and dtypes.
- ``records``: the first ``--per-model`` records of the model's file, in the order the grid ran them
  (the small grid's deterministic order: see grid.py), without layer names, logs and argv. Build
  refusals keep their stage, their message's first line and vLLM's frame.

Every value is one vLLM's code produced; nothing is computed here but the run-length encoding.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

LAYER_KEYS = ("type", "num_kv_heads", "head_size", "head_size_v", "sliding_window", "attention_chunk_size", "dtype",
              "page_size_bytes_per_token", "cache_dtype_str", "cache_role", "mamba_type", "shapes", "dtypes",
              "real_page_size_bytes", "num_prefill_checkpoint_blocks",
              "use_mla")  # before 0.11 an MLA layer is a FullAttentionSpec with use_mla
RECORD_KEYS = ("tp", "pp", "kv_cache_dtype", "block_size", "max_model_len", "available_bytes", "final_block_size",
               "num_blocks", "kv_tokens", "max_concurrency", "max_concurrency_log", "page_size_bytes_total_per_block",
               "max_memory_usage_bytes_per_request", "max_num_batched_tokens", "attention_backends", "error_stage",
               "error_where")
GROUP_KEYS = ("spec_type", "layer_spec_type", "num_layers", "block_size", "page_size_bytes", "group_page_size_bytes",
              "sliding_window", "attention_chunk_size", "blocks_per_request")
SETTINGS_KEYS = ("enable_prefix_caching", "mamba_cache_mode", "mamba_ssm_cache_dtype", "mamba_block_size",
                 "mamba_page_size_padded")
MAX_ERROR_CHARS = 400


def _kept(record: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: record[k] for k in keys if record.get(k) is not None}


def compact_layers(layers: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Consecutive equal layers as one entry with a count."""
    out: list[dict[str, Any]] = []
    for layer in layers:
        entry = _kept(layer, LAYER_KEYS)
        if out and {k: v for k, v in out[-1].items() if k != "count"} == entry:
            out[-1]["count"] += 1
        else:
            out.append({**entry, "count": 1})
    return out


def compact_record(record: dict[str, Any]) -> dict[str, Any]:
    out = _kept(record, RECORD_KEYS)
    if record["error"]:
        out["error"] = record["error"].splitlines()[0][:MAX_ERROR_CHARS]
        if record.get("error_message"):
            out["error_message"] = record["error_message"].splitlines()[0][:MAX_ERROR_CHARS]
        return out
    out["groups"] = [_kept(g, GROUP_KEYS) for g in record["kv_cache_groups"]]
    if record["settings"].get("is_hybrid"):
        out["settings"] = _kept(record["settings"], SETTINGS_KEYS)
    return out


def model_fixture(records_file: Path, per_model: int, embed_config: bool = False) -> dict[str, Any]:
    records = json.loads(records_file.read_text())
    layers_file = records_file.with_suffix(".layers.json")
    layers = json.loads(layers_file.read_text()) if layers_file.is_file() else {}
    model = records[0]["model"]
    config: Any = f"configs/{model}/config.json"
    if embed_config:
        config = json.loads((Path(records[0]["serve_args"][0]) / "config.json").read_text())
    fixture: dict[str, Any] = {
        "model": model,
        "config": config,
        "layers": compact_layers(layers.get("layers") or []),
        "layers_error": (layers.get("error") or "").splitlines()[0][:MAX_ERROR_CHARS] if layers.get("error") else None,
        "records": [compact_record(r) for r in records[:per_model]],
    }
    if records[0].get("vllm_version"):  # the release that wrote the records
        fixture["vllm_version"] = records[0]["vllm_version"]
    return fixture


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vllm_oracle.fixtures", description=__doc__.splitlines()[0])
    parser.add_argument("records", nargs="+", type=Path, help="record folders written by python -m vllm_oracle")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--per-model", type=int, default=24, help="records kept per model, in grid order")
    parser.add_argument("--embed-configs", action="store_true", help="put each config into its fixture")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for folder in args.records:
        for path in sorted(folder.glob("*.json")):
            if path.name.endswith(".layers.json") or path.name.startswith("_"):
                continue
            fixture = model_fixture(path, args.per_model, args.embed_configs)
            (args.out / path.name).write_text(json.dumps(fixture, indent=None, separators=(",", ":")) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
