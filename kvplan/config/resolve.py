"""MODEL argument -> config file, in the issue's order: a path, a bundled id, the local HF cache, the hub.

Only the last step touches the network (hub.py), and only for an `org/name` id found nowhere on disk,
with HF_HUB_OFFLINE unset. A `revision` pins a hub revision: it skips the bundled configs (a
snapshot of no particular revision) and is looked up in the cache, then on the hub.
"""

from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path

from kvplan.config.aliases import MODEL_ID_ALIASES
from kvplan.errors import ConfigError

CONFIG_NAMES = ("config.json", "params.json")
_COMMIT = re.compile(r"[0-9a-f]{40}")
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
    """{"org/name": path to its config.json}, sorted by id: every configs/org/name/ folder holds one
    (tests/config/test_normalized_index.py reads each). Read on every `kvplan size`, so by os.scandir, whose
    entries tell a folder from a file without a stat: a third of Path.glob's time, and no stat of each config."""
    found = {}
    for org in os.scandir(configs_dir()):
        for repo in os.scandir(org.path) if org.is_dir() else ():
            if repo.is_dir():
                found[f"{org.name}/{repo.name}"] = Path(repo.path, "config.json")
    return dict(sorted(found.items(), key=lambda kv: kv[0].lower()))


@lru_cache(maxsize=1)
def _lower_ids() -> dict[str, str]:
    return {k.lower(): k for k in bundled_index()}


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


@lru_cache(maxsize=1024)
def find_bundled(name: str) -> str | None:
    """Case-insensitive id or org-less name, an alias, then the name without -hf/-instruct/.... Remembered per
    name: the bundled index is read once a process."""
    index = bundled_index()
    wanted = name.strip().strip("/").lower()
    by_short = {k.rpartition("/")[2]: v for k, v in MODEL_ID_ALIASES.items()}
    wanted = MODEL_ID_ALIASES.get(wanted) or by_short.get(wanted) or wanted
    org, _, short = wanted.lower().rpartition("/")
    if org and (exact := _lower_ids().get(wanted.lower())):
        return exact
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


def find_in_hf_cache(name: str, revision: str | None = None) -> Path | None:
    """models--org--name/snapshots/<commit>/config.json (or params.json), in the snapshots _snapshots lists."""
    if name.count("/") != 1:
        return None
    org, repo = name.split("/")
    for cache in hf_cache_dirs():
        folder = _repo_folder(cache, f"models--{org}--{repo}")
        for snapshot in _snapshots(folder, revision) if folder else []:
            for config in CONFIG_NAMES:
                if (snapshot / config).is_file():
                    return snapshot / config
    return None


def _repo_folder(cache: Path, name: str) -> Path | None:
    """cache/name, matched case-insensitively as the hub matches ids."""
    if (cache / name).is_dir():
        return cache / name
    matches = [p for p in cache.glob("models--*") if p.name.lower() == name.lower()]
    return matches[0] if matches else None


def _snapshots(folder: Path, revision: str | None) -> list[Path]:
    """The snapshots to look in, best first: the commit refs/<revision> names (refs/main by default) or
    the commit `revision` spells. Only a cache with no refs at all (not written by huggingface_hub)
    falls back to its newest snapshot: where refs exist, another ref's snapshot is not main."""
    ref = folder / "refs" / (revision or "main")
    commits = [ref.read_text().strip()] if ref.is_file() else []
    if revision is not None and _COMMIT.fullmatch(revision):
        commits.append(revision)
    if revision is None and not any((folder / "refs").glob("**/*")):
        newest = sorted((folder / "snapshots").glob("*"), key=lambda p: p.stat().st_mtime, reverse=True)
        commits += [p.name for p in newest]
    return [folder / "snapshots" / c for c in commits]


def config_in_path(path: Path) -> Path:
    """A file is used as is; a folder must hold config.json or params.json."""
    if path.is_file():
        return path
    if not path.is_dir():  # a FIFO, a socket, a device: nothing kvplan reads as a config
        raise ConfigError(f"{path} is not a regular file or a folder; give a config.json or the model's folder")
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
        full = os.path.expanduser(name)  # os.path, not Path: no object built for the common answer, "none"
        return Path(full) if os.path.exists(full) else None
    except (OSError, RuntimeError, ValueError):
        return None


def resolve(name: str, revision: str | None = None) -> tuple[Path, str]:
    """MODEL -> (config file, model id): a path, a bundled id (without `revision`), the HF cache, the hub.
    Raises ConfigError naming the closest bundled ids."""
    if not name or not name.strip():
        raise ConfigError("no model given; run `kvplan models` for the bundled ids")
    if revision is not None:
        from kvplan.config.hub import check_revision  # the hub module: only off the common path

        check_revision(revision)
    path = existing_path(name)
    if path is not None:
        if revision is not None:
            raise ConfigError(f"{name!r} is a local path; revision names a revision on the hub", arg="revision")
        return config_in_path(path), name
    if looks_like_path(name):
        raise ConfigError(f"no such file or folder: {name!r}")
    bundled = find_bundled(name)
    if bundled and revision is None:
        return bundled_index()[bundled], bundled
    # With a revision, an org-less alias stands for the repo its bundled config came from.
    from kvplan.config.hub import is_repo_id

    repo_id = name.strip() if is_repo_id(name.strip()) else bundled if revision is not None else None
    if repo_id is None:  # an org-less name or no valid repo id: never a cache key, never a request
        raise ConfigError(f"unknown model {name!r}; {suggest(name)}")
    try:
        return from_cache_or_hub(name, repo_id, revision), repo_id
    except ConfigError as exc:
        if bundled:  # the revision asked for the hub's copy of a bundled model
            raise ConfigError(f"{exc}; {bundled} is bundled: without revision kvplan reads the bundled config",
                              arg=exc.arg_names) from None
        raise


def from_cache_or_hub(name: str, repo_id: str, revision: str | None) -> Path:
    """The cached config of repo_id at revision, else the one the hub sends (unless HF_HUB_OFFLINE)."""
    from kvplan.config.hub import fetch_config, is_offline

    try:
        cached = find_in_hf_cache(repo_id, revision)
    except (OSError, ValueError):  # a name the file system refuses, or a damaged cache entry
        cached = None
    if cached:
        return cached
    at = f" at revision {revision!r}" if revision else ""
    if is_offline():
        raise ConfigError(f"unknown model {name!r}{at}: not bundled, not in the HF cache, and HF_HUB_OFFLINE "
                          f"keeps kvplan off the hub; {suggest(name)}")
    fetched = fetch_config(repo_id, revision, hf_cache_dirs()[0])
    if fetched is None:
        raise ConfigError(f"unknown model {name!r}: not bundled, not in the HF cache, not on the hub (if it is "
                          f"private, set HF_TOKEN or run `hf auth login`); {suggest(name)}")
    return fetched


def suggest(name: str) -> str:
    lowered = _lower_ids()
    short = {k.rpartition("/")[2].lower(): k for k in bundled_index()}
    import difflib  # only on the error path

    close = difflib.get_close_matches(name.lower(), list(lowered), n=3, cutoff=0.4)
    close += difflib.get_close_matches(name.lower().rpartition("/")[2], list(short), n=3, cutoff=0.4)
    names = list(dict.fromkeys([lowered.get(c) or short[c] for c in close]))[:3]
    hint = f"closest bundled ids: {', '.join(names)}" if names else "run `kvplan models` for the bundled ids"
    return hint + " (or pass a path to a config.json)"
