"""Keep the examples of README.md and of every page under docs/ real output: every fenced block that holds
one `$ kvplan ...` command and its output is run again (a real `python -m kvplan` process, stdout and
stderr as a terminal shows them, 120 columns), and the output shown is replaced by what kvplan prints now.

    python tools/readme_examples.py            # rewrite README.md and docs/**/*.md in place
    python tools/readme_examples.py --check    # exit 1 naming each block that differs (tests/test_readme.py)
    python tools/readme_examples.py docs/tutorial.md   # only the pages named

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
DOCS = ROOT / "docs"
BLOCK = re.compile(r"```\n\$ (kvplan [^\n]*?(?:\\\n[^\n]*?)*)\n(.*?)```", re.S)
COLUMNS = "120"


def runnable(command: str, shown: str) -> bool:
    return "(excerpt)" not in command and not shown.startswith("$ ") and "\n$ " not in shown


def run(command: str) -> str:
    """What `command` prints in a 120-column terminal, stderr where it falls, trailing spaces dropped.

    A command may end in ` 2>/dev/null` (stderr dropped) and one filter of its stdout, as a shell would run
    it: `| grep -E REGEX`, `| head -n N` or `| tail -n N` (stderr, when kept, follows the filtered lines)."""
    command, *filters = command.replace("\\\n", " ").split(" | ")
    quiet = command.endswith(" 2>/dev/null")
    args = shlex.split(command.removesuffix(" 2>/dev/null"), comments=True)[1:]
    env = {**os.environ, "COLUMNS": COLUMNS, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1", "TERM": "dumb"}
    env.pop("FORCE_COLOR", None)
    split = bool(filters) or quiet
    done = subprocess.run([sys.executable, "-m", "kvplan", *args], cwd=ROOT, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE if split else subprocess.STDOUT, check=False)
    lines = done.stdout.splitlines()
    for stage in filters:
        lines = apply_filter(shlex.split(stage, comments=True), lines)
    if split and not quiet:
        lines += done.stderr.splitlines()
    return "".join(line.rstrip() + "\n" for line in lines)


def apply_filter(argv: list[str], lines: list[str]) -> list[str]:
    """The three shell filters an example may pipe through (anything else is an error in the page)."""
    match argv:
        case ["grep", "-E", pattern] | ["grep", pattern]:
            return [line for line in lines if re.search(pattern, line)]
        case ["head", "-n", count]:
            return lines[:int(count)]
        case ["tail", "-n", count]:
            return lines[-int(count):]
    raise ValueError(f"unsupported filter in an example: {' '.join(argv)}")


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


def pages() -> list[Path]:
    """README.md and every Markdown page of the documentation site, in a stable order."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a block is not current")
    parser.add_argument("pages", nargs="*", type=Path, help="pages to run (default: README.md and docs/)")
    args = parser.parse_args()
    bad = 0
    for page in [p.resolve() for p in args.pages] or pages():
        text = page.read_text(encoding="utf-8")
        if args.check:
            for command in stale(text):
                print(f"not current: {page.relative_to(ROOT)}: $ {command}", file=sys.stderr)
                bad += 1
        else:
            page.write_text(rewritten(text), encoding="utf-8")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
