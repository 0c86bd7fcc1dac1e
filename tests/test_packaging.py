"""What an install of one extra brings is what that extra's code imports (CI also runs `kvplan probe --device cpu`
from a venv with the probe extra alone: .ci/run)."""

from __future__ import annotations

import re
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parent.parent


def extra(name: str) -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return {re.split(r"[<>=;\[ ]", req, maxsplit=1)[0].lower() for req in project["optional-dependencies"][name]}


def test_the_probe_extra_brings_what_the_probe_imports() -> None:
    # torch: allocation; triton: the kernels; numpy: Triton's interpreter (TRITON_INTERPRET=1, the CPU path)
    assert {"torch", "triton", "numpy"} <= extra("probe")


def test_the_plot_extra_brings_matplotlib() -> None:
    assert "matplotlib" in extra("plot")
