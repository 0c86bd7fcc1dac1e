"""A planning script type-checks under `mypy --strict` (kvplan ships py.typed), and a wrong keyword type is caught
before it runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SCRIPT = '''\
from __future__ import annotations

import kvplan

rows: list[tuple[str, str, int, str]] = []
for model in ("Qwen/Qwen3-8B", "meta-llama/Llama-3.1-8B"):
    for gpu in ("H100", "L40S"):
        r: kvplan.CapacityResult = kvplan.capacity(model, gpu=gpu, tp=2, max_model_len="32k", kv_dtype="fp8",
                                                   gpu_memory_utilization=0.9, kv_budget_bytes=None)
        rows.append((model, gpu, r.plan.kv_tokens, r.verdict))
        warnings: tuple[str, ...] = r.warnings
size: kvplan.KvCacheResult = kvplan.kv_cache("Qwen/Qwen3-8B", tp=2, max_model_len=32768, batch=8)
every: list[kvplan.CapacityResult] = kvplan.capacity_all("Qwen/Qwen3-8B", engine=["vllm", "sglang"], gpu="H100")
best: kvplan.FitResult = kvplan.fit("Qwen/Qwen3-8B", gpu=["H100", "L40S"], max_model_len=32768, batch=16,
                                    prices={"H100": 2.49}).raise_for_refusal()
grid: kvplan.Sweep = kvplan.sweep(["Qwen/Qwen3-8B"], max_model_len=[4096, 32768], tp="1,2")
'''


def mypy(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "script.py").write_text(source)
    env = {**os.environ, "MYPYPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--no-incremental",
                           "--python-version", "3.11", "script.py"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=600)


def test_a_planning_script_passes_mypy_strict(tmp_path: Path) -> None:
    assert (REPO / "kvplan" / "py.typed").is_file()
    done = mypy(tmp_path, SCRIPT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_catches_a_wrong_keyword(tmp_path: Path) -> None:
    done = mypy(tmp_path, 'import kvplan\n\nkvplan.capacity("Qwen/Qwen3-8B", tp=[2])\n'
                          'kvplan.capacity("Qwen/Qwen3-8B", gpu_memory_utilisation=0.9)\n')
    assert done.returncode == 1, done.stdout + done.stderr
    assert "script.py:3: error" in done.stdout and "script.py:4: error" in done.stdout, done.stdout
