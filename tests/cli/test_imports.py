"""The light path stays light: `import kvplan` and `kvplan size` never import torch, transformers, numpy or
huggingface_hub (only a fetch from the hub imports that)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "transformers", "numpy", "triton", "matplotlib", "huggingface_hub")


def _modules_after(code: str) -> set[str]:
    probe = f"import sys, io, contextlib\n{code}\nprint(' '.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stdout
    return set(out.split())


def test_import_kvplan_is_light() -> None:
    loaded = _modules_after("import kvplan")
    assert not loaded & set(HEAVY)
    assert "rich" not in loaded and "typer" not in loaded  # the library does not pull in the CLI


def test_size_command_is_light() -> None:
    loaded = _modules_after("from kvplan.cli import main\nwith contextlib.redirect_stdout(io.StringIO()):\n"
                            "    main(['size', 'meta-llama/Llama-2-70b', '--tp', '4'])")
    assert not loaded & set(HEAVY)
    assert "yaml" not in loaded  # PyYAML: only where a pasted vLLM command names --config (launch/config_file.py)
    # progress bars, note merging and the other commands are imported where they are used, not here
    assert not loaded & {"rich.progress", "kvplan.cli.progress", "kvplan.render.notes", "kvplan.cli.fit",
                         "kvplan.planning.fit", "kvplan.cli.sweep", "kvplan.cli.engine_options", "kvplan.render.models"}
    # a bundled id is read from its pre-normalized file: no pydantic model is built, no hub module loaded
    assert not loaded & {"kvplan.config.schema", "kvplan.config.hf", "kvplan.config.hub"}
    # the engines' checks on settings are imported only when a KV dtype or block size is asked (~30 ms)
    assert not {m for m in loaded if m.startswith("kvplan.engines")}
    # rich's emoji table (~2 ms) is not loaded: kvplan prints no :emoji: codes (a model id's colons stay literal)
    assert "rich._emoji_codes" not in loaded


@pytest.mark.parametrize(("name", "code", "imports_hub"), [("acme/tiny", 0, False), ("acme/elsewhere", 2, True)],
                         ids=["cached", "control-not-cached"])
def test_a_cached_hub_id_is_light(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, code: int,
                                  imports_hub: bool) -> None:
    """An id already in the HF cache is read from disk, online too: huggingface_hub stays out. The control,
    an id found nowhere, does import it (and fails at once: conftest's endpoint refuses connections)."""
    snapshot = tmp_path / "models--acme--tiny" / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True)
    shutil.copy(ROOT / "configs" / "Qwen" / "Qwen3-8B" / "config.json", snapshot / "config.json")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.delenv("HF_HUB_OFFLINE")
    loaded = _modules_after("from kvplan.cli import main\nwith contextlib.redirect_stdout(io.StringIO()), "
                            f"contextlib.redirect_stderr(io.StringIO()):\n    assert main(['size', {name!r}]) == {code}")
    assert ("huggingface_hub" in loaded) is imports_hub
    assert not loaded & (set(HEAVY) - {"huggingface_hub"})


@pytest.mark.parametrize("enabled", [True, False])
def test_importing_the_cli_leaves_the_collector_as_it_found_it(enabled: bool) -> None:
    """kvplan.cli pauses the garbage collector while typer, click and rich are imported (start-up time); a script
    that imports it gets the collector back in the state it had."""
    code = f"import gc\n{'' if enabled else 'gc.disable()'}\nimport kvplan.cli\nprint(gc.isenabled())"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    assert out.strip() == str(enabled)
