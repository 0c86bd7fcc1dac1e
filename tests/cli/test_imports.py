"""The light path stays light: `import kvplan` and `kvplan size` never import torch, transformers or numpy."""

from __future__ import annotations

import subprocess
import sys

HEAVY = ("torch", "transformers", "numpy", "triton", "matplotlib")


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
    # progress bars, note merging and the other commands are imported where they are used, not here
    assert not loaded & {"rich.progress", "kvplan.cli.progress", "kvplan.render.notes", "kvplan.cli.fit",
                         "kvplan.planning.fit", "kvplan.cli.sweep"}
