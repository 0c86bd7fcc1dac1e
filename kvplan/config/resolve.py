"""MODEL argument -> config file, in the issue's order: a path, a bundled id, the local HF cache.

Nothing here touches the network: the Hugging Face hub is only ever read through a cache that
is already on disk.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from kvplan.config.aliases import MODEL_ID_ALIASES
from kvplan.errors import ConfigError

CONFIG_NAMES = ("config.json", "params.json")
_VARIANT_SUFFIXES = ("-hf", "-instruct", "-it", "-chat", "-base", "-thinking", "-pt")


def configs_dir() -> Path:
    """Bundled configs: inside the installed package, or configs/ beside it in a checkout."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here / "configs", here.parent / "configs"):
        if candidate.is_dir():
            return candidate
    raise ConfigError("the bundled configs/ folder is missing from this installation")


@lru_cache(maxsize=1)
def bundled_index() -> dict[str, Path]:
    """{"org/name": path to its config.json}, sorted by id."""
    root = configs_dir()
    found = {f"{p.parent.parent.name}/{p.parent.name}": p for p in root.glob("*/*/config.json")}
    return dict(sorted(found.items(), key=lambda kv: kv[0].lower()))


def _variant_key(name: str) -> str:
    key = name.lower().removeprefix("meta-")
    if len(key) > 5 and key[-5] == "-" and key[-4:].isdigit():  # a release date: -0324, -2507 (DeepSeek, Mistral)
        key = key[:-5]
    changed = True
    while changed:
        changed = False
        for suffix in _VARIANT_SUFFIXES:
            if key.endswith(suffix):
                key, changed = key[: -len(suffix)], True
    return key


def find_bundled(name: str) -> str | None:
    """Case-insensitive id or org-less name, an alias, then the name without -hf/-instruct/...."""
    index = bundled_index()
    wanted = name.strip().strip("/").lower()
    by_short = {k.rpartition("/")[2]: v for k, v in MODEL_ID_ALIASES.items()}
    wanted = MODEL_ID_ALIASES.get(wanted) or by_short.get(wanted) or wanted
    org, _, short = wanted.lower().rpartition("/")
    for key in (str.lower, _variant_key):  # exact first, then without variant suffixes
        hits = [k for k in index
                if key(k.rpartition("/")[2]) == key(short) and (not org or k.lower().startswith(org + "/"))]
        if hits:
            return min(hits, key=len)
    return None


def hf_cache_dirs() -> list[Path]:
    """HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub (as huggingface_hub does)."""
    if os.environ.get("HF_HUB_CACHE"):
        return [Path(os.environ["HF_HUB_CACHE"])]
    home = os.environ.get("HF_HOME") or os.path.join(os.environ.get("XDG_CACHE_HOME", "~/.cache"), "huggingface")
    return [Path(home).expanduser() / "hub"]


def find_in_hf_cache(name: str) -> Path | None:
    """models--org--name/snapshots/<rev>/config.json; the revision refs/main points at first."""
    if name.count("/") != 1:
        return None
    org, repo = name.split("/")
    for cache in hf_cache_dirs():
        folder = cache / f"models--{org}--{repo}"
        if not folder.is_dir():
            matches = [p for p in cache.glob("models--*") if p.name.lower() == folder.name.lower()]
            if not matches:
                continue
            folder = matches[0]
        ref = folder / "refs" / "main"
        revisions = [ref.read_text().strip()] if ref.is_file() else []
        snapshots = sorted((folder / "snapshots").glob("*"), key=lambda p: p.stat().st_mtime, reverse=True)
        for snapshot in [folder / "snapshots" / r for r in revisions] + snapshots:
            if (snapshot / "config.json").is_file():
                return snapshot / "config.json"
    return None


def config_in_path(path: Path) -> Path:
    """A file is used as is; a folder must hold config.json or params.json."""
    if path.is_file():
        return path
    for name in CONFIG_NAMES:
        if (path / name).is_file():
            return path / name
    raise ConfigError(f"{path} holds no config.json or params.json")


def looks_like_path(name: str) -> bool:
    return name.startswith((".", "/", "~")) or name.endswith(".json") or os.sep + os.sep in name


def existing_path(name: str) -> Path | None:
    """The file or folder `name` names, if it exists; a name no file system accepts (too long,
    an unknown ~user, a NUL byte) names nothing, so it is looked up as a model id instead."""
    try:
        path = Path(name).expanduser()
        return path if path.exists() else None
    except (OSError, RuntimeError, ValueError):
        return None


def resolve(name: str) -> tuple[Path, str]:
    """MODEL -> (config file, model id). Raises ConfigError naming the closest bundled ids."""
    if not name or not name.strip():
        raise ConfigError("no model given; run `kvplan models` for the bundled ids")
    path = existing_path(name)
    if path is not None:
        return config_in_path(path), name
    if looks_like_path(name):
        raise ConfigError(f"no such file or folder: {name!r}")
    bundled = find_bundled(name)
    if bundled:
        return bundled_index()[bundled], bundled
    try:
        cached = find_in_hf_cache(name.strip())
    except (OSError, ValueError):  # a name the file system refuses, or a damaged cache entry
        cached = None
    if cached:
        return cached, name.strip()
    raise ConfigError(f"unknown model {name!r}; {suggest(name)}")


def suggest(name: str) -> str:
    ids = list(bundled_index())
    lowered = {k.lower(): k for k in ids}
    short = {k.rpartition("/")[2].lower(): k for k in ids}
    import difflib  # only on the error path

    close = difflib.get_close_matches(name.lower(), list(lowered), n=3, cutoff=0.4)
    close += difflib.get_close_matches(name.lower().rpartition("/")[2], list(short), n=3, cutoff=0.4)
    names = list(dict.fromkeys([lowered.get(c) or short[c] for c in close]))[:3]
    hint = f"closest bundled ids: {', '.join(names)}" if names else "run `kvplan models` for the bundled ids"
    return hint + " (or pass a path to a config.json)"
