"""`kvplan fit` on hand-checked cases (H100 = 79.18 GiB as vLLM reports it; overhead fixed at 2 GiB).

vLLM budget per GPU ≈ 79.18 × 0.92 − weights − 2 ≈ 70.85 GiB − weights (Llama-3.1-70B: 70.55 B params,
141.1 GB = 131.4 GiB in bf16). A 32,768-token request per GPU is 32,768 × heads × 512 B × layers.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvplan.errors import InputError
from kvplan.planning.fit import fit

GIB = 2**30


def test_llama70b_needs_twelve_gpus(model: Any) -> None:
    # 8 GPUs (tp8, or tp4 pp2): weights ≈ 16.4 GiB -> budget ≈ 54.4 GiB; a request = 32,768 × 1 head × 512 B
    #   × 80 layers = 1.25 GiB -> ≈ 43 < 64 requests.
    # 12 GPUs, tp4 pp3 (stages 27/27/26 layers): weights ≈ 11 GiB -> ≈ 59.9 GiB; a request = 32,768 × 2 × 512
    #   × 27 = 0.84 GiB -> ≈ 70 ≥ 64. tp2 pp6 also has 12 GPUs but more PP: ranked second.
    r = fit(model("meta-llama/Llama-3.1-70B"), gpu="H100", context=32768, concurrency=64, overhead_bytes=2 * GIB)
    assert r.best is not None and (r.best.tp, r.best.pp, r.best.kv_dtype) == (4, 3, "auto")
    assert 64 <= r.best.requests < 75
    assert (r.candidates[1].tp, r.candidates[1].pp) == (2, 6)
    eight = [c for c in r.candidates if c.num_gpus == 8]
    assert all(not c.fits for c in eight)


def test_llama70b_fp8_allowed_fits_on_eight(model: Any) -> None:
    # fp8 halves a request: tp8 -> 0.625 GiB, ≈ 87 requests on ≈ 54.4 GiB; 4 GPUs (weights ≈ 32.9 GiB,
    # budget ≈ 37.9 GiB, 1.25 GiB per request) give ≈ 30. Same GPU count: less PP first -> tp8 pp1 fp8.
    r = fit(model("meta-llama/Llama-3.1-70B"), gpu="H100", context=32768, concurrency=64, kv_dtype="any",
            overhead_bytes=2 * GIB)
    assert r.best is not None and (r.best.tp, r.best.pp, r.best.kv_dtype) == (8, 1, "fp8")
    assert 80 < r.best.requests < 95


def test_llama8b_fits_on_one(model: Any) -> None:
    # a request = 8,192 × 131,072 B = 1 GiB; budget ≈ 70.85 − 15 = 55.9 GiB -> ≈ 55 ≥ 16 on tp1
    r = fit(model("meta-llama/Llama-3.1-8B"), gpu="H100", context=8192, concurrency=16, overhead_bytes=2 * GIB)
    assert r.best is not None and (r.best.tp, r.best.pp) == (1, 1)


def test_nothing_fits_shows_closest(model: Any) -> None:
    # DeepSeek-V3: 70,272 B per token on every GPU (MLA is replicated): 1,000 × 128k tokens ≈ 8.6 TiB per GPU
    r = fit(model("deepseek-ai/DeepSeek-V3"), gpu="H200", context=131072, concurrency=1000, max_gpus=16,
            overhead_bytes=2 * GIB)
    assert r.best is None and r.candidates and not any(c.fits for c in r.candidates)
    assert "closest" in r.notes[-1]


def test_context_beyond_model_is_refused(model: Any) -> None:
    with pytest.raises(InputError):
        fit(model("meta-llama/Llama-2-7b-hf"), gpu="H100", context=8192, concurrency=1)


def test_fit_cli_json(run_cli: Any) -> None:
    code, out, err = run_cli("fit", "meta-llama/Llama-3.1-70B", "--gpu", "H100", "--context", "32k",
                             "--concurrency", "64", "--overhead", "2GiB", "--json")
    assert code == 0, err
    p = json.loads(out)
    assert (p["best"]["tp"], p["best"]["pp"]) == (4, 3)
    ranks = [(c["num_gpus"], c["pp"]) for c in p["alternatives"] if c["fits"]]
    assert ranks == sorted(ranks)


def test_fit_cli_table(run_cli: Any) -> None:
    code, out, _ = run_cli("fit", "meta-llama/Llama-3.1-8B", "--gpu", "H100", "--context", "8k",
                           "--concurrency", "16", "--engine", "sglang")
    assert code == 0 and "tp 1 pp 1" in out


def test_a_refusal_does_not_fit(model: Any) -> None:
    # one L4 (22.05 GiB): 22.05 × 0.92 − 14.96 weights − 2 overhead ≈ 3.3 GiB of KV, a 131,072-token request needs
    # 16 GiB: vLLM refuses to start, so the layout does not fit, with vLLM's words as the reason
    r = fit(model("meta-llama/Llama-3.1-8B"), gpu="L4", context=131072, concurrency=1, gpus_per_node=1, max_gpus=1,
            overhead_bytes=2 * GIB)
    assert r.best is None and len(r.candidates) == 1
    assert r.candidates[0].reason.startswith("the engine refuses: To serve at least one request")
