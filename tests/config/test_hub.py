"""The hub step of resolution, against a local stand-in for the Hugging Face hub.

The stand-in is an HTTP server on 127.0.0.1 (a random port, one thread per request) that answers the
requests huggingface_hub makes for one file: HEAD then GET on ``/{repo}/resolve/{revision}/{file}``,
with the headers it needs (X-Repo-Commit, ETag, Content-Length; X-Error-Code on errors; a relative
307 for a renamed repo). It serves real bundled configs under made-up repo ids. HF_ENDPOINT points at
it, HF_HOME and HF_HUB_CACHE at tmp_path; nothing here reaches the real hub.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

import pytest

import kvplan
from kvplan.config.hub import check_revision, is_offline, is_repo_id, timeout_s
from kvplan.config.resolve import resolve

ROOT = Path(__file__).resolve().parents[2]
LLAMA2_70B = (ROOT / "configs" / "meta-llama" / "Llama-2-70b-hf" / "config.json").read_bytes()
QWEN3_8B = (ROOT / "configs" / "Qwen" / "Qwen3-8B" / "config.json").read_bytes()
# 2 (K, V) × 80 layers × 8 KV heads × 128 head dim × 2 B (fp16) = 327,680 B per token
LLAMA2_70B_BYTES_PER_TOKEN = 327_680
# 2 × 36 layers × 8 KV heads × 128 × 2 B (bf16) = 147,456 B per token
QWEN3_8B_BYTES_PER_TOKEN = 147_456
# Meta's original Llama-2-7b params.json: 32 heads, no n_kv_heads (MHA); 2 × 32 × 32 × (4096 / 32 = 128) × 2 B
META_PARAMS = json.dumps({"dim": 4096, "multiple_of": 256, "n_heads": 32, "n_layers": 32, "norm_eps": 1e-06,
                          "vocab_size": -1}).encode()
META_PARAMS_BYTES_PER_TOKEN = 524_288
TOKEN = "hf_standInSecret0123456789"


@dataclass
class Repo:
    files: dict[str, dict[str, bytes]]  # revision -> file name -> bytes
    token: str | None = None  # gated: only this bearer token may read it
    moved_to: str | None = None  # renamed: a relative 307 to the new id
    status: int | None = None  # every request answers this status
    announced_size: int | None = None  # HEAD claims this Content-Length
    sized: bool = True  # False: HEAD sends no Content-Length


REPOS = {
    "acme/llama-copy": Repo({"main": {"config.json": LLAMA2_70B}, "v2": {"config.json": QWEN3_8B}}),
    "acme/gated-lm": Repo({"main": {"config.json": LLAMA2_70B}}, token=TOKEN),
    "acme/old-name": Repo({}, moved_to="acme/llama-copy"),
    "meta/original": Repo({"main": {"params.json": META_PARAMS, "consolidated.00.pth": b"weights"}}),
    "acme/weightless": Repo({"main": {"README.md": b"no config here"}}),
    "acme/huge": Repo({"main": {"config.json": LLAMA2_70B}}, announced_size=65 * 1024**2),
    "acme/sizeless": Repo({"main": {"config.json": LLAMA2_70B}}, sized=False),
    "acme/down": Repo({}, status=503),
    "acme/limited": Repo({}, status=429),
    "acme/refused": Repo({}, status=401),  # a 401 without X-Error-Code: the hub rejects the token itself
    "acme/forbidden": Repo({}, status=403),
}


def commit(repo_id: str, revision: str) -> str:
    return hashlib.sha1(f"{repo_id}@{revision}".encode()).hexdigest()


@dataclass
class Seen:
    method: str
    path: str
    authorization: str | None


class StandIn(BaseHTTPRequestHandler):
    """HEAD and GET /{org}/{name}/resolve/{revision}/{file}, as the hub answers them."""

    server: StandInServer

    def do_HEAD(self) -> None:
        self._answer(send_body=False)

    def do_GET(self) -> None:
        self._answer(send_body=True)

    def log_message(self, format: str, *args: object) -> None:  # keep pytest's output clean
        pass

    def _answer(self, send_body: bool) -> None:
        self.server.seen.append(Seen(self.command, self.path, self.headers.get("Authorization")))
        match = re.fullmatch(r"/([^/]+/[^/]+)/resolve/([^/]+)/([^?]+)", self.path)
        if not match:
            return self._send(404, {"X-Error-Code": "RepoNotFound"}, b"", send_body)
        repo_id, revision, filename = match.group(1), unquote(match.group(2)), match.group(3)
        repo = self.server.repos.get(repo_id)
        if repo is None:
            return self._send(404, {"X-Error-Code": "RepoNotFound", "X-Error-Message": "Repository not found"},
                              b"", send_body)
        if repo.status:
            return self._send(repo.status, {}, b"", send_body)
        if repo.moved_to:
            return self._send(307, {"Location": f"/{repo.moved_to}/resolve/{match.group(2)}/{filename}"}, b"",
                              send_body)
        auth = self.headers.get("Authorization")
        if repo.token and auth != f"Bearer {repo.token}":
            return self._send(403 if auth else 401, {"X-Error-Code": "GatedRepo"}, b"", send_body)
        return self._file(repo_id, repo, revision, filename, send_body)

    def _file(self, repo_id: str, repo: Repo, revision: str, filename: str, send_body: bool) -> None:
        by_commit = {commit(repo_id, r): r for r in repo.files}
        revision = by_commit.get(revision, revision)
        if revision not in repo.files:
            return self._send(404, {"X-Error-Code": "RevisionNotFound"}, b"", send_body)
        sha = commit(repo_id, revision)
        body = repo.files[revision].get(filename)
        if body is None:
            return self._send(404, {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": sha}, b"", send_body)
        headers = {"X-Repo-Commit": sha, "ETag": f'"{hashlib.sha1(body).hexdigest()}"'}
        if repo.announced_size and not send_body:
            headers["Content-Length"] = str(repo.announced_size)
        if not repo.sized and not send_body:
            headers["Content-Length"] = ""  # _send then leaves the header out
        return self._send(200, headers, body, send_body)

    def _send(self, status: int, headers: dict[str, str], body: bytes, send_body: bool) -> None:
        self.send_response(status)
        headers.setdefault("Content-Length", str(len(body)))
        for name, value in headers.items():
            if value:
                self.send_header(name, value)
        self.end_headers()
        if send_body:
            self.wfile.write(body)


class StandInServer(ThreadingHTTPServer):
    daemon_threads = True
    repos: dict[str, Repo]
    seen: list[Seen]


@dataclass
class Hub:
    server: StandInServer
    cache: Path
    url: str
    running: bool = True
    env: dict[str, str] = field(default_factory=dict)

    @property
    def seen(self) -> list[Seen]:
        return self.server.seen

    def files_asked(self) -> set[str]:
        return {s.path.rpartition("/")[2] for s in self.seen}

    def stop(self) -> None:
        if self.running:
            self.server.shutdown()
            self.server.server_close()
            self.running = False


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Hub]:
    """The stand-in, running, with the environment pointed at it and an empty cache under tmp_path."""
    server = StandInServer(("127.0.0.1", 0), StandIn)
    server.repos, server.seen = REPOS, []
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    online(monkeypatch, tmp_path, url)
    running = Hub(server, tmp_path / "hf" / "hub", url, env=dict(os.environ))
    yield running
    running.stop()


def online(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, endpoint: str) -> None:
    """Network on (conftest turns it off for every test), towards `endpoint`, caching under tmp_path."""
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_OIDC_RESOURCE",
                 "HF_HUB_ETAG_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    import huggingface_hub.constants as constants

    # Read by huggingface_hub once, at import: other test modules import it with HF_HUB_OFFLINE=1 set,
    # and a developer's own login must not reach the stand-in.
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "hf" / "token"))


def error_of(name: str, revision: str | None = None) -> str:
    with pytest.raises(kvplan.ConfigError) as info:
        kvplan.load_model(name, revision=revision)
    message = str(info.value)
    assert "\n" not in message
    return message


def bytes_per_token(model: kvplan.ModelConfig) -> int:
    return kvplan.kv_cache(model, max_model_len=1).bytes_per_token


# ----------------------------------------------------------------------------- fetch, then offline


def test_first_fetch_online_then_offline_from_the_cache(hub: Hub, monkeypatch: pytest.MonkeyPatch) -> None:
    model = kvplan.load_model("acme/llama-copy")
    assert (model.model_id, bytes_per_token(model)) == ("acme/llama-copy", LLAMA2_70B_BYTES_PER_TOKEN)
    snapshot = hub.cache / "models--acme--llama-copy" / "snapshots" / commit("acme/llama-copy", "main")
    assert model.source == str(snapshot / "config.json")
    assert (hub.cache / "models--acme--llama-copy" / "refs" / "main").read_text() == commit("acme/llama-copy", "main")
    assert [(s.method, s.path) for s in hub.seen] == [("HEAD", "/acme/llama-copy/resolve/main/config.json")] * 2 + [
        ("GET", "/acme/llama-copy/resolve/main/config.json")]
    hub.stop()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    again = kvplan.load_model("acme/llama-copy")
    assert (again.source, bytes_per_token(again)) == (model.source, LLAMA2_70B_BYTES_PER_TOKEN)


def test_a_cached_config_is_used_without_a_request(hub: Hub) -> None:
    kvplan.load_model("acme/llama-copy")
    asked = len(hub.seen)
    kvplan.load_model("acme/llama-copy")
    assert len(hub.seen) == asked


def test_a_revision_is_fetched_and_cached_under_its_ref(hub: Hub, monkeypatch: pytest.MonkeyPatch) -> None:
    model = kvplan.load_model("acme/llama-copy", revision="v2")
    assert bytes_per_token(model) == QWEN3_8B_BYTES_PER_TOKEN
    assert (hub.cache / "models--acme--llama-copy" / "refs" / "v2").read_text() == commit("acme/llama-copy", "v2")
    assert bytes_per_token(kvplan.load_model("acme/llama-copy")) == LLAMA2_70B_BYTES_PER_TOKEN  # main is another
    hub.stop()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert bytes_per_token(kvplan.load_model("acme/llama-copy", revision="v2")) == QWEN3_8B_BYTES_PER_TOKEN
    sha = commit("acme/llama-copy", "v2")
    assert bytes_per_token(kvplan.load_model("acme/llama-copy", revision=sha)) == QWEN3_8B_BYTES_PER_TOKEN
    assert "HF_HUB_OFFLINE" in error_of("acme/llama-copy", revision="v3")  # not cached: no fallback to main


def test_an_explicit_revision_skips_the_bundled_config(hub: Hub) -> None:
    """A bundled id with a revision is that repo at that revision; an alias names its bundled repo."""
    hub.server.repos = {**REPOS, "meta-llama/Llama-2-70b-hf": Repo({"main": {"config.json": QWEN3_8B}})}
    assert bytes_per_token(kvplan.load_model("meta-llama/Llama-2-70b-hf")) == LLAMA2_70B_BYTES_PER_TOKEN
    assert hub.seen == []
    assert bytes_per_token(kvplan.load_model("llama-2-70b", revision="main")) == QWEN3_8B_BYTES_PER_TOKEN
    assert hub.files_asked() == {"config.json"} and "/meta-llama/Llama-2-70b-hf/" in hub.seen[0].path


def test_a_renamed_repo_follows_the_hub_redirect(hub: Hub) -> None:
    assert bytes_per_token(kvplan.load_model("acme/old-name")) == LLAMA2_70B_BYTES_PER_TOKEN
    assert {s.path.split("/resolve/")[0] for s in hub.seen} == {"/acme/old-name", "/acme/llama-copy"}


def test_params_json_only_when_config_json_is_absent_and_nothing_else(hub: Hub) -> None:
    model = kvplan.load_model("meta/original")
    assert (bytes_per_token(model), Path(model.source).name) == (META_PARAMS_BYTES_PER_TOKEN, "params.json")
    assert hub.files_asked() == {"config.json", "params.json"}  # never the weights beside them
    cached = {p.name for p in (hub.cache / "models--meta--original" / "snapshots").rglob("*") if p.is_file()}
    assert cached == {"params.json"}


def test_a_repo_without_a_config_is_one_line(hub: Hub) -> None:
    assert "has no config.json or params.json" in error_of("acme/weightless")
    assert hub.files_asked() == {"config.json", "params.json"}


def test_a_fetched_config_runs_no_code(hub: Hub) -> None:
    evil = {"architectures": ["EvilForCausalLM"], "model_type": "evil", "trust_remote_code": True,
            "auto_map": {"AutoConfig": "configuration_evil.EvilConfig"}, "num_hidden_layers": 4,
            "num_attention_heads": 8, "num_key_value_heads": 2, "hidden_size": 1024, "torch_dtype": "bfloat16"}
    code = b"import pathlib; pathlib.Path('MARKER').write_text('ran')"
    hub.server.repos = {"evil/lm": Repo({"main": {"config.json": json.dumps(evil).encode(),
                                                  "configuration_evil.py": code}})}
    before = set(sys.modules)
    # 2 × 4 layers × 2 KV heads × (1024 / 8) × 2 B = 4,096 B per token
    assert bytes_per_token(kvplan.load_model("evil/lm")) == 4_096
    assert hub.files_asked() == {"config.json"}
    assert not {m for m in set(sys.modules) - before if "evil" in m or m.startswith("transformers")}


# ----------------------------------------------------------------------------- errors, one line each


def test_a_missing_repo_names_the_closest_bundled_ids(hub: Hub) -> None:
    message = error_of("meta-llama/Llama-2-71b-hf")
    assert message.startswith("unknown model 'meta-llama/Llama-2-71b-hf': not bundled, not in the HF cache, "
                              "not on the hub")
    assert "closest bundled ids: " in message and "meta-llama/Llama-2-70b-hf" in message and "HF_TOKEN" in message


def test_a_missing_revision_is_one_line(hub: Hub) -> None:
    assert error_of("acme/llama-copy", revision="nope") == "revision 'nope' of acme/llama-copy is not on the hub"


@pytest.mark.parametrize("token", [None, "hf_wrongToken"], ids=["no-token-401", "wrong-token-403"])
def test_a_gated_repo_says_to_set_hf_token(hub: Hub, monkeypatch: pytest.MonkeyPatch, token: str | None) -> None:
    if token:
        monkeypatch.setenv("HF_TOKEN", token)
    message = error_of("acme/gated-lm")
    assert "gated" in message and "HF_TOKEN" in message and "hf auth login" in message
    assert token is None or token not in message
    assert not (hub.cache / "models--acme--gated-lm" / "snapshots").exists()


def test_hf_token_is_sent_as_a_bearer_header(hub: Hub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    assert bytes_per_token(kvplan.load_model("acme/gated-lm")) == LLAMA2_70B_BYTES_PER_TOKEN
    assert {s.authorization for s in hub.seen} == {f"Bearer {TOKEN}"}


@pytest.mark.parametrize(("repo_id", "needle"), [
    pytest.param("acme/down", "the hub answered HTTP 503 for acme/down: try again later", id="503"),
    pytest.param("acme/limited", "rate-limiting", id="429"),
    pytest.param("acme/refused", "the hub refused the token for acme/refused (HTTP 401): check HF_TOKEN", id="401"),
    pytest.param("acme/forbidden", "the hub refused access to acme/forbidden (HTTP 403): set HF_TOKEN", id="403"),
])
def test_hub_errors_are_one_line_and_answered_at_once(hub: Hub, repo_id: str, needle: str) -> None:
    start = time.perf_counter()
    assert needle in error_of(repo_id)
    assert time.perf_counter() - start < 3  # no retry with back-off
    assert len(hub.seen) == 1


def test_a_huge_config_is_refused_before_its_download(hub: Hub) -> None:
    message = error_of("acme/huge")
    assert message == ("acme/huge/config.json on the hub is 68,157,440 bytes, larger than 64 MiB; "
                       "not a model config")
    assert [s.method for s in hub.seen] == ["HEAD"]
    assert not (hub.cache / "models--acme--huge" / "blobs").exists()


def test_a_config_of_unknown_size_is_not_downloaded(hub: Hub) -> None:
    assert error_of("acme/sizeless") == "the hub gave no size for acme/sizeless/config.json; not downloading it"
    assert [s.method for s in hub.seen] == ["HEAD"]


def test_without_huggingface_hub_the_hub_step_is_one_line(hub: Hub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # what `import huggingface_hub` meets when it is absent
    assert error_of("acme/llama-copy") == ("fetching from the hub needs huggingface_hub: pip install huggingface_hub")
    assert hub.seen == []


@pytest.mark.parametrize("name", ["acme/../etc", "acme/a/../../b", "acme/x%2f..", "acme/name?x=1", "acme/na me",
                                  "acme/x#frag", "http://evil.example/acme/x", "//evil.example/x", "acme/a--b",
                                  "acme/" + "x" * 97, "acme\\x"])
def test_path_tricks_in_an_id_are_refused_without_a_request(hub: Hub, name: str) -> None:
    with pytest.raises(kvplan.ConfigError):
        kvplan.load_model(name)
    assert hub.seen == []


@pytest.mark.parametrize("revision", ["../../etc", "main/..", "/abs", "a b", "x?y", "", "a\nb", "refs//pr"])
def test_path_tricks_in_a_revision_are_refused_without_a_request(hub: Hub, revision: str) -> None:
    with pytest.raises(kvplan.ConfigError, match="revision") as info:
        kvplan.load_model("acme/llama-copy", revision=revision)
    assert info.value.arg_names == ("revision",)
    assert hub.seen == []


def test_a_revision_with_a_path_is_refused(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_bytes(LLAMA2_70B)
    with pytest.raises(kvplan.ConfigError, match="is a local path"):
        kvplan.load_model(str(tmp_path), revision="main")


# ----------------------------------------------------------------------------- no network


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_no_server_is_one_line_at_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    online(monkeypatch, tmp_path, f"http://127.0.0.1:{free_port()}")
    start = time.perf_counter()
    message = error_of("acme/llama-copy")
    assert time.perf_counter() - start < 3
    assert message.startswith("cannot reach the hub at http://127.0.0.1:") and "neither bundled nor in the HF cache" \
        in message


def test_a_silent_server_times_out_after_hf_hub_etag_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as sock:  # accepts connections (the kernel's backlog) and never answers
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        online(monkeypatch, tmp_path, f"http://127.0.0.1:{sock.getsockname()[1]}")
        monkeypatch.setenv("HF_HUB_ETAG_TIMEOUT", "1")
        start = time.perf_counter()
        message = error_of("acme/llama-copy")
        assert 0.9 < time.perf_counter() - start < 4
    assert message.startswith("cannot reach the hub") and "Timeout" in message


def test_offline_mode_makes_no_request(hub: Hub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    message = error_of("acme/llama-copy")
    assert message.startswith("unknown model 'acme/llama-copy': not bundled, not in the HF cache, and "
                              "HF_HUB_OFFLINE keeps kvplan off the hub")
    assert hub.seen == []


def test_an_org_less_name_never_reaches_the_hub(hub: Hub) -> None:
    assert error_of("llama-copy").startswith("unknown model 'llama-copy'; ")
    assert hub.seen == []


# ----------------------------------------------------------------------------- small pieces


@pytest.mark.parametrize(("name", "ok"), [("acme/llama-copy", True), ("Qwen/Qwen3-8B", True), ("a_b/c.d-e", True),
                                          ("gpt2", False), ("a/b/c", False), ("a/../b", False), ("a/b.", False),
                                          ("-a/b", False), ("a/b--c", False), ("a/" + "b" * 96, True),
                                          ("a/" + "b" * 97, False), ("a/b\n", False), ("é/b", False)])
def test_repo_ids(name: str, ok: bool) -> None:
    assert is_repo_id(name) is ok


@pytest.mark.parametrize("revision", ["main", "v1.0", "refs/pr/12", "a" * 40, "release_2+x"])
def test_good_revisions(revision: str) -> None:
    assert check_revision(revision) == revision


@pytest.mark.parametrize(("value", "offline"), [("1", True), ("ON", True), ("true", True), ("yes", True),
                                                ("0", False), ("", False), ("off", False)])
def test_offline_flag_spellings(monkeypatch: pytest.MonkeyPatch, value: str, offline: bool) -> None:
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", value)
    assert is_offline() is offline


@pytest.mark.parametrize(("value", "seconds"), [(None, 5.0), ("2", 2.0), ("0.5", 0.5), ("zero", 5.0), ("-1", 5.0)])
def test_timeout(monkeypatch: pytest.MonkeyPatch, value: str | None, seconds: float) -> None:
    if value is None:
        monkeypatch.delenv("HF_HUB_ETAG_TIMEOUT", raising=False)
    else:
        monkeypatch.setenv("HF_HUB_ETAG_TIMEOUT", value)
    assert timeout_s() == seconds


def test_resolve_returns_the_repo_id(hub: Hub) -> None:
    path, model_id = resolve("acme/llama-copy")
    assert model_id == "acme/llama-copy" and path.read_bytes() == LLAMA2_70B


# ----------------------------------------------------------------------------- the CLI, in a real process


def kvplan_size(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kvplan", "size", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=60)


@pytest.mark.slow
def test_the_cli_fetches_then_works_offline(hub: Hub) -> None:
    env = {**hub.env, "HF_TOKEN": TOKEN}
    proc = kvplan_size(env, "acme/gated-lm", "--json", "--seq-len", "4k")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    result = json.loads(proc.stdout)
    assert (result["model"], result["bytes_per_sequence"]) == ("acme/gated-lm", LLAMA2_70B_BYTES_PER_TOKEN * 4096)
    assert TOKEN not in proc.stdout
    proc = kvplan_size(env, "acme/llama-copy", "--revision", "v2", "--json", "--seq-len", "1")
    assert proc.returncode == 0 and json.loads(proc.stdout)["bytes_per_token"] == QWEN3_8B_BYTES_PER_TOKEN
    hub.stop()
    offline = {**hub.env, "HF_HUB_OFFLINE": "1"}
    proc = kvplan_size(offline, "acme/gated-lm", "--json", "--seq-len", "4k")
    assert proc.returncode == 0 and json.loads(proc.stdout) == result
    proc = kvplan_size(offline, "acme/other-lm")
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("kvplan: error: unknown model 'acme/other-lm'")
    proc = kvplan_size(hub.env, "acme/other-lm")  # not offline, but the hub is gone
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "cannot reach the hub" in proc.stderr


@pytest.mark.slow
def test_the_cli_never_prints_the_token(hub: Hub) -> None:
    proc = kvplan_size({**hub.env, "HF_TOKEN": "hf_notTheRightOne42"}, "acme/gated-lm")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "gated" in proc.stderr
    assert "hf_notTheRightOne42" not in proc.stdout + proc.stderr
    assert {s.authorization for s in hub.seen} == {"Bearer hf_notTheRightOne42"}


# ----------------------------------------------------------------------------- --revision on every command

REVISION_COMMANDS = {
    "size": ["--seq-len", "8k"],
    "capacity": ["--kv-budget", "20GiB"],
    "fit": ["--context", "32k", "--concurrency", "8"],
    "compare": ["--seq-len", "8k"],
    "sweep": ["--seq-len", "1k,8k"],
    "waste": ["--max-seq-len", "8k", "--lengths", "fixed:1000:4"],
}


def comparable(out: str) -> object:
    """A JSON document (or JSON lines), without the config file's path."""
    def strip(node: object) -> object:
        if isinstance(node, dict):
            return {k: strip(v) for k, v in node.items() if k != "source"}
        return [strip(v) for v in node] if isinstance(node, list) else node

    try:
        return strip(json.loads(out))
    except ValueError:
        return [strip(json.loads(line)) for line in out.splitlines()]


@pytest.mark.parametrize("command", sorted(REVISION_COMMANDS))
def test_every_command_takes_a_revision(hub: Hub, run_cli, command: str) -> None:
    """`acme/llama-copy --revision v2` is Qwen3-8B's config: each command prints what it prints for the bundled
    Qwen/Qwen3-8B (bar the name), and never Llama-2-70b's numbers, which main holds."""
    args, copies = REVISION_COMMANDS[command], 2 if command == "compare" else 1  # compare takes two or more
    code, out, err = run_cli(command, *["acme/llama-copy"] * copies, *args, "--revision", "v2", "--json")
    assert code == 0, err
    code, bundled, err = run_cli(command, *["Qwen/Qwen3-8B"] * copies, *args, "--json")
    assert code == 0, err
    assert comparable(out.replace("acme/llama-copy", "Qwen/Qwen3-8B")) == comparable(bundled)
    assert {s.path.split("/resolve/")[1] for s in hub.seen} == {"v2/config.json"}


def test_a_revision_applies_to_every_model_named(hub: Hub, run_cli) -> None:
    code, _, err = run_cli("compare", "acme/llama-copy", "meta-llama/Llama-3.2-1B", "--revision", "v2")
    assert code == 2 and err.startswith("kvplan: error: unknown model 'meta-llama/Llama-3.2-1B': not bundled, not in "
                                        "the HF cache, not on the hub")
    assert [s.path for s in hub.seen][-1] == "/meta-llama/Llama-3.2-1B/resolve/v2/config.json"


# ----------------------------------------------------------------------------- a damaged answer, a damaged cache

GARBAGE = b"<html><body>Proxy login required</body></html>"


def test_an_answer_that_is_not_a_config_is_not_kept(hub: Hub) -> None:
    """A proxy's HTML page once stayed in the cache and failed the model forever; now it is refused and removed."""
    hub.server.repos = {**REPOS, "acme/proxied": Repo({"main": {"config.json": GARBAGE}})}
    message = error_of("acme/proxied")
    assert "sent acme/proxied/config.json, but not a config" in message and "not kept in the cache" in message
    assert not list((hub.cache / "models--acme--proxied" / "snapshots").rglob("config.json"))
    hub.server.repos = {**REPOS, "acme/proxied": Repo({"main": {"config.json": QWEN3_8B}})}  # the hub is healthy
    assert bytes_per_token(kvplan.load_model("acme/proxied")) == QWEN3_8B_BYTES_PER_TOKEN


def poisoned_cache(hub: Hub) -> Path:
    """acme/llama-copy fetched, then its cached config.json overwritten with garbage (an older kvplan kept it)."""
    model = kvplan.load_model("acme/llama-copy")
    cached = Path(model.source)
    blob = cached.resolve()
    blob.chmod(0o644)
    blob.write_bytes(b"\xb5\x00garbage")
    return cached


def test_a_damaged_cached_config_is_fetched_again_with_a_note(hub: Hub) -> None:
    cached = poisoned_cache(hub)
    model = kvplan.load_model("acme/llama-copy")
    assert bytes_per_token(model) == LLAMA2_70B_BYTES_PER_TOKEN
    assert any(f"the cached config {cached} was not a config" in n and "fetched it again" in n for n in model.notes)
    assert json.loads(cached.read_bytes())["num_hidden_layers"] == 80  # the cache is whole again


def test_a_damaged_cached_config_offline_names_the_file_to_delete(hub: Hub, monkeypatch: pytest.MonkeyPatch) -> None:
    cached = poisoned_cache(hub)
    hub.stop()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    message = error_of("acme/llama-copy")
    assert f"delete {cached}" in message and "not UTF-8" in message
