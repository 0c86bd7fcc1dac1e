"""`kvplan fit`'s space and its pruning (issue 34): every TP that divides the heads, every PP up to the layers, DP
with PP, EP without DP and DCP where the engine offers it; a setup is skipped only where its bound shows that it
cannot be shown, so a pruned fit answers exactly what planning every setup answers."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kvplan.engines import get_engine
from kvplan.formulas.request import Parallel
from kvplan.planning import search
from kvplan.planning.fit import FitResult, fit
from kvplan.planning.layouts import dcp_sizes, layouts, shapes, tp_sizes
from kvplan.units import GIB


def test_pp_5_on_l40s_is_found(run_cli: Any) -> None:
    """Issue 34's case: fit answered "nothing fits" (PP 1, 2, 3, 4, 6, 8, 16 only) although
    `kvplan capacity meta-llama/Llama-3.1-8B --gpu L40S --pp 5 --max-model-len 32k` gives 42.5 requests."""
    code, out, err = run_cli("fit", "meta-llama/Llama-3.1-8B", "--max-model-len", "32k", "--concurrency", "40",
                             "--gpu", "L40S", "--price", "L40S=0.86", "--max-gpus", "5", "--json")
    assert code == 0, err
    best = json.loads(out)["best"]
    # 5 L40S at $0.86 = $4.30/h, against the tutorial's 6 (3 × TP 2) at $5.16/h
    assert (best["gpu"], best["tp"], best["pp"], best["replicas"], best["num_gpus"]) == ("L40S", 1, 5, 1, 5)
    assert best["cost_per_hour"] == 4.3 and best["requests"] >= 40
    code, out, err = run_cli("capacity", "meta-llama/Llama-3.1-8B", "--gpu", "L40S", "--pp", "5", "--max-model-len",
                             "32k", "--json")
    assert code == 0, err
    assert json.loads(out)["requests_at_max_model_len"] == best["requests_per_replica"]


def test_the_space(model: Any) -> None:
    vllm, sglang, trtllm = get_engine("vllm"), get_engine("sglang"), get_engine("trtllm")
    qwen = model("Qwen/Qwen2.5-14B")  # 40 query heads, 8 KV heads: TP 5 divides the heads but not the KV heads
    assert tp_sizes(qwen, 8) == [1, 2, 4, 8]
    llama = model("meta-llama/Llama-3.1-8B")  # 32 layers
    assert (1, 32) in layouts(llama, 8, 64) and (1, 33) not in layouts(llama, 8, 64)
    assert [p for t, p in layouts(llama, 8, 5) if t == 1] == [1, 2, 3, 4, 5]
    assert dcp_sizes(vllm, llama, 8) == []  # 8 KV heads over TP 8: nothing replicated, DCP saves nothing
    v3 = model("deepseek-ai/DeepSeek-V3")  # MLA: the latent is replicated over TP
    assert dcp_sizes(vllm, v3, 8) == [2, 4, 8] and dcp_sizes(sglang, v3, 8) == []
    space = shapes(vllm, v3, 8, 16)
    assert Parallel(tp=8, pp=2, dcp=8) in space  # DCP
    assert Parallel(tp=8, pp=2, ep=8) in space  # EP without DP
    assert Parallel(tp=1, pp=2, dp=8, ep=8) in space  # DP with PP
    assert Parallel(tp=1, pp=3, dp=8, ep=8) not in space  # 24 GPUs, over the 16 allowed
    assert Parallel(tp=8, pp=1, ep=8) in shapes(sglang, v3, 8, 16)
    assert all(s.pp == 1 for s in shapes(sglang, v3, 8, 16) if s.dp > 1)
    assert all(s.dp == s.ep == s.dcp == 1 for s in shapes(trtllm, v3, 8, 16))


def _everything(monkeypatch: pytest.MonkeyPatch, **kwargs: Any) -> tuple[FitResult, FitResult]:
    pruned = fit(**kwargs)
    with monkeypatch.context() as m:
        m.setattr(search, "_wanted", lambda *_: True)
        full = fit(**kwargs)
    return pruned, full


@pytest.mark.parametrize("kwargs", [
    pytest.param(dict(model="meta-llama/Llama-3.1-8B", gpu=["L40S", "H100", "A10G"], max_model_len=32768,
                      concurrency=40, prices={"L40S": 0.86, "H100": 2.49}, max_gpus=12), id="dense-priced"),
    pytest.param(dict(model="meta-llama/Llama-3.1-70B", gpu=["H100", "L40S", "A100-40G"], max_model_len=32768,
                      concurrency=64, max_gpus=24), id="dense-by-gpus"),
    pytest.param(dict(model="meta-llama/Llama-3.1-70B", gpu=["L4", "T4"], max_model_len=131072, concurrency=64,
                      max_gpus=16), id="nothing-fits"),
    pytest.param(dict(model="deepseek-ai/DeepSeek-V3", gpu="H200", max_model_len=32768, concurrency=128,
                      max_gpus=16, kv_dtype="any"), id="moe-mla"),
    pytest.param(dict(model="meta-llama/Llama-3.1-70B", gpu=["H100", "A100-80GB"], max_model_len=32768, concurrency=48,
                      max_gpus=16, engine="vllm@0.7", gpu_memory_utilization=0.8), id="vllm-utilization"),
    pytest.param(dict(model="Qwen/Qwen3-Next-80B-A3B-Thinking", gpu=["H100", "L40S"], max_model_len=65536,
                      concurrency=32, max_gpus=16, engine="sglang"), id="hybrid-sglang"),
    pytest.param(dict(model="openai/gpt-oss-20b", gpu=["L4", "RTX-4090"], max_model_len=131072, concurrency=16,
                      max_gpus=8, overhead_bytes=2 * GIB), id="sliding-window"),
])
def test_pruning_changes_nothing_shown(monkeypatch: pytest.MonkeyPatch, kwargs: dict[str, Any]) -> None:
    pruned, full = _everything(monkeypatch, **kwargs)
    assert full.num_skipped == 0 and pruned.num_evaluated + pruned.num_skipped == full.num_evaluated
    assert pruned.candidates == full.candidates and pruned.best == full.best
    assert (pruned.why, pruned.notes, pruned.considered) == (full.why, full.notes, full.considered)


def test_pruning_skips_most_of_a_large_space(model: Any) -> None:
    r = fit(model("meta-llama/Llama-3.1-70B"), gpu=["H100", "L40S", "A100-80G", "H200"], max_model_len=32768,
            concurrency=64)
    assert r.num_skipped > 4 * r.num_evaluated, (r.num_evaluated, r.num_skipped)


def test_vllm_fraction() -> None:
    """vLLM's budget is cut from ⌈M × gpu_memory_utilization⌉: the asked value, else the release's default; not with
    weights in host memory, nor for another engine."""
    from kvplan.engines import get_engine
    from kvplan.planning.request import capacity_request

    question = capacity_request("meta-llama/Llama-3.1-8B", max_model_len=8192)
    assert search.usable_fraction(question, get_engine("vllm")) == 0.92
    assert search.usable_fraction(question, get_engine("vllm@0.7")) == 0.9
    assert search.usable_fraction(question, get_engine("sglang")) == 1.0
    asked = capacity_request("meta-llama/Llama-3.1-8B", max_model_len=8192, gpu_memory_utilization=0.5)
    assert search.usable_fraction(asked, get_engine("vllm")) == 0.5
    offloaded = capacity_request("meta-llama/Llama-3.1-8B", max_model_len=8192, cpu_offload_bytes=1 << 30)
    assert search.usable_fraction(offloaded, get_engine("vllm")) == 1.0


def test_the_bound(model: Any) -> None:
    from kvplan.planning.request import capacity_request

    question = capacity_request(model("meta-llama/Llama-3.1-8B"), max_model_len=8192)
    floor = search.floors(question, ("auto", "fp8"), 8192)
    # Llama-3.1-8B: 32 layers × 8 KV heads × 128 × 2 (K, V) × 2 bytes = 128 KiB a token in bf16, 64 KiB in fp8
    assert floor.request_bytes == {"auto": 8192 * 128 * 1024, "fp8": 8192 * 64 * 1024}
    assert floor.weights_bytes == 2 * 8_030_261_248  # 8,030,261,248 parameters in bf16
    # one 80 GiB GPU: 1.1 × (80 GiB − W) / 1 GiB
    assert search.requests_max(floor, "auto", 1, 80 * GIB) == pytest.approx(1.1 * (80 * GIB - floor.weights_bytes)
                                                                          / GIB)
    assert search.fewest_gpus(10.5, 2, 40, 64, None) == 8  # 10 a replica: 4 replicas of 2
    assert search.fewest_gpus(10.5, 2, 40, 64, 3) is None and search.fewest_gpus(0.5, 1, 1, 8, None) is None
    for given in (dict(kv_budget_bytes=10 * GIB), dict(cpu_offload_bytes=0, kv_offloading_bytes=GIB)):
        unbounded = search.floors(capacity_request(question, **given), ("auto",), 8192)
        assert search.requests_max(unbounded, "auto", 1, 80 * GIB) == search.NO_BOUND


def test_the_bound_counts_the_replicated_cache(model: Any) -> None:
    """MLA's latent is on every TP rank (DCP splits its tokens): without data parallel S is TP / DCP × the
    unsharded request; with it (one request on one DP rank) the unsharded request bounds S."""
    from kvplan.planning.request import capacity_request

    question = capacity_request(model("deepseek-ai/DeepSeek-V3"), max_model_len=8192)
    floor = search.floors(question, ("auto",), 8192, [(8, 1), (8, 4)])
    whole = floor.request_bytes["auto"]
    assert floor.replicated_bytes == {("auto", 8, 1): 8 * whole, ("auto", 8, 4): 2 * whole}
    memory = 80 * GIB
    tp8, dcp4 = Parallel(tp=8), Parallel(tp=8, dcp=4)
    assert search.requests_max(floor, "auto", 8, memory, tp8) == pytest.approx(
        search.requests_max(floor, "auto", 8, memory) / 8)
    assert search.requests_max(floor, "auto", 8, memory, dcp4) == pytest.approx(
        search.requests_max(floor, "auto", 8, memory) / 2)
    assert search.requests_max(floor, "auto", 8, memory, Parallel(tp=1, dp=8, ep=8)) == \
        search.requests_max(floor, "auto", 8, memory)
