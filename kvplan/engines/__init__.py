"""Engine capacity profiles: how vLLM, SGLang, TensorRT-LLM and transformers size the KV cache.

One module per engine, one profile per release it follows (a release is a row of data in that
module). ``REGISTRY`` maps the names users type (``vllm``, ``vllm@0.11``, ``sglang@0.5.2``) to the
profile class and the release row; a bare name is the newest release kvplan follows. Adding an
engine release is one row in its module, one row here, and its tests.
"""

from __future__ import annotations

import importlib
import sys
from functools import cache
from typing import Any

from kvplan.engines.base import (
    BudgetRules,
    BudgetSteps,
    BudgetTerm,
    Device,
    EnginePlan,
    GroupRow,
    ProfileRun,
    Refusal,
    Request,
    Resolved,
)
from kvplan.engines.protocol import Engine
from kvplan.engines.settings import Settings, SglangSettings, TrtllmSettings, VllmSettings, settings_from
from kvplan.engines.version import Version
from kvplan.errors import InputError

ENGINE_NAMES = ("vllm", "sglang", "trtllm", "hf")  # `--engine all`: the newest release of each
DEFAULT_ENGINE = ENGINE_NAMES[0]  # what kvplan plans with unless an engine is named

_VLLM, _SGLANG = ("kvplan.engines.vllm", "VllmEngine"), ("kvplan.engines.sglang", "SglangEngine")
_TRTLLM, _HF = ("kvplan.engines.trtllm", "TrtllmEngine"), ("kvplan.engines.hf", "HfEngine")
# name -> (module, class, release key) of the engines whose names are listed here; vLLM's are its rows' keys
# (kvplan/engines/vllm/rows.py, rows_late.py: RELEASES, oldest first), read when a name is first looked up.
_LISTED: dict[str, tuple[str, str, str]] = {
    "sglang": (*_SGLANG, "0.5.23"), "sglang@0.5": (*_SGLANG, "0.5.23"), "sglang@0.4": (*_SGLANG, "0.4.0"),
    # every SGLang minor on PyPI, 0.4.0-0.5.23 (there is no 0.5.0): kvplan.engines.sglang.releases.MINORS
    **{f"sglang@{v}": (*_SGLANG, v) for v in (*(f"0.4.{n}" for n in range(11)), *(f"0.5.{n}" for n in range(1, 24)))},
    "trtllm": (*_TRTLLM, "1"), "trtllm@1": (*_TRTLLM, "1"), "trtllm@1.2": (*_TRTLLM, "1.2"),
    "trtllm@1.1": (*_TRTLLM, "1.1"), "trtllm@0.20": (*_TRTLLM, "0.20"),
    "hf": (*_HF, "5"), "hf@5": (*_HF, "5"),
}
ALIASES = {"trt-llm": "trtllm", "tensorrt-llm": "trtllm", "transformers": "hf"}


@cache
def registry() -> dict[str, tuple[str, str, str]]:
    """Every name `--engine` takes -> (module, class, release key): the bare name is the newest row (vLLM: every
    row of ``kvplan.engines.vllm.rows_late.RELEASES``, newest first; a row added there is listed, planned and
    accepted with no other change)."""
    from kvplan.engines.vllm.rows_late import RELEASES

    keys = tuple(reversed(RELEASES))
    return {"vllm": (*_VLLM, keys[0]), **{f"vllm@{key}": (*_VLLM, key) for key in keys}, **_LISTED}


def __getattr__(name: str) -> Any:
    """``REGISTRY`` (``registry()``) and ``VLLM_RELEASES`` (vLLM's row keys, newest first), built on first use."""
    if name == "REGISTRY":
        return registry()
    if name == "VLLM_RELEASES":
        return tuple(n.partition("@")[2] for n in registry() if n.startswith("vllm@"))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Engines whose releases are named by this many numbers (SGLang 0.5.6, TRT-LLM 1.2): a longer version matches on
# exactly that prefix, never a shorter one (sglang@0.4.11 is unknown, not 0.4's row); vLLM: the longest prefix.
MINOR_DEPTH = {"sglang": 3, "trtllm": 2}


def _lookup(name: str) -> tuple[str, str, str] | None:
    """`vllm@v0.10.1.1` -> the row of `vllm@0.10`: the version itself, else the longest dotted prefix of its
    numbers that has a row (`0.19.1rc1.dev5` -> 0.19.1 -> 0.19); never a release outside that prefix. SGLang and
    TRT-LLM match on their minor exactly (``MINOR_DEPTH``): `sglang@0.5.6.post2` -> 0.5.6, `trtllm@1.2.0rc2` -> 1.2."""
    base, at, version = name.strip().lower().partition("@")
    base = ALIASES.get(base, base)
    if not at:
        return registry().get(base)
    version = _without_v(version)
    if f"{base}@{version}" in registry():
        return registry()[f"{base}@{version}"]
    parsed = Version.parse(version)  # 1rc1, 0+cu128: what follows a number that is not one is not a release number
    depth = MINOR_DEPTH.get(base)
    if depth is not None:
        return registry().get(f"{base}@{Version(parsed.parts[:depth])}")
    return next((registry()[f"{base}@{p}"] for p in parsed.prefixes() if f"{base}@{p}" in registry()), None)


def _without_v(version: str) -> str:
    """`v0.10.1.1` -> `0.10.1.1`: a leading v before a digit dropped (``re.sub(r"^v(?=\\d)", "", version)``, without
    re's call on each of the names a run looks up)."""
    return version[1:] if version[:1] == "v" and version[1:2].isdecimal() else version


def release_key(name: str) -> tuple[str, str]:
    """`vllm` -> ('vllm', '0.33'), `vllm@0.19.1` -> ('vllm', '0.19'): the engine and its row's release key."""
    row = _lookup(name)
    if row is None:
        raise _unknown(name)
    return next(n for n, r in registry().items() if r == row).partition("@")[0], row[2]


def _unknown(name: str) -> InputError:
    known = ", ".join(n for n in registry() if "@" in n)
    return InputError(f"unknown engine {name!r}; choose one of: {', '.join(ENGINE_NAMES)} (the newest releases), "
                      f"{known}, all")


def get_engine(name: str) -> Engine:
    """vllm | vllm@0.11 | sglang@0.5.2 | trtllm | hf ... -> its profile (the module is imported on first use)."""
    row = _lookup(name)
    if row is None:
        raise _unknown(name)
    profile = _PROFILES.get(row)
    if profile is None:  # a profile is read-only data: one per release row, built once
        module = sys.modules.get(row[0]) or importlib.import_module(row[0])  # imported: no import-lock round trip
        profile = _PROFILES[row] = getattr(module, row[1])(row[2])
    return profile


_PROFILES: dict[tuple[str, str, str], Engine] = {}


__all__ = ["DEFAULT_ENGINE", "ENGINE_NAMES", "REGISTRY", "VLLM_RELEASES", "BudgetRules", "BudgetSteps", "BudgetTerm", "Device", "Engine", "EnginePlan",
           "GroupRow", "ProfileRun", "Refusal", "Request", "Resolved", "Settings", "SglangSettings", "TrtllmSettings",
           "VllmSettings", "get_engine", "registry", "release_key", "settings_from"]
