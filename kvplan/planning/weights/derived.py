"""A config's tensors from its model_type's own table at the config's sizes, for a config no table matches.

``tables/scaling.json`` (``tools/weight_scaling.py``) holds, per text-only model_type whose default table has the
same tensors in every decoder layer, how each config key acts on the tensors, measured by rebuilding the class with
the key changed: ``free`` keys change no tensor, ``sizes`` change dimensions as monomials (per row and dimension,
``{key: exponent}``), ``layers`` sets the decoder-layer count, ``computed`` keys take a default the class derives
from other keys (``head_dim`` = ``hidden_size / num_attention_heads``). A config of that model_type gets the type's
table with every dimension ``default × Π (value / default)^exponent``, when:

- it has no vision/audio/text sub-config and names the type's class (or none) in ``architectures``;
- every key it sets is free, a size, the layer count, or equals the default; a key the default config does not
  list only when the recipe shows it free (``extra_free``: a class may read such a key by getattr, Qwen3-MoE's
  ``head_dim``); a computed key it leaves out follows its sources as a monomial;
- every derived dimension is a positive integer.

Otherwise there is no derived table (None) and the caller falls back to kvplan's formula, an estimate.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from fractions import Fraction
from functools import lru_cache
from typing import Any

from kvplan.config.defaults import SUB_CONFIG_KEYS
from kvplan.planning.weights.tables import TABLES_DIR, UNSHAPED_KEYS, Row, Table, load_table

IGNORED_KEYS = frozenset({"model_type", "architectures", "use_cache", "return_dict", "output_hidden_states",
                          "output_attentions", "id2label", "label2id", "problem_type", "task_specific_params",
                          "finetuning_task", "tokenizer_class", "prefix", *UNSHAPED_KEYS})


@lru_cache(maxsize=1)
def scaling() -> dict[str, Any]:
    """tables/scaling.json: {"transformers_version", "types": {model_type: recipe}} ({} when absent)."""
    path = TABLES_DIR / "scaling.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    return data


def _file(name: str) -> str:
    return name.replace("type:", "_type__").replace("/", "__") + ".json"


def _values(raw: Mapping[str, Any], recipe: dict[str, Any]) -> dict[str, Any] | None:
    """The config's value of every size key and of the layer count, or None when it differs elsewhere."""
    defaults, sizes, aliases = recipe["defaults"], {recipe["layers"], *recipe["sizes"]}, recipe["aliases"]
    values: dict[str, Any] = {}
    for name, value in raw.items():
        key = aliases.get(name, name)
        if key in IGNORED_KEYS or key in recipe["free"] or key in recipe["extra_free"]:
            continue
        if key not in defaults:
            return None  # a key the class may read by getattr (Qwen3-MoE's head_dim), not shown free
        if key in sizes:
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                return None
            values[key] = value
        elif value != defaults[key]:
            return None  # a key that changes which tensors exist, or by a rule that is not a size
    for key in sizes - values.keys():
        found = _computed(key, values, recipe)
        if found is None:
            return None
        values[key] = found
    return values


def _computed(key: str, values: dict[str, Any], recipe: dict[str, Any]) -> Any:
    """A size key the config leaves out: its default, moved by the sources the class computes it from."""
    default, sources = recipe["defaults"][key], recipe["computed"].get(key, {})
    moved = {s: e for s, e in sources.items() if s in values and values[s] != recipe["defaults"][s]}
    if not moved:
        return default
    if any(e is None for e in moved.values()) or not isinstance(default, int):
        return None
    found = Fraction(default)
    for source, e in moved.items():
        found *= Fraction(values[source], recipe["defaults"][source]) ** e
    return int(found) if found.denominator == 1 and found > 0 else None


def _scaled(row: Row, exponents: list[dict[str, int]], values: dict[str, Any],
            defaults: dict[str, Any]) -> Row | None:
    dims = []
    for base, factors in zip((*row.shape, row.count), exponents, strict=True):
        found = Fraction(base)
        for key, e in factors.items():
            found *= Fraction(values[key], defaults[key]) ** e
        if found.denominator != 1 or found < 1:
            return None
        dims.append(int(found))
    return replace(row, shape=tuple(dims[:-1]), count=dims[-1])


def derived_table(raw: Mapping[str, Any]) -> Table | None:
    """The model_type's table at this config's sizes, or None (no recipe, or the config is not one of its sizes)."""
    recipe = scaling().get("types", {}).get(raw.get("model_type"))
    if recipe is None or any(isinstance(raw.get(k), dict) for k in SUB_CONFIG_KEYS):
        return None
    table = load_table(_file(recipe["table"]))
    architectures = raw.get("architectures") or [table.model_class]
    values = _values(raw, recipe) if architectures[0] == table.model_class else None
    if values is None:
        return None
    layers = tuple(range(values[recipe["layers"]]))
    rows = [_scaled(r, e, values, recipe["defaults"]) for r, e in zip(table.rows, recipe["exponents"], strict=True)]
    if any(r is None for r in rows):
        return None
    return replace(table, name=f"{table.name} at this config's sizes", num_layers=len(layers),
                   rows=tuple(replace(r, layers=layers if r.layers else ()) for r in rows if r is not None),
                   notes=(*table.notes, f"tensors of {table.name}'s table ({table.model_class} at its default "
                          "config) scaled to this config's sizes, each size's effect measured by rebuilding the "
                          "class with it changed (tools/weight_scaling.py)"))
