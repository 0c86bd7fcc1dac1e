"""Write docs/reference/schemas/COMMAND.json: the JSON Schema of each command's --json (what `kvplan schema COMMAND`
prints, generated from the typed payloads by kvplan.render.schema).

    python tools/json_schemas.py            # write them
    python tools/json_schemas.py --check    # exit 1 naming each schema that is not current
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from kvplan.render.schema import COMMANDS, command_schema  # noqa: E402

OUT = ROOT / "docs" / "reference" / "schemas"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true", help="name each schema that is not current; write none")
    args = parser.parse_args()
    stale = []
    for command in COMMANDS:
        path, text = OUT / f"{command}.json", json.dumps(command_schema(command), indent=2) + "\n"
        if path.exists() and path.read_text() == text:
            continue
        stale.append(str(path.relative_to(ROOT)))
        if not args.check:
            OUT.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    print(("not current: " if args.check else "wrote: ") + (", ".join(stale) or "nothing"))
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
