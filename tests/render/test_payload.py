"""Typed payloads -> JSON (kvplan.render.payload.plain): field order is key order, tuples are arrays, an INLINE
field's keys stand in its place, an OMIT_NONE key is left out only when None; and the contract's keys, in order."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import kvplan
from kvplan.planning.capacity import capacity
from kvplan.planning.fit import fit
from kvplan.reconcile import Options, parse_log, reconcile
from kvplan.render.capacity import capacity_payload
from kvplan.render.fit import fit_payload
from kvplan.render.payload import INLINE, OMIT_NONE, plain
from kvplan.render.reconcile import reconcile_payload
from kvplan.render.size import size_payload
from kvplan.render.workflows import SweepRow
from kvplan.workflows.capacity_curve import ENGINE_COLUMNS
from kvplan.workflows.sweep import SWEEP_COLUMNS

LOGS = Path(__file__).resolve().parents[1] / "data" / "logs"


@dataclass(frozen=True)
class Inner:
    b: int
    a: tuple[int, ...]


@dataclass(frozen=True)
class Outer:
    z: str
    inner: Inner = field(metadata=INLINE)
    y: Inner | None
    maybe: int | None = field(default=None, metadata=OMIT_NONE)
    zero: int | None = field(default=0, metadata=OMIT_NONE)


def test_fields_in_order_tuples_as_lists_inline_in_place() -> None:
    data = plain(Outer(z="z", inner=Inner(2, (1, 2)), y=None))
    assert data == {"z": "z", "b": 2, "a": [1, 2], "y": None, "zero": 0}
    assert list(data) == ["z", "b", "a", "y", "zero"]  # maybe (None) left out; y (None, not marked) kept
    assert list(plain(Outer(z="", inner=Inner(0, ()), y=Inner(1, ()), maybe=3))) == ["z", "b", "a", "y", "maybe",
                                                                                    "zero"]


def test_what_json_cannot_hold_is_refused() -> None:
    with pytest.raises(TypeError, match="not JSON data: set"):
        plain(Inner(1, {1, 2}))  # type: ignore[arg-type]


def test_the_sweep_row_names_the_sweep_columns() -> None:
    """The table reads sweep rows by name: SweepRow's fields are the columns the sweep writes, in order."""
    assert SweepRow._fields == SWEEP_COLUMNS + ENGINE_COLUMNS


# The contract's keys in the order `--json` printed them before the payloads were typed (issue 20). A key may be
# added (a field on the payload type): the test reads the known keys' order, wherever new ones stand.
SIZE_KEYS = ["model", "source", "attention", "kv_dtype", "parallel", "layer_groups", "bytes_per_token",
             "bytes_per_token_per_gpu", "seq_len", "batch", "block_size", "bytes_per_sequence",
             "bytes_per_sequence_per_gpu", "bytes_per_sequence_paged", "bytes_per_sequence_paged_per_gpu", "total_bytes",
             "total_bytes_per_gpu", "total_bytes_paged", "total_bytes_paged_per_gpu", "total_bytes_all_gpus", "num_gpus",
             "max_model_len", "model_dtype", "notes"]
GROUP_KEYS = ["kind", "num_layers", "num_layers_per_gpu", "num_kv_heads", "num_kv_heads_per_gpu", "head_dim",
              "v_head_dim", "window", "bytes_per_token_per_layer", "bytes_per_token", "bytes_per_token_per_gpu",
              "state_bytes_per_sequence", "state_bytes_per_sequence_per_gpu"]
CAPACITY_KEYS = ["engine", "engine_version", "model", "gpu", "gpu_memory_bytes", "parallel", "kv_dtype",
                 "weights_bytes_per_gpu", "overhead_bytes_per_gpu", "overhead", "budget_terms", "budget_rule",
                 "engine_settings", "kv_budget_bytes_per_gpu", "kv_budget_bytes_per_stage", "block_size", "page_bytes",
                 "num_blocks", "kv_tokens", "max_model_len", "max_concurrency", "max_concurrency_log",
                 "requests_at_max_model_len", "per_request", "layer_groups", "notes", "error", "refusal",
                 "estimated_max_model_len", "log_lines", "decode_step_floor", "speculative", "lora", "encoder_cache",
                 "host_tier", "host_memory", "log_line"]
FIT_KEYS = ["model", "engine", "gpus", "context", "concurrency", "gpus_per_node", "max_gpus", "max_replicas", "ranking",
            "num_evaluated", "fits", "best", "alternatives", "notes"]
SETUP_KEYS = ["gpu", "tp", "pp", "replicas", "gpus_per_replica", "num_gpus", "kv_dtype", "kv_budget_bytes_per_gpu",
              "kv_tokens_per_replica", "requests_per_replica", "requests", "price_per_gpu_hour", "cost_per_hour", "fits",
              "reason"]
RECONCILE_KEYS = ["engine", "version", "model", "model_in_log", "rules", "engine_row", "checks", "skipped", "notes", "ok"]
CHECK_KEYS = ["quantity", "logged", "kvplan", "match", "explanation", "logged_text", "kvplan_min", "kvplan_max",
              "workers", "lines"]


def known(data: Any, keys: list[str]) -> list[str]:
    return [k for k in data if k in keys]


def test_the_size_keys() -> None:
    data = plain(size_payload(kvplan.kv_cache("deepseek-ai/DeepSeek-V3", max_model_len=4096)))
    assert known(data, SIZE_KEYS) == SIZE_KEYS and "workload" not in data
    mla = [*GROUP_KEYS[:7], "kv_lora_rank", "qk_rope_head_dim", *GROUP_KEYS[7:]]
    assert known(data["layer_groups"][0], mla) == mla
    whisper = plain(size_payload(kvplan.kv_cache("openai/whisper-small", max_model_len=448)))
    cross = [*GROUP_KEYS, "encoder_tokens", "encoder_bytes_per_sequence"]
    assert [known(g, cross) for g in whisper["layer_groups"]] == [cross]
    assert "kv_lora_rank" not in whisper["layer_groups"][0] and "encoder_tokens" not in data["layer_groups"][0]


def test_the_capacity_keys() -> None:
    data = plain(capacity_payload(capacity("meta-llama/Llama-3.1-8B", gpu="H100", max_model_len=32768)))
    assert known(data, CAPACITY_KEYS) == CAPACITY_KEYS
    engine_group = [*GROUP_KEYS, "engine_kind", "engine_groups", "block_size", "page_bytes_per_layer",
                    "blocks_per_request", "tokens_reserved_per_request"]
    assert known(data["layer_groups"][0], engine_group) == engine_group
    term = ["name", "bytes", "exact", "source", "kind"]
    assert known(data["budget_terms"][0], term) == term
    refused = plain(capacity_payload(capacity("deepseek-ai/DeepSeek-V3", gpu="H100", max_model_len=8192)))
    assert refused["refusal"] and known(refused, CAPACITY_KEYS) == CAPACITY_KEYS[:-1]  # no log_line: it refuses


def test_the_fit_keys() -> None:
    data = plain(fit_payload(fit("meta-llama/Llama-3.1-8B", concurrency=4, gpu=["H100"], max_model_len=8192)))
    assert known(data, FIT_KEYS) == FIT_KEYS and known(data["best"], SETUP_KEYS) == SETUP_KEYS


def test_the_reconcile_keys() -> None:
    log = parse_log((LOGS / "vllm-v064dev-llama31-8b-40k.log").read_text())
    data = plain(reconcile_payload(reconcile(log, Options())))
    assert known(data, RECONCILE_KEYS) == RECONCILE_KEYS and known(data["checks"][0], CHECK_KEYS) == CHECK_KEYS
