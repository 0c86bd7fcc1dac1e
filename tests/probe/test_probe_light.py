"""`kvplan probe` on a light install (no torch, no triton): one stderr line naming the extra, exit 2."""

from __future__ import annotations

import subprocess
import sys

BLOCKED = "import sys; sys.modules['torch'] = sys.modules['triton'] = None; "  # `import torch` raises ImportError


def test_probe_without_torch_is_one_line_and_exit_2():
    code = BLOCKED + "import runpy; sys.argv = ['kvplan', 'probe', '--device', 'cpu']; runpy.run_module('kvplan', run_name='__main__')"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'kvplan[probe]'" in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
