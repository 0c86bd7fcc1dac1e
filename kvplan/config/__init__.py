"""Reading model configs: resolution (path, bundled id, HF cache, hub) and normalization.

The only package that reads files. A name is resolved on every call, and its file read (a bundled one: read again
when its size, modification time or inode changed; a bundled id asked again answered by that name while no local
path shadows it and its file is unchanged); a small file's parse is cached on its bytes (``hf.load_file``), so sweeps
and comparisons that name a model many times parse it once, and an edited file is never served stale.
"""

from __future__ import annotations

import os
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from kvplan.config.model import ModelConfig, with_dtype
from kvplan.config.resolve import bundled_index, existing_path, resolve
from kvplan.errors import UnreadableConfig

__all__ = ["ModelConfig", "as_model", "bundled_index", "load_file", "load_model", "normalize", "resolve", "with_dtype"]


def load_model(name: str, revision: str | None = None) -> ModelConfig:
    """A model id, alias or path -> its normalized ModelConfig. An `org/name` id found neither bundled nor
    in the HF cache has its config.json fetched from the hub (unless HF_HUB_OFFLINE); `revision` pins a
    hub revision. Never weights, never code: the config is read as JSON.

    A name whose own config is not bundled but resolves to a bundled sibling (an alias row,
    -Instruct/-Base, a date suffix) is sized with that architecture twin, and the result says so in a
    warning."""
    if revision is None and (answer := _again(name)) is not None:
        return answer
    path, model_id = resolve(name, revision)
    try:
        model, signature = _read(path, model_id)
    except UnreadableConfig as exc:  # a damaged file in the HF cache: fetched again when the hub is reachable
        from kvplan.config.refetch import refetched

        model, signature = refetched(path, model_id, revision, exc), None
    if model_id in bundled_index() and _short(name) != _short(model_id):
        note = (f"warning: {name.strip()} has no bundled config; sized with {model_id}, an architecture twin "
                "(the same KV-cache geometry)")
        model = _noted(model, note)
    if revision is None and signature is not None:
        _remember(name, os.fspath(path), signature, model)
    return model


# A bundled id asked again (a script's loop): the answer kept by the name asked, with its file's signature. It
# stands while no file or folder of that name appears in the working directory (a local path wins over a bundled
# id) and the bundled file keeps its size, modification time and inode: two stat calls, what resolution needs.
_BY_NAME: dict[str, tuple[str, tuple[int, int, int], ModelConfig]] = {}


def _signature(file: str) -> tuple[int, int, int]:
    stat = os.stat(file)
    return stat.st_size, stat.st_mtime_ns, stat.st_ino


def _again(name: str) -> ModelConfig | None:
    """The config `name` gave last time, if nothing it was read from has changed (None: resolve it)."""
    kept = _BY_NAME.get(name)
    if kept is None or existing_path(name) is not None:
        return None
    file, signature, model = kept
    try:
        return model if _signature(file) == signature else None
    except OSError:  # the bundled file is gone: resolution says why
        return None


def _remember(name: str, file: str, signature: tuple[int, int, int], model: ModelConfig) -> None:
    if len(_BY_NAME) >= 1024:
        _BY_NAME.clear()
    _BY_NAME[name] = (file, signature, model)


def _read(path: Path, model_id: str) -> tuple[ModelConfig, tuple[int, int, int] | None]:
    """A bundled config from its pre-normalized file (kvplan.config.index) while the config is unchanged, with the
    file's signature; any other file (or a changed one) parsed and validated by kvplan.config.hf."""
    if bundled_index().get(model_id) == path:
        signature = _signature(os.fspath(path))
        model = _bundled(path, model_id, *signature)
        if model is not None:
            return model, signature
    from kvplan.config.hf import load_file

    return load_file(path, model_id=model_id), None


@lru_cache(maxsize=256)
def _bundled(path: Path, model_id: str, size: int, modified_ns: int, inode: int) -> ModelConfig | None:
    """A bundled config, read again only when its file changed (its size, modification time or inode)."""
    return _indexed(path, path.read_bytes(), model_id)


@lru_cache(maxsize=256)
def _indexed(path: Path, data: bytes, model_id: str) -> ModelConfig | None:
    from kvplan.config.index import normalized

    return normalized(path, data, model_id)


def __getattr__(name: str) -> Any:
    """load_file and normalize (kvplan.config.hf, which imports pydantic) on first use."""
    if name in ("load_file", "normalize"):
        from kvplan.config import hf

        return getattr(hf, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _short(name: str) -> str:
    """A name without its org, case, Meta's `Meta-` prefix and the `-hf` packaging suffix."""
    return name.strip().strip("/").lower().rpartition("/")[2].removeprefix("meta-").removesuffix("-hf")


@lru_cache(maxsize=256)
def _noted(model: ModelConfig, note: str) -> ModelConfig:
    """The same config with a note (cached, so its layouts stay cached too)."""
    return replace(model, notes=(*model.notes, note))


def as_model(model: ModelConfig | str) -> ModelConfig:
    """Library entry points take a ModelConfig or anything load_model accepts."""
    return load_model(model) if isinstance(model, str) else model
