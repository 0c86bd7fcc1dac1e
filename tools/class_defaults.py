"""Regenerate kvplan/config/class_defaults.json from the installed transformers (a developer script).

    python tools/class_defaults.py           # write the table
    python tools/class_defaults.py --check   # exit 1 if the shipped table is not what this transformers gives

A config.json may leave out any key whose value equals its config class's default (``save_pretrained``
writes only the differences), so kvplan needs those defaults; it reads them from the JSON table this
script writes and never imports transformers itself.

What is recorded, per ``model_type`` of ``transformers.CONFIG_MAPPING``: the class's no-argument instance,
``to_dict()``, restricted to the keys kvplan reads (``read_keys``), None values left out, and the
``model_type`` of each sub-config (``text_config``, ``vision_config``, ...). Only constants: a key whose
default the class computes in ``__init__`` from other fields (``num_key_value_heads = num_attention_heads``,
``head_dim = hidden_size // num_attention_heads``, ``layer_types`` from the layer count) is left out,
because kvplan derives those itself. A key counts as derived when changing any other recorded scalar
key (one at a time, from the defaults) changes its value (``derived_keys``).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TABLE = ROOT / "kvplan" / "config" / "class_defaults.json"
sys.path.insert(0, str(ROOT))  # this checkout's kvplan, whatever the working directory

from kvplan.config.aliases import FIELD_ALIASES, WEIGHT_FIELDS  # noqa: E402
from kvplan.config.defaults import SUB_CONFIG_KEYS  # noqa: E402
from kvplan.planning.weights.parts import TRAIT_KEYS  # noqa: E402
from kvplan.planning.weights.vision import VISION_FIELDS  # noqa: E402


def read_keys() -> tuple[str, ...]:
    """Every config key kvplan reads: the alias tables (nested "a.b" paths included), the boolean keys
    of the weight traits, the vision-tower fields."""
    keys = {k for table in (FIELD_ALIASES, WEIGHT_FIELDS) for aliases in table.values() for k in aliases}
    return tuple(sorted(keys | set(TRAIT_KEYS) | set(VISION_FIELDS)))


def lookup(doc: dict[str, Any], key: str) -> Any:
    node: Any = doc
    for part in key.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    return node


def nested_kwargs(key: str, value: Any) -> dict[str, Any]:
    """"attn_config.kv_n_heads", 2 -> {"attn_config": {"kv_n_heads": 2}}."""
    head, _, rest = key.partition(".")
    return {head: nested_kwargs(rest, value) if rest else value}


def recorded(doc: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """The keys kvplan reads that the class sets (None left out), and its sub-configs' model_types."""
    row = {k: v for k in keys if (v := lookup(doc, k)) is not None}
    for key in SUB_CONFIG_KEYS:
        sub = doc.get(key)
        if isinstance(sub, dict) and isinstance(sub.get("model_type"), str):
            row[key] = sub["model_type"]
    return row


def instance(cls: Any, kwargs: dict[str, Any]) -> dict[str, Any] | str:
    """cls(**kwargs).to_dict(), or why the class refused the arguments."""
    try:
        doc: dict[str, Any] = cls(**kwargs).to_dict()
    except Exception as exc:  # any refusal: validation, assertions, a missing sub-config class
        why = str(exc).strip().splitlines()[-1].strip() if str(exc).strip() else ""
        return f"{type(exc).__name__}: {why[:100]}" if why else type(exc).__name__
    return doc


def other_values(value: Any) -> Iterator[Any]:
    """Values to move a scalar default to, tried in order until the class accepts one."""
    if isinstance(value, bool):
        yield not value
    elif isinstance(value, (int, float)):
        yield from (value * 2, value + 1) if value else (1, 2)


def derived_keys(cls: Any, row: dict[str, Any], keys: tuple[str, ...]) -> set[str]:
    """Recorded keys whose value moves when another scalar key is changed: computed in __init__."""
    derived: set[str] = set()
    for driver, value in row.items():
        if driver in SUB_CONFIG_KEYS:
            continue
        for other in other_values(value):
            doc = instance(cls, nested_kwargs(driver, other))
            if isinstance(doc, dict):
                moved = recorded(doc, keys)
                derived |= {k for k in row if k != driver and moved.get(k) != row[k]}
                break
    return derived


def class_row(cls: Any, keys: tuple[str, ...]) -> dict[str, Any] | str:
    """The constant defaults of one config class, or why it cannot be built without arguments."""
    doc = instance(cls, {})
    if isinstance(doc, str):
        return doc
    row = recorded(doc, keys)
    derived = derived_keys(cls, row, keys)
    return {k: v for k, v in sorted(row.items()) if k not in derived}


def build_table() -> dict[str, Any]:
    """{"transformers_version", "skipped": {model_type: why}, "model_types": {model_type: row}}."""
    import transformers
    from transformers import CONFIG_MAPPING

    transformers.logging.set_verbosity_error()
    logging.disable(logging.WARNING)
    keys = read_keys()
    rows: dict[str, dict[str, Any]] = {}
    skipped: dict[str, str] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for model_type in sorted(CONFIG_MAPPING.keys()):
            row = class_row(CONFIG_MAPPING[model_type], keys)
            if isinstance(row, str):
                skipped[model_type] = row
            elif row:
                rows[model_type] = row
    logging.disable(logging.NOTSET)
    return {"transformers_version": transformers.__version__, "skipped": skipped, "model_types": rows}


def render(table: dict[str, Any]) -> str:
    """Stable JSON text, one line per model_type (small diffs when transformers changes a default; kvplan parses
    the one line it needs, kvplan.config.defaults.row)."""
    lines = [f"  {json.dumps(name)}: {json.dumps(row, sort_keys=True)}" for name, row in table["model_types"].items()]
    head = {k: v for k, v in table.items() if k != "model_types"}
    body = json.dumps(head, indent=2, sort_keys=True)[:-2]
    return body + ',\n  "model_types": {\n  ' + ",\n  ".join(lines) + "\n  }\n}\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped table instead of writing it")
    args = parser.parse_args(argv)
    text = render(build_table())
    if args.check:
        same = TABLE.is_file() and TABLE.read_text() == text
        print(f"{TABLE.relative_to(ROOT)} is {'current' if same else 'out of date: run python tools/class_defaults.py'}")
        return 0 if same else 1
    TABLE.write_text(text)
    table = json.loads(text)
    print(f"wrote {TABLE.relative_to(ROOT)}: {len(table['model_types'])} model types, "
          f"{sum(len(r) for r in table['model_types'].values())} values, transformers {table['transformers_version']}; "
          f"skipped {len(table['skipped'])}: {', '.join(table['skipped'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
