"""vLLM's ``--config FILE``: a YAML file whose keys are long option names, read as vLLM reads it.

vLLM 0.25.0 ``utils/argparse_utils.py``: ``--config`` anywhere in the arguments (298-299, the exact word, one
only: 477) is replaced by the file's flags, placed after ``serve`` and a positional model and before every other
argument, so a flag on the command line wins over the file (487-523); a file that is not ``.yaml``/``.yml`` is
refused (552-556). Each top-level key becomes ``--KEY`` (525-590): ``true`` the bare switch, ``false`` nothing, a
list its items as values, a mapping its JSON text, anything else ``str(value)``. PyYAML is imported only here, when a
command names a config file (``kvplan size`` never does).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kvplan.errors import InputError


def config_flags(path: str) -> list[str]:
    """The file's keys as vLLM's load_config_file writes them: ['--tensor-parallel-size', '2', ...]."""
    if path.split(".")[-1] not in ("yaml", "yml"):
        raise InputError(f"--config {path}: vLLM reads only a .yaml or .yml config file")
    data = _load(path)
    out: list[str] = []
    for key, value in data.items():
        if isinstance(value, bool):
            out += [f"--{key}"] if value else []
        elif isinstance(value, list):
            out += [f"--{key}", *map(str, value)] if value else []
        elif isinstance(value, dict):
            out += [f"--{key}", json.dumps(value)]
        else:
            out += [f"--{key}", str(value)]
    return out


def _load(path: str) -> dict[str, Any]:
    import yaml  # type: ignore[import-untyped]

    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"--config {path}: cannot read it ({exc.strerror or type(exc).__name__})"
                         if isinstance(exc, OSError) else f"--config {path}: not a text file") from None
    except yaml.YAMLError as exc:
        raise InputError(f"--config {path}: not YAML ({' '.join(str(exc).split())})") from None
    if not isinstance(data, dict):
        raise InputError(f"--config {path}: expected a mapping of option names to values, as vLLM reads it")
    return data


def with_config_file(rest: list[str]) -> tuple[list[str], str | None]:
    """The arguments after the entry point with `--config FILE` replaced by the file's flags where vLLM puts them
    (after a positional model, before the rest); (rest, None) when there is none."""
    if "--config" not in rest:
        return rest, None
    if rest.count("--config") > 1:
        raise InputError("--config given twice: vLLM takes one config file")
    index = rest.index("--config")
    if index == len(rest) - 1:
        raise InputError("--config names no file: vLLM needs a path after it")
    path = rest[index + 1]
    flags = config_flags(path)
    head = rest[:1] if rest and not rest[0].startswith("-") and index > 0 else []
    return [*head, *flags, *rest[len(head):index], *rest[index + 2:]], path
