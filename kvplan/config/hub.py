"""The last step of resolution: a model's config fetched from the Hugging Face hub into the HF cache.

What it fetches: ``config.json``, or Meta's ``params.json`` when a repo has no config.json; never
weights, tokenizers or code. The file lands in the standard cache layout
(``models--org--name/snapshots/<commit>/config.json`` and ``refs/<revision>``), so the next run finds
it in the cache (resolve.py) without the network. ``huggingface_hub`` is imported here only, and only
when a name reaches this step: a bundled id or a cache hit never imports it.

What it is not: a reader. It returns a path; resolve.py and hf.py read that file as JSON, like any other.
Every failure is one ConfigError line; the token (HF_TOKEN or a login) never appears in one.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from kvplan.config.hf import MAX_CONFIG_BYTES
from kvplan.errors import ConfigError, UnreadableConfig

if TYPE_CHECKING:
    from huggingface_hub import HfFileMetadata

T = TypeVar("T")

HUB_FILES = ("config.json", "params.json")  # the second only when the first is absent (Meta's original repos)
DEFAULT_ENDPOINT = "https://huggingface.co"
DEFAULT_TIMEOUT_S = 5.0  # per request; HF_HUB_ETAG_TIMEOUT overrides it. Short, so that no network answers fast.
_TRUE = ("1", "on", "yes", "true")  # huggingface_hub's spelling of a true environment flag
# The hub's rule for repo ids: org/name, letters, digits, '_', '.', '-', at most 96 each, starting and ending
# with a letter, digit or '_', with no '--' or '..'. Checked before any request: no path or URL tricks.
_PART = r"[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,94}[A-Za-z0-9_])?"
_REPO_ID = re.compile(rf"{_PART}/{_PART}")
_REVISION = re.compile(r"[A-Za-z0-9_.+-]{1,255}(?:/[A-Za-z0-9_.+-]{1,255})*")  # a branch, tag, commit or refs/pr/N
_BAR = "huggingface_hub.http_get"  # the progress-bar group of a file download
_NETWORK_ERRORS = {"ConnectError", "ConnectTimeout", "TimeoutException", "TransportError", "NetworkError",
                   "ConnectionError", "Timeout", "TimeoutError", "OfflineModeIsEnabled", "LocalEntryNotFoundError"}


def is_offline() -> bool:
    """HF_HUB_OFFLINE (or TRANSFORMERS_OFFLINE) set: the cache only, no request at all."""
    return any(os.environ.get(name, "").strip().lower() in _TRUE for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"))


def is_repo_id(name: str) -> bool:
    """'org/name' as the hub spells repo ids; a '..' segment, a second '/', a URL or a '%2f' is not one."""
    return bool(_REPO_ID.fullmatch(name)) and "--" not in name and ".." not in name


def check_revision(revision: str) -> str:
    """A branch, tag or commit name, refused before it reaches a URL or a path in the cache."""
    if not _REVISION.fullmatch(revision) or any(part in (".", "..") for part in revision.split("/")):
        raise ConfigError(f"revision {revision!r} is not a branch, tag or commit name", arg="revision")
    return revision


def hub_endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def timeout_s() -> float:
    """HF_HUB_ETAG_TIMEOUT (huggingface_hub's own knob for this request) when set, else DEFAULT_TIMEOUT_S."""
    try:
        value = float(os.environ.get("HF_HUB_ETAG_TIMEOUT", ""))
    except ValueError:
        return DEFAULT_TIMEOUT_S
    return value if value > 0 else DEFAULT_TIMEOUT_S


class _NotOnHub(Exception):
    """The hub has no such repository, or hides a private one from this token."""


def fetch_config(repo_id: str, revision: str | None, cache_dir: Path, force: bool = False) -> Path | None:
    """config.json of repo_id at revision (main by default), else its params.json, downloaded into
    cache_dir (again, over the cached copy, with `force`); None when the hub has no such repository. Other
    failures raise one ConfigError line; so does an answer that is not JSON (a proxy's page), which is not
    left in the cache."""
    _require_hub()
    try:
        for filename in HUB_FILES:
            metadata = _hub_call(functools.partial(_metadata, repo_id, filename, revision), repo_id, revision)
            if metadata is not None:
                _check_size(metadata.size, repo_id, filename)
                path = _hub_call(functools.partial(_download, repo_id, filename, revision, cache_dir, force),
                                 repo_id, revision)
                return _checked(path, repo_id, filename)
    except _NotOnHub:
        return None
    raise ConfigError(f"{repo_id}{_at(revision)} on the hub has no config.json or params.json")


def _checked(path: Path, repo_id: str, filename: str) -> Path:
    """A downloaded config that is not a JSON object is removed from the cache (its snapshot link and blob)
    before the error: the next run asks the hub again instead of reading it forever."""
    from kvplan.config.hf import parse_json

    try:
        parse_json(path.read_bytes(), str(path))
    except UnreadableConfig as exc:
        blob = path.resolve()
        path.unlink(missing_ok=True)
        blob.unlink(missing_ok=True)
        raise ConfigError(f"the hub at {hub_endpoint()} sent {repo_id}/{filename}, but not a config: "
                          f"{str(exc).removeprefix(str(path)).strip(': ')}; not kept in the cache (a proxy's page? "
                          "check HF_ENDPOINT)") from None
    return path


def _require_hub() -> None:
    try:
        import huggingface_hub  # noqa: F401
    except ImportError:
        raise ConfigError("fetching from the hub needs huggingface_hub: pip install huggingface_hub") from None


def _metadata(repo_id: str, filename: str, revision: str | None) -> HfFileMetadata | None:
    """One HEAD request, no retries (no network costs one timeout); None when the repo lacks the file."""
    from huggingface_hub import get_hf_file_metadata, hf_hub_url
    from huggingface_hub.errors import EntryNotFoundError

    url = hf_hub_url(repo_id, filename, revision=revision, endpoint=hub_endpoint())
    try:
        return get_hf_file_metadata(url, timeout=timeout_s(), library_name="kvplan", endpoint=hub_endpoint())
    except EntryNotFoundError:
        return None


def _check_size(size: int | None, repo_id: str, filename: str) -> None:
    """Refused before the download: the size the hub announces, the same limit as any config file."""
    if size is None:
        raise ConfigError(f"the hub gave no size for {repo_id}/{filename}; not downloading it")
    if size > MAX_CONFIG_BYTES:
        raise ConfigError(f"{repo_id}/{filename} on the hub is {size:,} bytes, larger than "
                          f"{MAX_CONFIG_BYTES // 1024**2} MiB; not a model config")


def _download(repo_id: str, filename: str, revision: str | None, cache_dir: Path, force: bool = False) -> Path:
    from huggingface_hub import hf_hub_download

    path = hf_hub_download(repo_id, filename, revision=revision, cache_dir=cache_dir, endpoint=hub_endpoint(),
                           etag_timeout=timeout_s(), library_name="kvplan", force_download=force)
    return Path(path)


def _hub_call(call: Callable[[], T], repo_id: str, revision: str | None) -> T:
    """Run one huggingface_hub call with its logs and warnings held back; every failure -> one line."""
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    try:
        with _quiet():
            return call()
    except RepositoryNotFoundError as exc:
        if isinstance(exc, GatedRepoError):
            raise hub_error(exc, repo_id, revision) from None
        raise _NotOnHub from None
    except Exception as exc:  # the network, a proxy, the hub or the cache folder: the user's to fix, not a bug here
        raise hub_error(exc, repo_id, revision) from None


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """huggingface_hub's logs, warnings, download bar and telemetry held back for the length of one call:
    stderr is kept for kvplan's own lines.

    The telemetry is a second request (to /api/agent-harnesses, up to 3 s more when the network is down,
    and a file written under HF_HOME) that building the user agent makes; kvplan asks for one file, so it
    turns that off for its own calls, as HF_HUB_DISABLE_TELEMETRY=1 would.
    """
    import logging
    import warnings

    from huggingface_hub import constants
    from huggingface_hub.utils.tqdm import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars

    logger = logging.getLogger("huggingface_hub")
    level, telemetry_off, bar_off = logger.level, constants.HF_HUB_DISABLE_TELEMETRY, are_progress_bars_disabled(_BAR)
    logger.setLevel(logging.ERROR)
    constants.HF_HUB_DISABLE_TELEMETRY = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        disable_progress_bars(_BAR)
        try:
            yield
        finally:
            logger.setLevel(level)
            constants.HF_HUB_DISABLE_TELEMETRY = telemetry_off
            if not bar_off:
                enable_progress_bars(_BAR)


def hub_error(exc: Exception, repo_id: str, revision: str | None) -> ConfigError:
    """A huggingface_hub or network exception as one line that says what to do."""
    from huggingface_hub.errors import GatedRepoError, RevisionNotFoundError

    login = "set HF_TOKEN or run `hf auth login`"
    if isinstance(exc, GatedRepoError):
        return ConfigError(f"{repo_id} is gated on the hub: accept its terms on the model page, then {login}")
    if isinstance(exc, RevisionNotFoundError):
        return ConfigError(f"revision {revision!r} of {repo_id} is not on the hub", arg="revision")
    names = {cls.__name__ for cls in type(exc).__mro__}
    if names & _NETWORK_ERRORS:
        what = f"revision {revision!r} of {repo_id}" if revision else f"{repo_id}, which is neither bundled nor"
        where = ", which is not in the HF cache" if revision else " in the HF cache"
        return ConfigError(f"cannot reach the hub at {hub_endpoint()} ({type(exc).__name__}) to fetch {what}"
                           f"{where}; check the network or HF_ENDPOINT")
    status = getattr(getattr(exc, "response", None), "status_code", None)  # an HTTP error, whichever client raised it
    if isinstance(status, int):
        return ConfigError(_http_message(status, repo_id, login))
    return ConfigError(f"cannot fetch {repo_id}{_at(revision)} from the hub: {type(exc).__name__}: {_scrub(exc)}")


def _http_message(status: int, repo_id: str, login: str) -> str:
    if status == 401:
        return f"the hub refused the token for {repo_id} (HTTP 401): check HF_TOKEN, or run `hf auth login`"
    if status == 403:
        return f"the hub refused access to {repo_id} (HTTP 403): {login} with a token that can read it"
    if status == 429:
        return f"the hub is rate-limiting requests (HTTP 429) for {repo_id}: try again later, or {login}"
    if status >= 500:
        return f"the hub answered HTTP {status} for {repo_id}: try again later"
    return f"the hub answered HTTP {status} for {repo_id}"


def _scrub(exc: Exception) -> str:
    """The exception's first line, without any token it might quote."""
    text = (str(exc).strip().splitlines() or [""])[0][:200]
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        secret = os.environ.get(name, "").strip()
        if secret:
            text = text.replace(secret, "***")
    return text


def _at(revision: str | None) -> str:
    return f" at revision {revision!r}" if revision else ""
