"""`kvplan probe --tp N` on a real torch.distributed runtime (gloo on CPU).

Each rank allocates its own shard; rank 0 reports every rank. Expected bytes are derived by hand;
the replication figures are where TP duplicates memory: MLA on every rank, KV heads once tp > heads.
Subprocesses: ranks are spawned with the 'spawn' start method, which must re-import __main__.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("torch")

ENV = {**os.environ, "TRITON_INTERPRET": "1"}


def _probe(*args: str, launcher: list[str] | None = None) -> dict:
    cmd = [*(launcher or [sys.executable, "-m", "kvplan"]), "probe", "--device", "cpu", "--json", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout)


def _by_model(payload: dict) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for row in payload["results"]:
        out.setdefault(row["model"], []).append(row)
    return out


@pytest.mark.slow
def test_tp2_spawned_ranks_with_kernel_check():
    payload = _probe("--tp", "2", "--blocks", "8", "-m", "meta-llama/Llama-3.1-8B", "-m", "deepseek-ai/DeepSeek-V2-Lite")
    rows = _by_model(payload)
    assert payload["ok"] and sorted(r["tp_rank"] for r in rows["meta-llama/Llama-3.1-8B"]) == [0, 1]
    # Llama-3.1-8B, 8 KV heads / tp 2 = 4 per rank: 32 layers × 8 blocks × 16 × 4 × 256 × 2 B = 8,388,608
    assert {r["measured_bytes"] for r in rows["meta-llama/Llama-3.1-8B"]} == {8_388_608}
    # MLA is replicated: every rank holds the whole latent, 27 × 8 × 16 × 576 × 2 B = 3,981,312
    assert {r["measured_bytes"] for r in rows["deepseek-ai/DeepSeek-V2-Lite"]} == {3_981_312}
    assert all(r["kernel_check"] == "pass" for r in payload["results"])
    replication = {r["model"]: r["replication"] for r in payload["replication"]}
    assert replication == {"meta-llama/Llama-3.1-8B": 1.0, "deepseek-ai/DeepSeek-V2-Lite": 2.0}


@pytest.mark.slow
def test_tp4_spawned_ranks_replicate_kv_heads():
    payload = _probe("--tp", "4", "--blocks", "8", "--seqs", "2", "--no-kernel-check",
                     "-m", "Qwen/Qwen3-Next-80B-A3B-Thinking", "-m", "Qwen/Qwen3-8B")
    rows = _by_model(payload)
    assert payload["ok"] and len(payload["results"]) == 8
    # Qwen3-Next at tp 4: 2 KV heads → 1 per rank (replicated 2×): 12 × 8 × 16 × 1 × 512 × 2 B = 1,572,864;
    # linear state split 4 ways: 36 layers × 2 seqs × (3 × 2048 + 8 × 128 × 128) × 2 B = 19,759,104
    for r in rows["Qwen/Qwen3-Next-80B-A3B-Thinking"]:
        assert {g["kind"]: g["measured_bytes"] for g in r["groups"]} == {"full": 1_572_864, "linear": 19_759_104}
    # Qwen3-8B: 8 KV heads → 2 per rank: 36 × 8 × 16 × 2 × 256 × 2 B = 4,718,592
    assert {r["measured_bytes"] for r in rows["Qwen/Qwen3-8B"]} == {4_718_592}
    assert sorted(r["tp_rank"] for r in rows["Qwen/Qwen3-8B"]) == [0, 1, 2, 3]
    replication = {r["model"]: r["replication"] for r in payload["replication"]}
    assert replication["Qwen/Qwen3-8B"] == 1.0
    # all ranks: 4 × (1,572,864 + 19,759,104) over unsharded 3,145,728 + 79,036,416 = 1.0383 (full layers 2×)
    assert replication["Qwen/Qwen3-Next-80B-A3B-Thinking"] == pytest.approx(4 * 21_331_968 / 82_182_144)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("torchrun") is None and not os.path.exists(
    os.path.join(os.path.dirname(sys.executable), "torchrun")), reason="torchrun is not installed")
def test_under_torchrun():
    torchrun = shutil.which("torchrun") or os.path.join(os.path.dirname(sys.executable), "torchrun")
    launcher = [torchrun, "--standalone", "--nproc-per-node", "2", "-m", "kvplan"]
    payload = _probe("--blocks", "4", "--no-kernel-check", "-m", "deepseek-ai/DeepSeek-V2-Lite", launcher=launcher)
    # torchrun's WORLD_SIZE sets tp 2: two ranks, each with the whole latent, 27 × 4 × 16 × 576 × 2 B = 1,990,656
    assert [r["tp_rank"] for r in payload["results"]] == [0, 1]
    assert {r["measured_bytes"] for r in payload["results"]} == {1_990_656}
