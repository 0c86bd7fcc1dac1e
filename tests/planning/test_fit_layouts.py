"""`kvplan fit` over every layout the engine offers (issue 24, part 2): DP attention + EP beside TP × PP, on one
node or several, and each plan's command pasted back into `kvplan capacity -- …` (the done-when checks).

Engine rules under test: vLLM's replica is dp × tp × pp GPUs with
EP = dp × tp (0.33 fused_moe/config.py:1198-1230), one KV pool per DP rank; SGLang's DP attention sits inside
the tp GPUs (tp × pp GPUs, 0.5.2 layers/dp_attention.py); TensorRT-LLM is planned with TP and PP only.
"""

from __future__ import annotations

import json
import shlex
from typing import Any

import pytest

from kvplan.engines import get_engine
from kvplan.formulas.request import Parallel
from kvplan.planning.capacity import capacity
from kvplan.planning.fit import fit
from kvplan.planning.layouts import Planned, shapes, why

DONE_WHEN = ("deepseek-ai/DeepSeek-V3", "--gpu", "H200", "--max-model-len", "32k", "--concurrency", "256", "--json")


def _fit(run_cli: Any, *args: str) -> dict[str, Any]:
    code, out, err = run_cli("fit", *args)
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def _pasted_back(run_cli: Any, gpu: str, best: dict[str, Any]) -> dict[str, Any]:
    code, out, err = run_cli("capacity", "--gpu", gpu, "--json", "--", *shlex.split(best["command"]))
    assert code == 0, err
    back: dict[str, Any] = json.loads(out)
    assert back["command"] == best["command"]
    assert back["kv_tokens_per_replica"] == best["kv_tokens_per_replica"]
    assert back["kv_tokens"] == best["kv_tokens_per_rank"]
    assert back["requests_at_max_model_len"] == best["requests_per_replica"]
    assert {k: back["layout"][k] for k in best["layout"]} == best["layout"]
    assert back["layout"]["gpus"] == best["gpus_per_replica"]
    return back


@pytest.mark.parametrize(("engine", "flags"), [
    ("vllm", ("--data-parallel-size", "--enable-expert-parallel", "--gpu-memory-utilization")),
    ("sglang@0.5.23", ("--enable-dp-attention", "--dp-size", "--ep-size", "--mem-fraction-static")),
])
def test_deepseek_v3_considers_dp_ep_and_tp_on_one_and_two_nodes(run_cli: Any, engine: str,
                                                                  flags: tuple[str, ...]) -> None:
    data = _fit(run_cli, *DONE_WHEN, "--engine", engine)
    tried = data["considered"]
    assert any(t.startswith("DP 8 + EP 8") and t.endswith("on 1 node") for t in tried), tried
    assert any(t.startswith("DP 16 + EP 16") and t.endswith("on 2 nodes") for t in tried), tried
    assert "TP 8 on 1 node" in tried and "TP 8 PP 2 on 2 nodes" in tried
    # with every PP (issue 34) fewer GPUs win (TP 1 PP 11 on 11 H200): the DP layout is among the alternatives
    best = _first_dp(data)
    assert best["dp"] > 1 and all(f in best["flags"] for f in flags), best["command"]
    assert best["requests"] >= 256 and best["fits"]
    assert best["pools"] == best["dp"] and best["kv_tokens_per_replica"] == best["dp"] * best["kv_tokens_per_rank"]
    back = _pasted_back(run_cli, "H200", best)
    assert int(back["requests_at_max_model_len"]) * best["replicas"] >= 256  # the pasted plan serves the load
    assert back["refusal"] is None


def _first_dp(data: dict[str, Any], pp: int | None = None) -> dict[str, Any]:
    """The first-ranked DP layout shown (of `pp` stages, where given)."""
    found: dict[str, Any] = next(c for c in [data["best"], *data["alternatives"]]
                                 if c["dp"] > 1 and pp in (None, c["pp"]))
    return found


def test_vllm_dp_across_nodes_is_written_as_local_ranks(run_cli: Any) -> None:
    best = _first_dp(_fit(run_cli, *DONE_WHEN), pp=1)
    # DP 16 × TP 1 on 8-GPU nodes: 8 DP ranks on each of 2 nodes (vLLM --data-parallel-size-local, 0.9.0 on)
    assert (best["dp"], best["tp"], best["pp"], best["nodes"], best["gpus_per_replica"]) == (16, 1, 1, 2, 16)
    assert best["flags"]["--data-parallel-size-local"] == 8 and "--nnodes" not in best["flags"]
    assert best["layout"] == {"tp": 1, "pp": 1, "dp": 16, "ep": 16, "dcp": 1, "nodes": 2, "gpus_per_node": 8}


def test_sglang_dp_attention_is_inside_tp(run_cli: Any) -> None:
    best = _first_dp(_fit(run_cli, *DONE_WHEN, "--engine", "sglang@0.5.23"))
    assert best["tp"] == best["dp"] == best["ep"] == 16 and best["gpus_per_replica"] == best["tp"] * best["pp"] == 16
    assert best["nodes"] == best["flags"]["--nnodes"] == 2  # the TP group over 2 nodes (data_parallel_controller.py)


def test_trtllm_is_planned_with_tp_and_pp_only(run_cli: Any) -> None:
    data = _fit(run_cli, *DONE_WHEN, "--engine", "trtllm")
    assert not any(t.startswith("DP") for t in data["considered"])
    best = data["best"]
    assert best["dp"] == best["ep"] == 1 and best["command"].startswith("trtllm-serve deepseek-ai/DeepSeek-V3 --tp_size")
    _pasted_back(run_cli, "H200", best)
    assert data["why"] is None


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_a_dense_model_gets_no_dp_layouts_and_its_command_reads_back(run_cli: Any, engine: str) -> None:
    data = _fit(run_cli, "meta-llama/Llama-3.1-70B", "--gpu", "H100", "--max-model-len", "32k", "--concurrency", "64",
                "--engine", engine, "--json")
    assert not any(t.startswith("DP") for t in data["considered"])
    _pasted_back(run_cli, "H100", data["best"])


@pytest.mark.parametrize(("engine", "flag", "nodes"), [("vllm", "--nnodes", 2), ("sglang", "--nnodes", 3),
                                                      ("trtllm", "--gpus_per_node", 4)])
def test_a_pp_layout_across_nodes_reads_back(run_cli: Any, engine: str, flag: str, nodes: int) -> None:
    # 141 GB of bf16 weights on 24 GB L4s, 4 to a node: TP 4 inside the node, PP over 2 or 3 nodes
    data = _fit(run_cli, "meta-llama/Llama-3.1-70B", "--gpu", "L4", "--max-model-len", "8k", "--concurrency", "8",
                "--max-replicas", "1", "--gpus-per-node", "4", "--engine", engine, "--json")
    best = data["best"]
    assert best["tp"] == 4 and best["pp"] > 1 and best["nodes"] == -(-best["gpus_per_replica"] // 4) > 1
    assert best["flags"][flag] == nodes
    assert len(best["kv_budget_bytes_per_stage"]) == best["pp"] and best["limiting_stage"] is not None
    if engine == "vllm":  # the last stage holds lm_head and runs the sampler (0.33 gpu_model_runner.py:6132-6143)
        assert best["limiting_stage"] == best["pp"] - 1
    _pasted_back(run_cli, "L4", best)


def test_the_ratio_is_the_two_plans_own(model: Any) -> None:
    # one node: DP 8 + EP 8 against the layouts of the other family on the same 8 GPUs, each planned again here.
    # vLLM 0.10 has no DCP (0.11 on: TP 8 DCP 8 would keep one latent per request and beat DP 8); 100 requests are
    # more than PP 7 on 7 GPUs serves (92), so 8 GPUs, and PP 1 ranks first among them
    v3, engine = model("deepseek-ai/DeepSeek-V3"), "vllm@0.10"
    r = fit(v3, gpu="H200", max_model_len=32768, concurrency=100, nodes=1, engine=engine)
    assert r.best is not None and (r.best.dp, r.best.ep, r.best.tp) == (8, 8, 1) and r.max_gpus == 8
    mine = capacity(v3, gpu="H200", max_model_len=32768, tp=1, dp=8, ep=8, engine=engine)
    tp8 = capacity(v3, gpu="H200", max_model_len=32768, tp=8, engine=engine)
    ratio = mine.plan.kv_tokens * mine.plan.pools / tp8.plan.kv_tokens
    assert r.why is not None and f"{ratio:.2f}× TP 8's ({tp8.plan.kv_tokens:,})" in r.why, r.why
    assert ratio > 4  # the latent is whole on each TP rank: 8 disjoint pools beat one replicated 8 ways


def test_nodes_bound_the_gpus(model: Any) -> None:
    r = fit(model("Qwen/Qwen3-30B-A3B"), gpu="H100", max_model_len=32768, concurrency=16, nodes=2, gpus_per_node=4)
    assert r.max_gpus == 8 and all(c.num_gpus <= 8 for c in r.candidates if c.fits)


@pytest.mark.parametrize("args", [("--nodes", "0"), ("--gpus-per-node", "0"), ("--nodes", "-1")])
def test_bad_node_counts_are_one_line_and_exit_2(run_cli: Any, args: tuple[str, ...]) -> None:
    code, out, err = run_cli("fit", "Qwen/Qwen3-8B", "--gpu", "H100", "--max-model-len", "8k", "--concurrency", "4",
                             *args)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err


def Shape(tp: int, pp: int, dp: int = 1, ep: int = 1) -> Parallel:
    return Parallel(tp=tp, pp=pp, dp=dp, ep=ep)


def test_shapes_per_engine(model: Any) -> None:
    vllm_engine, sglang, trtllm = get_engine("vllm"), get_engine("sglang"), get_engine("trtllm")
    dense = shapes(vllm_engine, model("meta-llama/Llama-3.1-70B"), 8, 16)
    assert all(s.dp == 1 for s in dense) and Shape(8, 2) in dense
    v3 = model("deepseek-ai/DeepSeek-V3")
    vllm = shapes(vllm_engine, v3, 8, 16)
    assert Shape(1, 1, 16, 16) in vllm and Shape(2, 1, 8, 16) in vllm and Shape(1, 1, 32, 32) not in vllm
    assert Shape(16, 1, 16, 16) in shapes(sglang, v3, 8, 16)
    assert all(s.dp == 1 for s in shapes(trtllm, v3, 8, 16))
    assert vllm_engine.multi_node(Shape(1, 1, 16, 16), 8) == {"dp_local": 8, "nodes": 2}
    assert vllm_engine.multi_node(Shape(8, 2), 8) == {"nodes": 2}
    assert trtllm.multi_node(Shape(8, 2), 8) == {"gpus_per_node": 8}
    assert sglang.multi_node(Shape(8, 1, 8, 8), 8) == {}
    # GPUs of one replica: vLLM's dp engines of tp × pp GPUs; SGLang's DP attention runs inside its tp GPUs
    assert vllm_engine.replica_gpus(Shape(2, 1, 8, 16)) == 16 and sglang.replica_gpus(Shape(8, 1, 8, 8)) == 8


def test_why_needs_the_other_family_on_the_same_gpus() -> None:
    dp = Planned(shape=Shape(1, 1, 8, 8), gpu="H200", kv_dtype="auto", gpus=8, kv_tokens=800)
    tp = Planned(shape=Shape(8, 1), gpu="H200", kv_dtype="auto", gpus=8, kv_tokens=100)
    other = Planned(shape=Shape(8, 2), gpu="H200", kv_dtype="auto", gpus=16, kv_tokens=400)
    assert why(dp, [dp, other]) is None
    assert why(dp, [dp, tp]) == ("DP 8 + EP 8 (TP 1): 8.00× the KV tokens of TP 8 on the same 8 H200 GPUs (800 vs "
                                 "100 tokens per replica)")
