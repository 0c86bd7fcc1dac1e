"""Shared fixtures: bundled models by id, a CLI runner that keeps stderr apart."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from typer.testing import CliRunner

import kvplan
from kvplan.cli import app


def _cuda_visible() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


# Triton kernels run compiled on a CUDA device, and in the interpreter only where none is visible; the flag
# is read when triton is first imported, and any test module may be the first to import it (nothing above
# imports triton).
HAS_CUDA = _cuda_visible()
if not HAS_CUDA:
    os.environ.setdefault("TRITON_INTERPRET", "1")

ROOT = Path(__file__).resolve().parent.parent

# Hypothesis profiles: "ci" (default, quick) and "full" (>= 10,000 examples per fuzz test):
#   HYPOTHESIS_PROFILE=full python -m pytest tests/test_fuzz_config.py
# Under CI (CI set) the quick run is derandomized, as hypothesis' own "ci" profile is: no flaky builds.
settings.register_profile("ci", max_examples=100, deadline=None, derandomize=bool(os.environ.get("CI")),
                          print_blob=True)
settings.register_profile("full", max_examples=10_000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

CONFIGS = ROOT / "configs"


@pytest.fixture(autouse=True)
def _hub_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test reaches the real hub: offline, and an endpoint that refuses at once should that be lifted.
    tests/config/test_hub.py turns the network back on, towards its local stand-in."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")


@pytest.fixture(scope="session")
def model():
    """model("meta-llama/Llama-2-70b-hf") -> ModelConfig (cached)."""
    cache: dict[str, kvplan.ModelConfig] = {}

    def load(name: str) -> kvplan.ModelConfig:
        if name not in cache:
            cache[name] = kvplan.load_model(name)
        return cache[name]

    return load


@pytest.fixture(scope="session")
def kernel_device():
    """Where the kernel tests run: cuda:0 (compiled) when visible, else the CPU (interpreted)."""
    import torch

    return torch.device("cuda", 0) if HAS_CUDA else torch.device("cpu")


@pytest.fixture
def run_cli():
    """run_cli("size", "llama-2-70b", "--json") -> (exit code, stdout, stderr)."""
    runner = CliRunner()

    def run(*args: str) -> tuple[int, str, str]:
        result = runner.invoke(app, list(args))
        return result.exit_code, result.stdout, result.stderr

    return run


@pytest.fixture
def size_json(run_cli):
    def run(*args: str) -> dict[str, Any]:
        code, out, err = run_cli("size", *args, "--json")
        assert code == 0, err
        return json.loads(out)

    return run


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config: pytest.Config) -> None:
    """After the summary: Triton's extension (nanobind) lists the objects it leaks at interpreter exit, ~40 lines
    of "nanobind: leaked ..." after pytest's last line; its module exposes no switch for them (libtriton.so has
    nanobind's set_leak_warnings, not bound to Python), so stderr is closed once nothing of pytest's is left."""
    if "triton" in sys.modules:
        sys.stderr.flush()
        os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
