"""Loading a model folder reads config.json as JSON and nothing else: no code from the folder runs
(no remote-code classes, no auto_map, no pickle), nothing in it is written, and a symlinked config
is read like any file, no more.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

import kvplan

ROOT = Path(__file__).resolve().parents[2]
CONFIG = {
    "architectures": ["EvilForCausalLM"], "model_type": "evil",
    "auto_map": {"AutoConfig": "configuration_evil.EvilConfig", "AutoModelForCausalLM": "modeling_evil.EvilModel"},
    "trust_remote_code": True,
    "num_hidden_layers": 4, "num_attention_heads": 8, "num_key_value_heads": 2, "hidden_size": 1024,
    "torch_dtype": "bfloat16",
}
# 2 (K, V) × 4 layers × 2 KV heads × (1024 / 8 = 128) × 2 B (bf16) = 4,096 B per token
CONFIG_BYTES_PER_TOKEN = 4_096


class _Payload:
    """Unpickling this creates the marker file: proof that a pickle was loaded."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str, str]]:
        return open, (str(self.marker), "w")


def _code_that_marks(marker: Path) -> str:
    return f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n"


def malicious_folder(folder: Path, marker: Path) -> Path:
    """A model folder whose every non-JSON file would create `marker` if it were run or unpickled."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(CONFIG))
    for name in ("configuration_evil.py", "modeling_evil.py", "__init__.py", "tokenization_evil.py"):
        (folder / name).write_text(_code_that_marks(marker))
    for name in ("pytorch_model.bin", "training_args.bin", "config.pkl"):
        (folder / name).write_bytes(pickle.dumps(_Payload(marker)))
    return folder


def snapshot(root: Path) -> dict[str, tuple[int, int, str]]:
    """Every entry under root: (mode, mtime_ns, content hash); a write or a new file changes it."""
    entries = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() and not path.is_symlink() else ""
        entries[str(path.relative_to(root))] = (st.st_mode, st.st_mtime_ns, digest)
    return entries


@pytest.fixture
def evil(tmp_path: Path) -> tuple[Path, Path]:
    marker = tmp_path / "marker"
    return malicious_folder(tmp_path / "model", marker), marker


def test_the_payloads_work(evil: tuple[Path, Path]) -> None:
    """Control: the traps do fire when used, so their silence below means something."""
    folder, marker = evil
    pickle.loads((folder / "pytorch_model.bin").read_bytes())  # the point of the test
    assert marker.exists()
    marker.unlink()
    exec(compile((folder / "configuration_evil.py").read_text(), "configuration_evil.py", "exec"))
    assert marker.exists()


def test_loading_a_folder_runs_none_of_its_code(evil: tuple[Path, Path]) -> None:
    folder, marker = evil
    before = set(sys.modules)
    model = kvplan.load_model(str(folder))
    assert kvplan.kv_cache(model, max_model_len=1).bytes_per_token == CONFIG_BYTES_PER_TOKEN
    assert not marker.exists()
    assert not {m for m in set(sys.modules) - before if "evil" in m}


def test_the_cli_in_a_fresh_process_runs_none_of_its_code(evil: tuple[Path, Path]) -> None:
    folder, marker = evil
    code = ("import sys, kvplan; m = kvplan.load_model(sys.argv[1]); kvplan.kv_cache(m, max_model_len=8);"
            "print(sorted(k for k in sys.modules if k.split('.')[0] in ('transformers', 'torch')))")
    proc = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True, cwd=ROOT,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"  # no loader that could honour auto_map or torch.load a .bin is even imported
    proc = subprocess.run([sys.executable, "-m", "kvplan", "size", str(folder), "--json"], capture_output=True,
                          text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["bytes_per_token"] == CONFIG_BYTES_PER_TOKEN
    assert not marker.exists()


def test_a_hub_cache_snapshot_is_read_as_json_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "marker"
    cache = tmp_path / "hub"
    snap = malicious_folder(cache / "models--evilorg--evil-7b" / "snapshots" / "0123abcd", marker)
    (cache / "models--evilorg--evil-7b" / "refs").mkdir()
    (cache / "models--evilorg--evil-7b" / "refs" / "main").write_text("0123abcd")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    before = snapshot(tmp_path)
    model = kvplan.load_model("evilorg/evil-7b")
    assert model.source == str(snap / "config.json")
    assert not marker.exists()
    assert snapshot(tmp_path) == before


def test_loading_writes_nothing(evil: tuple[Path, Path], run_cli) -> None:
    folder, marker = evil
    before = snapshot(folder.parent)
    kvplan.load_model(str(folder))
    assert not marker.exists()
    kvplan.load_model(str(folder / "config.json"))
    for args in (["size", str(folder)], ["size", str(folder), "--json", "--tp", "2", "--explain"]):
        code, _, err = run_cli(*args)
        assert code == 0, err
    assert snapshot(folder.parent) == before  # no new file (no __pycache__, no lock), no changed mtime


def test_a_read_only_folder_loads(evil: tuple[Path, Path]) -> None:
    folder, _ = evil
    for path in [folder, *folder.iterdir()]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    try:
        assert kvplan.load_model(str(folder)).num_layers == 4
    finally:
        folder.chmod(0o755)


# ------------------------------------------------------------------------------------- symlinks

def test_a_symlinked_config_outside_its_folder_is_read_like_any_file(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    outside = malicious_folder(tmp_path / "elsewhere", marker)  # code beside the target: still never run
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").symlink_to(outside / "config.json")
    before = snapshot(tmp_path)
    via_link, direct = kvplan.load_model(str(folder)), kvplan.load_model(str(outside))
    assert kvplan.kv_cache(via_link, max_model_len=100).bytes_per_sequence == kvplan.kv_cache(
        direct, max_model_len=100).bytes_per_sequence == 100 * CONFIG_BYTES_PER_TOKEN
    assert via_link.source == str(folder / "config.json")  # reported as given, not resolved
    assert not marker.exists()
    assert snapshot(tmp_path) == before


def test_a_symlinked_folder_is_read_like_any_folder(evil: tuple[Path, Path], tmp_path: Path) -> None:
    folder, marker = evil
    link = tmp_path / "link-to-model"
    link.symlink_to(folder, target_is_directory=True)
    assert kvplan.load_model(str(link)).num_kv_heads == 2
    assert not marker.exists()


@pytest.mark.parametrize("target", ["/dev/zero", "/dev/null", "missing.json", "loop"])
def test_a_config_linked_to_a_device_a_void_or_itself_is_a_config_error(tmp_path: Path, target: str) -> None:
    """/dev/zero never ends: it must be refused without reading, not hang or fill memory."""
    folder = tmp_path / "model"
    folder.mkdir()
    link = folder / "config.json"
    link.symlink_to(folder / "config.json" if target == "loop" else Path(target) if target.startswith("/")
                    else tmp_path / target)
    for name in (str(folder), str(link)):
        with pytest.raises(kvplan.ConfigError) as info:
            kvplan.load_model(name)
        assert "\n" not in str(info.value)


def test_a_fifo_named_config_json_is_not_opened(tmp_path: Path) -> None:
    """Opening a FIFO blocks until a writer comes: the loader must not open one."""
    folder = tmp_path / "model"
    folder.mkdir()
    os.mkfifo(folder / "config.json")
    for name in (str(folder), str(folder / "config.json")):
        with pytest.raises(kvplan.ConfigError):
            kvplan.load_model(name)


def test_the_loader_has_no_code_execution_paths() -> None:
    """Static guard: the reading code imports no unpickler/importer and never trusts remote code."""
    forbidden = ("import pickle", "torch.load", "trust_remote_code=True", "exec(", "eval(", "importlib",
                 "__import__", "from_pretrained", "runpy", "marshal")
    for path in [*(ROOT / "kvplan" / "config").glob("*.py"), ROOT / "kvplan" / "cli" / "size.py"]:
        text = path.read_text()
        assert not [f for f in forbidden if f in text], path


@pytest.mark.parametrize("ref", [b"\xff\xfe", b"abc\x00def", b"../../../../../../etc", b"", b"a" * 5000])
def test_a_damaged_hub_cache_entry_is_a_config_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     ref: bytes) -> None:
    """refs/main is read from disk: garbage, a NUL byte, a path out of the cache or a huge name in it
    must end in 'unknown model', not a traceback (regression: ValueError/OSError escaped)."""
    folder = tmp_path / "hub" / "models--org--damaged"
    (folder / "refs").mkdir(parents=True)
    (folder / "refs" / "main").write_bytes(ref)
    (folder / "snapshots").mkdir()
    (folder / "snapshots" / "dangling").symlink_to(tmp_path / "nowhere")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(kvplan.ConfigError, match="unknown model"):
        kvplan.load_model("org/damaged")
