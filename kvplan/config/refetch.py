"""A config in the HF cache that is not a JSON object: fetched again, or named for deletion.

A hub (or a proxy in front of it) that once answered with an HTML page or garbage left that file in the cache
before kvplan checked downloads; the cache is read first, so the model failed the same way forever. When the
cached file is unreadable and the hub is reachable, the config is downloaded again over it and the answer says
so in a note; offline, the error names the file to delete.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from kvplan.config.model import ModelConfig
from kvplan.config.resolve import hf_cache_dirs
from kvplan.errors import ConfigError, UnreadableConfig


def in_hf_cache(path: Path) -> bool:
    resolved = path.absolute()
    return any(resolved.is_relative_to(cache.absolute()) for cache in hf_cache_dirs())


def refetched(path: Path, repo_id: str, revision: str | None, exc: UnreadableConfig) -> ModelConfig:
    """The model from a fresh download of its config (with a note), or one error line naming the file."""
    from kvplan.config.hf import load_file
    from kvplan.config.hub import fetch_config, is_offline

    if not in_hf_cache(path):
        raise exc
    if is_offline():
        raise ConfigError(f"{exc}; this file in the HF cache is damaged: delete {path} (or go online, without "
                          "HF_HUB_OFFLINE, and kvplan fetches it again)")
    fresh = fetch_config(repo_id, revision, hf_cache_dirs()[0], force=True)
    if fresh is None:
        raise ConfigError(f"{exc}; the hub no longer has {repo_id}: delete {path}")
    model = load_file(fresh, model_id=repo_id)
    reason = str(exc).removeprefix(str(path)).strip(": ")
    note = f"the cached config {path} was not a config ({reason}); fetched it again from the hub"
    return replace(model, notes=(*model.notes, note))
