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
    r = fit(model("meta-llama/Llama-3.1-70B"), gpu="H100", max_model_len=32768, concurrency=64, overhead_bytes=2 * GIB)
    assert r.best is not None and (r.best.tp, r.best.pp, r.best.kv_dtype) == (4, 3, "auto")
    assert 64 <= r.best.requests < 75
    assert (r.candidates[1].tp, r.candidates[1].pp) == (2, 6)
    eight = [c for c in r.candidates if c.num_gpus == 8]
    assert all(not c.fits for c in eight)


def test_llama70b_fp8_allowed_fits_on_seven(model: Any) -> None:
    # fp8 halves a request: 32,768 × 160 KiB = 5 GiB; 64 of them (320 GiB) beside 131.4 GiB of weights need
    # 451 GiB of ≈ 70.8 GiB per H100 (79.18 × 0.92 − 2 overhead): 6.4 GPUs, so 7 with PP 7 (issue 34: every PP)
    # serve ≈ 69. On 8 GPUs: tp8 -> 0.625 GiB a request on ≈ 54.4 GiB, ≈ 87 (less PP first -> tp8 pp1 fp8).
    r = fit(model("meta-llama/Llama-3.1-70B"), gpu="H100", max_model_len=32768, concurrency=64, kv_dtype="any",
            overhead_bytes=2 * GIB)
    assert r.best is not None and (r.best.tp, r.best.pp, r.best.kv_dtype, r.best.num_gpus) == (1, 7, "fp8", 7)
    assert 64 <= r.best.requests < 75
    eight = r.candidates[1]
    assert (eight.tp, eight.pp, eight.kv_dtype, eight.num_gpus) == (8, 1, "fp8", 8) and 80 < eight.requests < 95


def test_llama8b_fits_on_one(model: Any) -> None:
    # a request = 8,192 × 131,072 B = 1 GiB; budget ≈ 70.85 − 15 = 55.9 GiB -> ≈ 55 ≥ 16 on tp1
    r = fit(model("meta-llama/Llama-3.1-8B"), gpu="H100", max_model_len=8192, concurrency=16, overhead_bytes=2 * GIB)
    assert r.best is not None and (r.best.tp, r.best.pp) == (1, 1)


def test_nothing_fits_shows_closest(model: Any) -> None:
    # DeepSeek-V3: 70,272 B per token on every GPU (MLA is replicated): 1,000 × 128k tokens ≈ 8.6 TiB per GPU
    r = fit(model("deepseek-ai/DeepSeek-V3"), gpu="H200", max_model_len=131072, concurrency=1000, max_gpus=16,
            overhead_bytes=2 * GIB)
    assert r.best is None and r.candidates and not any(c.fits for c in r.candidates)
    assert "closest" in r.notes[-1]


def test_context_beyond_model_is_refused(model: Any) -> None:
    with pytest.raises(InputError):
        fit(model("meta-llama/Llama-2-7b-hf"), gpu="H100", max_model_len=8192, concurrency=1)


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
    r = fit(model("meta-llama/Llama-3.1-8B"), gpu="L4", max_model_len=131072, concurrency=1, gpus_per_node=1, max_gpus=1,
            overhead_bytes=2 * GIB)
    assert r.best is None and len(r.candidates) == 1
    assert r.candidates[0].reason.startswith("the engine refuses: To serve at least one request")


# --------------------------------------------------------------------------- replicas, GPU types, prices

def test_replicas_reach_the_concurrency(model: Any) -> None:
    # Llama-3.1-8B on an H100, tp 1: budget 79.18 × 0.92 − 14.96 (weights) − 2 (overhead) = 55.89 GiB; a 32k
    # request is 32,768 × 131,072 B = 4 GiB -> 13.97 per replica, 13 at once -> ceil(100 / 13) = 8 replicas.
    r = fit(model("meta-llama/Llama-3.1-8B"), gpu="H100", max_model_len=32768, concurrency=100, gpus_per_node=1,
            max_gpus=8, overhead_bytes=2 * GIB)
    # One replica of PP 7 (every PP, issue 34) needs 7 GPUs: 7 × 72.85 − 14.96 − 7 × 2 ≈ 481 GiB, ≈ 110 requests.
    assert r.best is not None and (r.best.pp, r.best.replicas, r.best.num_gpus) == (7, 1, 7)
    assert r.best.requests >= 100
    eight = r.candidates[1]
    assert (eight.tp, eight.pp, eight.replicas, eight.num_gpus) == (1, 1, 8, 8)
    assert 13.9 < eight.requests_per_replica < 14.0 and eight.requests == 8 * 13
    # pp 2 × 4 replicas, pp 4 × 2 and pp 8 × 1 are 8 GPUs too: fewer PP stages rank first
    assert [(c.pp, c.replicas) for c in r.candidates[1:5]] == [(1, 8), (2, 4), (4, 2), (8, 1)]


def test_one_replica_only_is_the_old_question(model: Any) -> None:
    r = fit(model("meta-llama/Llama-3.1-8B"), gpu="H100", max_model_len=32768, concurrency=100, gpus_per_node=1,
            max_gpus=8, max_replicas=1, overhead_bytes=2 * GIB)
    assert r.best is not None and (r.best.pp, r.best.replicas) == (7, 1)  # 110 requests on one 7-stage replica
    refused = next(c for c in r.candidates if (c.tp, c.pp) == (1, 1))
    assert not refused.fits and refused.reason == "1 replica serve 13 < 100 requests"


def test_several_gpu_types_ranked_by_cost(model: Any) -> None:
    # L40S (44.53 GiB) at $0.80 vs H100 at $2.50: one replica of PP 5 on L40S (5 × (44.53 × 0.92 − 2) − 14.96
    # ≈ 180 GiB of KV, 41.3 requests of 4 GiB; 5 GPUs, $4.00/h) is cheaper than 3 replicas of tp 2 ($4.80/h) and
    # than 4 H100s ($10/h) though it takes more GPUs than the H100s.
    r = fit(model("meta-llama/Llama-3.1-8B"), gpu=["H100", "L40S"], max_model_len=32768, concurrency=40,
            overhead_bytes=2 * GIB, prices={"H100": 2.5, "l40s": 0.8})
    best = r.best
    assert best is not None and (best.gpu, best.tp, best.pp, best.replicas) == ("L40S", 1, 5, 1)
    assert best.cost_per_hour == pytest.approx(4.0) and best.num_gpus == 5
    assert (r.candidates[1].tp, r.candidates[1].replicas, r.candidates[1].cost_per_hour) == (2, 3, 4.8)
    costs = [c.cost_per_hour for c in r.candidates if c.fits]
    assert costs == sorted(costs)
    assert r.gpus == ("H100-SXM", "L40S") and r.ranking.startswith("cost per hour")


def test_without_prices_fewest_gpus_rank_first(model: Any) -> None:
    r = fit(model("meta-llama/Llama-3.1-8B"), gpu=["L40S", "H200"], max_model_len=32768, concurrency=40,
            overhead_bytes=2 * GIB)
    assert r.best is not None and r.best.gpu == "H200" and r.ranking.startswith("GPUs")
    assert all(c.cost_per_hour is None for c in r.candidates)


def test_an_unpriced_gpu_ranks_after_the_priced_ones(model: Any) -> None:
    r = fit(model("meta-llama/Llama-3.1-8B"), gpu=["H200", "L40S"], max_model_len=32768, concurrency=40,
            overhead_bytes=2 * GIB, prices={"L40S": 0.8})
    assert r.best is not None and r.best.gpu == "L40S"
    assert any("no price for H200" in n for n in r.notes)


def test_the_default_gpus_are_the_priced_ones(model: Any) -> None:
    r = fit(model("meta-llama/Llama-3.1-8B"), max_model_len=8192, concurrency=4, prices={"A100-80G": 1.8, "L4": 0.4})
    assert r.gpus == ("A100-80G", "L4")


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(gpu="H900"), "unknown GPU 'H900'"),
    (dict(gpu="A100"), "ambiguous"),
    (dict(gpu=["H100", "H200"], gpu_memory_bytes=80 * GIB), "one GPU type"),
    (dict(engine="vlm"), "unknown engine"),
    (dict(kv_dtype="fp7"), "unknown KV dtype"),
    (dict(state_dtype="fp7"), "state_dtype: unknown dtype 'fp7'"),
    (dict(ssm_state_dtype="fp7"), "ssm_state_dtype: unknown dtype 'fp7'"),
    (dict(prices={"H100": -1.0}), "≥ 0"),
    (dict(prices={"H999": 1.0}), "unknown GPU"),
    (dict(max_replicas=0), "max_replicas must be positive"),
])
def test_bad_input_raises_before_planning(model: Any, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        fit(model("meta-llama/Llama-3.1-8B"), max_model_len=8192, concurrency=4, **{"gpu": "H100", **kwargs})


def test_prices_inline_toml_and_csv() -> None:
    from kvplan.planning.prices import parse_prices, prices_from_file_text

    assert parse_prices("H100=2.49, H200=$3.50") == {"H100": 2.49, "H200": 3.5}
    toml = "# $ per GPU-hour\nH100 = 2.49\n\"A100-80G\" = 1.8\n"
    assert prices_from_file_text(toml, ".toml") == {"H100": 2.49, "A100-80G": 1.8}
    assert prices_from_file_text("[prices]\nL40S = 0.9\n", ".TOML") == {"L40S": 0.9}
    assert prices_from_file_text("gpu,price\n# cloud A\nH100, 2.49\nL40S,0.9\n", ".csv") == {"H100": 2.49,
                                                                                           "L40S": 0.9}
    for bad in ("H100", "H100=", "=2", "H100=x"):
        with pytest.raises(InputError):
            parse_prices(bad)
    with pytest.raises(InputError, match="not valid TOML"):
        prices_from_file_text("H100 = = 2", ".toml")


def test_fit_cli_with_prices_from_a_file(run_cli: Any, tmp_path: Any) -> None:
    prices = tmp_path / "prices.csv"
    prices.write_text("gpu,price\nH100,2.5\nL40S,0.8\n")
    code, out, err = run_cli("fit", "meta-llama/Llama-3.1-8B", "--context", "32k", "--concurrency", "40",
                             "--price", str(prices), "--overhead", "2GiB", "--json")
    assert code == 0, err
    p = json.loads(out)
    assert p["gpus"] == ["H100-SXM", "L40S"] and p["fits"]
    assert (p["best"]["gpu"], p["best"]["replicas"], p["best"]["cost_per_hour"]) == ("L40S", 1, 4.0)
    code, out, _ = run_cli("fit", "meta-llama/Llama-3.1-8B", "--context", "32k", "--concurrency", "40",
                           "--price", str(prices), "--overhead", "2GiB")
    assert "-> 1 × (tp 1 pp 5) on L40S, KV auto: 5 GPUs, $4.00/h" in out
    assert "ranked by cost per hour" in out and "$/hour" in out
