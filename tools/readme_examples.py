"""Keep the README's examples real output: every fenced block that holds one `$ kvplan ...` command and
its output is run again (a real `python -m kvplan` process, stdout and stderr as a terminal shows them,
120 columns), and the output shown is replaced by what kvplan prints now.

    python tools/readme_examples.py            # rewrite README.md in place
    python tools/readme_examples.py --check    # exit 1 naming each block that differs (tests/test_readme.py)

Not run: blocks of several commands (the hub walk-through needs a hub stand-in) and commands marked
`(excerpt)`. Trailing spaces are dropped (rich pads titles to the table's width).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
BLOCK = re.compile(r"```\n\$ (kvplan [^\n]*?(?:\\\n[^\n]*?)*)\n(.*?)```", re.S)
COLUMNS = "120"


def runnable(command: str, shown: str) -> bool:
    return "(excerpt)" not in command and not shown.startswith("$ ") and "\n$ " not in shown


def run(command: str) -> str:
    """What `command` prints in a 120-column terminal, stderr where it falls, trailing spaces dropped."""
    args = shlex.split(command.replace("\\\n", " "), comments=True)[1:]
    env = {**os.environ, "COLUMNS": COLUMNS, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1", "TERM": "dumb"}
    env.pop("FORCE_COLOR", None)
    done = subprocess.run([sys.executable, "-m", "kvplan", *args], cwd=ROOT, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
    return "".join(line.rstrip() + "\n" for line in done.stdout.splitlines())


def examples(text: str) -> list[tuple[re.Match[str], str]]:
    """(block, its output now) for every runnable block."""
    return [(m, run(m.group(1))) for m in BLOCK.finditer(text) if runnable(m.group(1), m.group(2))]


def rewritten(text: str) -> str:
    out, last = [], 0
    for match, now in examples(text):
        out += [text[last:match.start(2)], now]
        last = match.end(2)
    return "".join(out) + text[last:]


def stale(text: str) -> list[str]:
    """The commands whose shown output is not what kvplan prints now."""
    return [m.group(1) for m, now in examples(text) if m.group(2) != now]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a block is not current")
    text = README.read_text(encoding="utf-8")
    if parser.parse_args().check:
        bad = stale(text)
        for command in bad:
            print(f"not current: $ {command}", file=sys.stderr)
        return 1 if bad else 0
    README.write_text(rewritten(text), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
