"""A checkpoint's tensors (name, dtype, shape) from its safetensors headers; never a tensor's bytes.

A safetensors file starts with an 8-byte little-endian header length and a JSON header naming every tensor's
dtype, shape and byte range. ``model.safetensors.index.json`` maps tensor names to shard files.

- A folder on disk (the folder a config.json was read from, an HF cache snapshot with the weights
  downloaded): the index, else the ``*.safetensors`` files there; headers read from the files (only their
  first 8 + header-length bytes).
- A hub id whose config came from the HF cache (``models--org--name/snapshots/<commit>/``) without the
  weights: the index is fetched into the HF cache (``hf_hub_download``, as config.json is) and each shard's
  header with huggingface_hub's safetensors metadata call (a ranged GET of the header only), honouring
  HF_ENDPOINT, HF_TOKEN and HF_HUB_OFFLINE as ``hub`` does. The tensor list is kept in kvplan's cache
  (``$KVPLAN_CACHE``, else ``$XDG_CACHE_HOME/kvplan``, else ``~/.cache/kvplan``), under the commit, so the
  next run, online or not, reads it from disk.
"""

from __future__ import annotations

import json
import os
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kvplan.errors import ConfigError

INDEX_FILE = "model.safetensors.index.json"
MAX_HEADER_BYTES = 100 * 1024**2  # the safetensors format's own limit
_SNAPSHOT = re.compile(r"models--(?P<org>[^/]+?)--(?P<name>[^/]+)/snapshots/(?P<commit>[0-9a-f]{40})/[^/]+$")

Tensors = tuple[tuple[str, str, tuple[int, ...]], ...]  # (name, safetensors dtype, shape), sorted by name


@dataclass(frozen=True, slots=True)
class Checkpoint:
    tensors: Tensors
    where: str  # the folder, or "org/name@commit on the hub"


def read_header(path: Path) -> dict[str, Any]:
    """The JSON header of one safetensors file (its tensors are not read)."""
    with path.open("rb") as f:
        head = f.read(8)
        if len(head) != 8:
            raise ConfigError(f"{path}: not a safetensors file (shorter than 8 bytes)")
        (size,) = struct.unpack("<Q", head)
        if size > MAX_HEADER_BYTES:
            raise ConfigError(f"{path}: safetensors header of {size:,} bytes, more than the format allows")
        try:
            header: dict[str, Any] = json.loads(f.read(size))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"{path}: unreadable safetensors header ({exc})") from None
    return header


def _tensors(headers: list[dict[str, Any]]) -> Tensors:
    found = {name: (str(info["dtype"]), tuple(int(d) for d in info["shape"]))
             for header in headers for name, info in header.items() if name != "__metadata__"}
    return tuple((name, dtype, shape) for name, (dtype, shape) in sorted(found.items()))


def _shard_names(index_path: Path) -> list[str]:
    try:
        weight_map = json.loads(index_path.read_text(encoding="utf-8"))["weight_map"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{index_path}: not a safetensors index ({type(exc).__name__})") from None
    return sorted({str(v) for v in weight_map.values()})


def local_checkpoint(folder: Path) -> Checkpoint | None:
    """The tensors of the safetensors files in a folder (by its index when there is one), or None."""
    index = folder / INDEX_FILE
    if index.is_file():
        files = [folder / name for name in _shard_names(index)]
        missing = [f.name for f in files if not f.is_file()]
        if missing:
            return None  # the index alone (a snapshot without the weights): the hub has the headers
    else:
        files = sorted(folder.glob("*.safetensors"))
    if not files:
        return None
    return Checkpoint(_tensors([read_header(f) for f in files]), str(folder))


def cache_dir() -> Path:
    base = os.environ.get("KVPLAN_CACHE") or os.path.join(os.environ.get("XDG_CACHE_HOME") or "~/.cache", "kvplan")
    return Path(base).expanduser() / "checkpoints"


def snapshot_of(config: Path) -> tuple[str, str] | None:
    """(repo id, commit) of a config.json in an HF cache snapshot, else None."""
    found = _SNAPSHOT.search(config.as_posix())
    return (f"{found['org']}/{found['name']}", found["commit"]) if found else None


def _cached(repo_id: str, commit: str) -> Path:
    return cache_dir() / repo_id.replace("/", "--") / f"{commit}.json"


def hub_checkpoint(repo_id: str, commit: str) -> Checkpoint | None:
    """The tensors of a hub repo at a commit: kvplan's cache, else the hub's headers (not when offline)."""
    from kvplan.config.hub import is_offline

    where = f"{repo_id}@{commit[:12]} on the hub"
    cached = _cached(repo_id, commit)
    if cached.is_file():
        rows = json.loads(cached.read_text(encoding="utf-8"))
        return Checkpoint(tuple((n, d, tuple(s)) for n, d, s in rows), where)
    if is_offline():
        return None
    from kvplan.config.hub_headers import fetch_headers

    headers = fetch_headers(repo_id, commit)
    if headers is None:
        return None
    tensors = _tensors(headers)
    cached.parent.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps([[n, d, list(s)] for n, d, s in tensors], separators=(",", ":")), encoding="utf-8")
    return Checkpoint(tensors, where)


def find_checkpoint(config: Path) -> Checkpoint | None:
    """The checkpoint beside a config file: on disk, else (an HF cache snapshot) its headers on the hub."""
    local = local_checkpoint(config.parent)
    if local is not None:
        return local
    snapshot = snapshot_of(config)
    return hub_checkpoint(*snapshot) if snapshot else None
