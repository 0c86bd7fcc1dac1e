"""Safetensors headers from the hub: the index into the HF cache, each shard's header by a ranged request.

Imported only when a checkpoint's headers are not on disk (``kvplan.config.checkpoint``); it imports
huggingface_hub. Endpoint, token, timeouts, quiet logs and error lines are ``hub``'s.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from kvplan.config.hub import _hub_call, _NotOnHub, _require_hub, hub_endpoint, timeout_s
from kvplan.config.resolve import hf_cache_dirs

INDEX_FILE = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"


def _index(repo_id: str, commit: str) -> list[str] | None:
    """Shard names from the repo's index (downloaded into the HF cache), None when it has no index."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError

    try:
        path = hf_hub_download(repo_id, INDEX_FILE, revision=commit, cache_dir=hf_cache_dirs()[0],
                               endpoint=hub_endpoint(), etag_timeout=timeout_s(), library_name="kvplan")
    except EntryNotFoundError:
        return None
    weight_map = json.loads(Path(path).read_text(encoding="utf-8")).get("weight_map", {})
    return sorted({str(v) for v in weight_map.values()})


def _header(repo_id: str, commit: str, filename: str) -> dict[str, Any] | None:
    from huggingface_hub import HfApi
    from huggingface_hub.errors import EntryNotFoundError

    api = HfApi(endpoint=hub_endpoint(), library_name="kvplan")
    try:
        meta = api.parse_safetensors_file_metadata(repo_id, filename, revision=commit, timeout=timeout_s())
    except EntryNotFoundError:
        return None
    return {name: {"dtype": info.dtype, "shape": list(info.shape)} for name, info in meta.tensors.items()}


def fetch_headers(repo_id: str, commit: str) -> list[dict[str, Any]] | None:
    """Every shard's header of repo_id at commit; None when the repo has no safetensors weights."""
    _require_hub()
    try:
        shards = _hub_call(functools.partial(_index, repo_id, commit), repo_id, commit)
        headers = [_hub_call(functools.partial(_header, repo_id, commit, name), repo_id, commit)
                   for name in shards or [SINGLE_FILE]]
    except _NotOnHub:
        return None
    return None if any(h is None for h in headers) else [h for h in headers if h is not None]
