"""The bundled configs' pre-normalized files (kvplan.config.index): each equals a fresh normalization of its
config, a changed or missing file is never used, and loading a bundled id does not run pydantic."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from kvplan.config import ModelConfig, bundled_index, load_model
from kvplan.config import index as index_module
from kvplan.config.hf import load_file
from kvplan.errors import KvplanError

ROOT = Path(__file__).resolve().parents[2]


def _fresh(model_id: str) -> ModelConfig | None:
    try:
        return load_file(bundled_index()[model_id], model_id=model_id)
    except KvplanError:
        return None


def test_the_folder_is_current() -> None:
    spec = importlib.util.spec_from_file_location("normalized_configs", ROOT / "tools" / "normalized_configs.py")
    assert spec and spec.loader
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    assert tool.stale() == [], "run python tools/normalized_configs.py"


@pytest.mark.parametrize("model_id", sorted(bundled_index()))
def test_an_indexed_config_is_its_fresh_normalization(model_id: str) -> None:
    fresh = _fresh(model_id)
    path = bundled_index()[model_id]
    indexed = index_module.normalized(path, path.read_bytes(), model_id)
    if fresh is None:  # refused configs get no file: loading them refuses as before
        assert indexed is None
        return
    assert indexed == fresh and indexed.raw == fresh.raw and indexed.source == fresh.source
    assert indexed.notes == fresh.notes and indexed.layer_specs == fresh.layer_specs


def test_a_changed_config_is_parsed_again() -> None:
    path = bundled_index()["Qwen/Qwen3-8B"]
    edited = path.read_bytes().replace(b'"num_hidden_layers": 36', b'"num_hidden_layers": 35')
    assert edited != path.read_bytes()
    assert index_module.normalized(path, edited, "Qwen/Qwen3-8B") is None


def test_without_its_file_a_bundled_config_loads_through_the_parser(monkeypatch: pytest.MonkeyPatch,
                                                                    tmp_path: Path) -> None:
    from kvplan import config

    config._indexed.cache_clear()
    config._bundled.cache_clear()
    monkeypatch.setattr(config, "_BY_NAME", {})
    monkeypatch.setattr(index_module, "INDEX_DIR", tmp_path)  # no files there
    model = load_model("Qwen/Qwen3-8B")
    config._indexed.cache_clear()
    config._bundled.cache_clear()
    assert model == _fresh("Qwen/Qwen3-8B") and model.num_layers == 36


def test_a_bundled_id_asked_again_is_the_same_answer_until_a_local_folder_shadows_it(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # load_model keeps a bundled answer by the name asked (kvplan.config._again): a script's loop pays two stat
    # calls, not a resolution. A folder of that name in the working directory still wins, as resolve() says.
    first = load_model("Qwen/Qwen3-8B")
    assert load_model("Qwen/Qwen3-8B") is first
    local = tmp_path / "Qwen" / "Qwen3-8B"
    local.mkdir(parents=True)
    edited = bundled_index()["Qwen/Qwen3-8B"].read_bytes().replace(b'"num_hidden_layers": 36',
                                                                   b'"num_hidden_layers": 35')
    (local / "config.json").write_bytes(edited)
    monkeypatch.chdir(tmp_path)
    assert load_model("Qwen/Qwen3-8B").num_layers == 35
