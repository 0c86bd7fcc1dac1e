"""kvplan's `vllm@X` rows against vLLM X's own planning code, for each release the oracle drove.

tests/data/vllm-oracle-releases/<X>/<org>__<name>.json were written by tools/vllm_oracle run in a venv
holding vLLM X (CPU, as an H100; see its README, "Releases"), compacted by ``python -m vllm_oracle.fixtures``:
a sample of the bundled configs (dense, MLA, MoE, sliding window, hybrid, Mamba) over the small grid.
Nothing in them is derived from kvplan.

Each (release, model) is one test that compares every record as test_vllm_oracle_fixtures does for 0.33
(num_blocks, the logged token count and concurrency, the bytes of one block id, the final block size, the
bytes one request reserves, each group's page and blocks per request, refusals), on the fields that
release's records carry. A release kvplan has no row for yet is skipped with that reason, so the fixtures
land before the rows and the comparison turns on when a row is added to kvplan.engines.REGISTRY.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import test_vllm_oracle_fixtures as base

import kvplan
from kvplan.engines import REGISTRY, Request
from kvplan.errors import KvplanError
from kvplan.planning.capacity import plan_request
from kvplan.specs import parts

ROOT = Path(__file__).resolve().parents[1] / "data" / "vllm-oracle-releases"
FIXTURES: dict[str, dict[str, dict[str, Any]]] = {
    folder.name: {(d := json.loads(p.read_text()))["model"]: d for p in sorted(folder.glob("*.json"))}
    for folder in sorted(ROOT.iterdir()) if folder.is_dir()
} if ROOT.is_dir() else {}
MAX_FIXTURE_BYTES = 8 * 2**20  # all releases together
# (release, model) where kvplan's row answers otherwise than the release's code, with the rule it lacks.
# Strict: when kvplan learns the rule the test passes, and the entry must go.
KNOWN_DIFFERENCES = {
    # vLLM 0.10.1.1 (the last 0.10 release before 0.10.2)
    ("0.10", "deepseek-ai/DeepSeek-V2-Lite"):
        "0.10 forces 64-token FlashMLA blocks on Hopper (platforms/cuda.py) and refuses an fp8 KV cache with "
        "FlashMLA ('FlashMLA V1 with FP8 KV cache not yet supported', v1/attention/backends/mla/flashmla.py:170); "
        "kvplan plans 16-token blocks and fp8",
    ("0.10", "Qwen/Qwen3-Next-80B-A3B-Thinking"):
        "0.10.1.1 does not know qwen3_next (transformers 4.55, engine/arg_utils.py:904 refuses the config); "
        "kvplan plans it",
    ("0.10", "google/gemma-2-9b-it"):
        "pp 2 with sliding and full layers: 0.10 groups each stage by itself and unify_kv_cache_configs asserts "
        "the stages' groups are equal (v1/core/kv_cache_utils.py:1144); kvplan plans",
    ("0.10", "google/gemma-3-4b-it"):
        "pp 2: 0.10 groups each stage by itself and logs stage 0's line before the min over stages; kvplan's "
        "tokens and concurrency differ",
    ("0.10", "ibm-granite/granite-4.0-tiny-preview"):
        "0.10 refuses GraniteMoeHybrid with prefix caching, which is on by default "
        "(model_executor/models/granitemoehybrid.py:595); kvplan plans",
    ("0.10", "openai/gpt-oss-20b"):
        "0.10's GptOss model does not implement SupportsPP: pp > 1 is refused; kvplan plans",
    ("0.10", "tiiuae/falcon-mamba-7b"):
        "0.10 asserts 'Mamba does not support prefix caching' (model_executor/models/mamba.py:200), on by default; "
        "kvplan plans it",
}


def _engine(release: str) -> str:
    name = f"vllm@{release}"
    if name not in REGISTRY:
        pytest.skip(f"kvplan has no {name} row yet")
    return name


def _plan(engine: str, model_id: str, r: dict[str, Any]) -> Any:
    m = base._model(model_id)
    request = Request.of(m, tp=r["tp"], pp=r["pp"], kv_dtype=r["kv_cache_dtype"],
                         max_model_len=r.get("max_model_len") or m.max_model_len or 2048,
                         block_size=r.get("block_size"))
    return plan_request(request, (r.get("available_bytes") or 40 * 2**30,), engine)


def _skipped(model_id: str, r: dict[str, Any]) -> bool:
    return base._environment(r) or r.get("error_stage") == "oracle" or \
        (model_id, r.get("error_where")) in base.NOT_MODELLED


def _mismatch(engine: str, model_id: str, r: dict[str, Any]) -> str | None:
    """None when kvplan answers as the record; else what differs."""
    try:
        p = _plan(engine, model_id, r)
    except KvplanError as exc:
        return None if r.get("error") and r.get("error_stage") != "planning" else f"kvplan refused: {exc}"
    except Exception as exc:  # a crash is a difference like any other
        return f"kvplan raised {type(exc).__name__}: {exc}"
    if r.get("error_stage") == "planning":  # one max-length request does not fit
        expected = r["error"].split(": ", 1)[-1]
        if p.refusal is None:
            return f"vLLM refused ({expected[:120]}), kvplan planned {p.num_blocks} blocks"
        if "maximum model length is " in expected:
            estimate = int(expected.split("maximum model length is ")[1].split(".")[0].split(" ")[0])
            if p.refusal.estimated_max_model_len != estimate:
                return f"estimated max length {p.refusal.estimated_max_model_len} vs vLLM {estimate}"
        return None if p.refusal.message[:len(expected)] == expected else \
            f"refusal text {p.refusal.message[:120]!r} vs vLLM {expected[:120]!r}"
    if r.get("error"):
        return f"vLLM refused to build ({r['error'][:120]}), kvplan planned"
    if p.refusal is not None:
        return f"kvplan refused: {p.refusal.message[:120]}"
    ours: dict[str, Any] = {"num_blocks": p.num_blocks, "kv_tokens": p.kv_tokens,
                            "max_concurrency_log": f"{p.max_concurrency:.2f}x", "final_block_size": p.block_size,
                            "page_size_bytes_total_per_block": p.page_bytes,
                            # the release's _max_memory_usage_bytes_from_groups: its start-up check's bytes per
                            # request, which 0.14-0.18 count from the first group only (the reserve otherwise)
                            "max_memory_usage_bytes_per_request": p.reserve_bytes_per_request
                            if p.check_bytes_per_request is None else p.check_bytes_per_request}
    diffs = [f"{k} {v} vs vLLM {r[k]}" for k, v in ours.items() if r.get(k) is not None and v != r[k]]
    if r.get("max_concurrency") is not None and p.max_concurrency != pytest.approx(r["max_concurrency"], rel=1e-12):
        diffs.append(f"max_concurrency {p.max_concurrency} vs vLLM {r['max_concurrency']}")
    try:
        base._check_groups(p, r["groups"])
    except (AssertionError, KeyError) as exc:
        diffs.append(f"groups: {exc!r}"[:200])
    return "; ".join(diffs) or None


def _label(r: dict[str, Any]) -> str:
    return (f"tp{r['tp']}pp{r['pp']}-{r['kv_cache_dtype']}-bs{r.get('block_size') or 'auto'}-"
            f"len{r.get('max_model_len')}-{(r.get('available_bytes') or 0) / 2**30:g}GiB")


CASES = [pytest.param(release, model_id, id=f"{release}-{model_id.split('/')[-1]}")
         for release, models in FIXTURES.items() for model_id in models]


@pytest.mark.parametrize(("release", "model_id"), CASES)
def test_release_records(release: str, model_id: str, request: pytest.FixtureRequest) -> None:
    """Every record of the model for this release: kvplan's `vllm@X` answers as vLLM X did."""
    engine = _engine(release)
    if (release, model_id) in KNOWN_DIFFERENCES:
        request.applymarker(pytest.mark.xfail(reason=KNOWN_DIFFERENCES[release, model_id], strict=True))
    if not base._sized(model_id):
        pytest.skip(f"{model_id} has no kvplan weight traits")
    records = [r for r in FIXTURES[release][model_id]["records"] if not _skipped(model_id, r)]
    problems = [f"{_label(r)}: {m}" for r in records if (m := _mismatch(engine, model_id, r))]
    assert not problems, f"{len(problems)} of {len(records)} records differ:\n" + "\n".join(problems[:20])


LAYER_CASES = [pytest.param(release, model_id, id=f"{release}-{model_id.split('/')[-1]}")
               for release, models in FIXTURES.items() for model_id, f in models.items() if f["layers"]]


@pytest.mark.parametrize(("release", "model_id"), LAYER_CASES)
def test_release_layers(release: str, model_id: str) -> None:
    """Every cache module of the model at tp 1, as vLLM X's model files build them."""
    _engine(release)
    if not base._sized(model_id):
        pytest.skip(f"{model_id} has no kvplan weight traits")
    layout = kvplan.build_layout(base._model(model_id))
    layers = [_as_newer(layer) for layer in FIXTURES[release][model_id]["layers"]]
    vllm = Counter(base._vllm_layer(layer) for layer in layers for _ in range(layer["count"]))
    states = [layer for layer in layers if layer["type"] == "MambaSpec"]
    state_bytes = all(layer["real_page_size_bytes"] for layer in states)
    names = OLD_MAMBA_TYPES.get(release)
    ours = Counter(_as_older(base._kvplan_layer(p, layout), state_bytes, names)
                   for spec in layout.specs for p in parts(spec))
    assert ours == vllm


def _as_newer(layer: dict[str, Any]) -> dict[str, Any]:
    """A spec of an older release in the newer fields: MLA by its own spec type, one head size for K and V
    (head_size_v came later), and no unpadded state size where the MambaSpec has none (real_page_size_bytes
    came later)."""
    layer = dict(layer)
    if layer.pop("use_mla", False):  # before 0.11: a FullAttentionSpec flagged use_mla
        layer["type"] = "MLAAttentionSpec"
    if layer.get("head_size") is not None:
        layer.setdefault("head_size_v", layer["head_size"])
    if layer["type"] == "MambaSpec":
        layer.setdefault("real_page_size_bytes", None)
    return layer


# MambaSpec.mamba_type was a string before it was an enum (0.21): "mamba1", "mamba2", "short_conv",
# "linear_attention" for lightning attention, and for Qwen's gated DeltaNet "linear_attention" in 0.11
# (0.11.0 model_executor/models/qwen3_next.py:184), "gdn_attention" in 0.12-0.20 (0.12.0 qwen3_next.py:220,
# 0.19.0 model_executor/layers/mamba/gdn_linear_attn.py:206).
_STRINGS = {"MAMBA1": "mamba1", "MAMBA2": "mamba2", "SHORT_CONV": "short_conv", "LINEAR": "linear_attention"}
OLD_MAMBA_TYPES = {"0.10": {**_STRINGS, "GDN_ATTN": "linear_attention"},
                   "0.11": {**_STRINGS, "GDN_ATTN": "linear_attention"},
                   **{f"0.{minor}": {**_STRINGS, "GDN_ATTN": "gdn_attention"} for minor in range(12, 21)}}


def _as_older(key: tuple[Any, ...], state_bytes: bool, names: dict[str, str] | None) -> tuple[Any, ...]:
    """kvplan's layer key in an older release's terms: no state bytes where its spec has none, and the
    state's type by the string name the release gives it."""
    if key[0] != "mamba":
        return key
    kind = names.get(key[1], key[1]) if names else key[1]
    return (key[0], kind, key[2] if state_bytes else None, *key[3:])


def test_known_differences_are_fixtures() -> None:
    assert all(model_id in FIXTURES.get(release, {}) for release, model_id in KNOWN_DIFFERENCES)


def test_release_fixtures_are_compact() -> None:
    """Every release's records come from that release (the version each record file names), and all
    release fixtures together stay small."""
    size = sum(p.stat().st_size for p in ROOT.rglob("*.json")) if ROOT.is_dir() else 0
    assert size < MAX_FIXTURE_BYTES
    for release, models in FIXTURES.items():
        for fixture in models.values():
            version = fixture.get("vllm_version")
            assert version is None or ".".join(version.split(".")[:2]) == release
