"""The user's flags beside what a log states.

Reconcile recomputes what the engine ran, and the log is the record of that: a flag fills in what the log does
not print (a GPU it does not name, a scheduler setting it leaves at the default, a release where it prints no
version), and a flag that says otherwise than the log is refused (exit 2, naming both values). Letting either side
win silently would recompute a run that never happened: the flag's value would be checked against numbers the
engine computed from another, or the user's correction would be dropped without a word. The one exception is
``model``: a model the log names but kvplan cannot load is stood in for (KV geometry only, said in a note).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, TypeVar

from kvplan.engines import Settings, release_key, settings_from
from kvplan.errors import InputError
from kvplan.reconcile.parse import StartupLog

T = TypeVar("T")
DEFAULT_KNOBS = dict(Settings().items())


def conflict(name: str, given: object, stated: object) -> InputError:
    return InputError(f"{name} {given} (given) disagrees with the log's {stated}: reconcile recomputes the run the "
                      "log records; drop the flag (flags fill in only what the log does not print)", arg=name)


def agreed(name: str, given: T | None, stated: T | None, same: Any = None) -> T | None:
    """The log's value, or the flag's where the log says nothing; both and different: a conflict."""
    if given is None:
        return stated
    if stated is not None and not (same(given, stated) if same else given == stated):
        raise conflict(name, given, stated)
    return given


def asked_knobs(settings: Settings | None) -> dict[str, Any]:
    """The knobs a Settings sets away from their defaults (what the flags asked)."""
    return {k: v for k, v in (settings or Settings()).items() if v != DEFAULT_KNOBS[k]}


def merged_settings(stated: dict[str, Any], given: Settings | None) -> Settings:
    """The log's knobs, with the flags' where the log prints none."""
    asked = asked_knobs(given)
    for name, value in asked.items():
        agreed(name, value, stated.get(name))
    return settings_from({**stated, **asked})


def with_release(log: StartupLog, engine: str | None) -> tuple[StartupLog, str | None]:
    """The log with the release `engine` names (vllm@0.25): the log's engine must be that engine; where the log
    prints a version it must be that release's (else a conflict), where it prints none the flag's is taken, said in
    a note."""
    if engine is None:
        return log, None
    name, key = release_key(engine)
    if name != log.engine:
        raise InputError(f"engine {engine} (given) disagrees with the log, which is a {log.label} log", arg="engine")
    if "@" not in engine:
        return log, None
    if log.version is None:
        return replace(log, version=key), f"release {key} from engine {engine} (the log prints no version)"
    try:
        logged: str | None = release_key(f"{log.engine}@{log.version}")[1]
    except InputError:  # a version kvplan has no row for (a development build): the flag names one it has
        logged = None
    if logged is None:
        return replace(log, version=key), f"release {key} from engine {engine} (the log's {log.version} is no " \
            "release kvplan has)"
    if logged.removesuffix("-v0") != key.removesuffix("-v0"):
        raise conflict("engine", engine, f"version {log.version}")
    return log, None
