"""Tensor tables: every tensor a checkpoint stores, recorded from transformers' meta-device build of a config.

``tools/weight_tensors.py`` writes one JSON file per config into ``tables/`` (the bundled configs and one
default config of each transformers model_type kvplan sizes) and ``tables/index.json``, which maps a config's
*shape signature* to its file. kvplan reads these files as JSON; it never imports transformers.

A table row is ``[pattern, role, tp, shape, count, layers, linear, dtype]``:
- ``pattern``: the tensor's name, ``{i}`` for the decoder-layer index, ``{n}`` for any other index (vision
  blocks, per-expert modules), e.g. ``model.layers.{i}.mlp.experts.gate_up_proj``;
- ``role`` and ``tp``: ``kvplan.planning.weights.roles``;
- ``shape``: (out, in) for matrices whatever the storage order, one expert's for a stack of experts;
- ``count``: tensors of that shape per layer (experts stacked, blocks of a tower);
- ``layers``: the decoder layers holding it, as ranges ("0-2,5"), or "" outside the decoder layers;
- ``linear``: 1 for a matrix weight that weight quantization applies to (nn.Linear weights, expert stacks);
- ``dtype``: null for the model dtype, else the dtype the class keeps it in ("float32").

The shape signature is the config with its class defaults filled in (the keys kvplan reads, as
``kvplan.config.defaults`` records them) and without the keys that never change a tensor's shape (dtype,
quantization, versions): a config that leaves out a default finds the same table, a config whose shapes
could differ does not.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

from kvplan.config.defaults import SUB_CONFIG_KEYS, class_defaults, is_named, sub_config_type
from kvplan.json_lines import ABSENT, entry
from kvplan.records import Record

TABLES_DIR = Path(__file__).with_name("tables")
# Keys that name no shape: the storage dtype and quantization (applied by kvplan's formats), provenance.
UNSHAPED_KEYS = frozenset({"_name_or_path", "transformers_version", "torch_dtype", "dtype", "quantization_config",
                           "compression_config", "auto_map", "use_cache", "_commit_hash"})


class Row(Record, kw_only=False):
    """One row of a weight table: a tensor pattern, its role, how TP splits it, its shape and count."""

    pattern: str
    role: str
    tp: str
    shape: tuple[int, ...]
    count: int
    layers: tuple[int, ...]  # () outside the decoder layers
    linear: bool
    dtype: str | None


class Table(Record, kw_only=False):
    """The weight table of one model class: its tensors as rows, built on the meta device."""

    name: str  # the bundled id or "type:<model_type>" the table was built from
    model_class: str  # the transformers class built on the meta device
    num_layers: int
    tied: bool  # lm_head shares the embedding's tensor
    rows: tuple[Row, ...]
    notes: tuple[str, ...] = ()  # what the build could not include (a remote-code wrapper's tower, ...)
    exact: bool = True  # False: built from a stand-in class (a remote-code wrapper's text model)


def _section_type(raw: Mapping[str, Any], section: str | None, wrapper: str | None = None) -> object:
    if section is None:
        return raw.get("model_type")
    sub = raw.get(section)
    return sub.get("model_type") if isinstance(sub, dict) and sub.get("model_type") else \
        sub_config_type(wrapper or raw.get("model_type"), section)


def _set(doc: dict[str, Any], key: str, value: Any) -> None:
    *path, leaf = key.split(".")
    node = doc
    for part in path:
        child = node.get(part)
        if not isinstance(child, dict):
            return
        node = child
    node[leaf] = value


def _filled(doc: dict[str, Any], model_type: object) -> dict[str, Any]:
    out = {k: v for k, v in doc.items() if k not in UNSHAPED_KEYS}
    for key, value in class_defaults(model_type).items():
        if key not in SUB_CONFIG_KEYS and not is_named(out, key):
            _set(out, key, value)
    return out


def canonical(raw: Mapping[str, Any], wrapper: str | None = None) -> dict[str, Any]:
    """The config as its class sees it, without the keys that name no shape. `wrapper`: the multimodal
    wrapper's model_type, whose default sub-config classes fill a vision/audio config that names none
    (ModelConfig.raw carries the text model's model_type, not the wrapper's)."""
    out = _filled(dict(raw), _section_type(raw, None))
    for section in SUB_CONFIG_KEYS:
        if isinstance(raw.get(section), dict):
            out[section] = _filled(dict(raw[section]), _section_type(raw, section, wrapper))
    return out


@lru_cache(maxsize=1)
def _sha256() -> Any:
    """CPython's builtin SHA-256, without hashlib: hashlib loads OpenSSL (_hashlib) and _blake2 too, ~2 ms of a
    capacity run's start-up for one digest. The same digest either way."""
    for name in ("_sha256", "_sha2"):  # CPython up to 3.11; 3.12 on
        try:
            return importlib.import_module(name).sha256
        except ImportError:
            continue
    import hashlib

    return hashlib.sha256


def signature(raw: Mapping[str, Any], wrapper: str | None = None) -> str:
    text = json.dumps(canonical(raw, wrapper), sort_keys=True, default=str, separators=(",", ":"))
    return str(_sha256()(text.encode()).hexdigest()[:20])


def _untyped_sections(raw: Mapping[str, Any]) -> bool:
    return any(isinstance(raw.get(s), dict) and not raw[s].get("model_type") for s in SUB_CONFIG_KEYS)


@lru_cache(maxsize=1)
def index() -> dict[str, Any]:
    """tables/index.json: {"transformers_version", "tables": {signature: file}, "wrappers": [model_type],
    "skipped": {name: why}}."""
    path = TABLES_DIR / "index.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    return data


def parse_layers(text: str) -> tuple[int, ...]:
    """"0-2,5" -> (0, 1, 2, 5)."""
    out: list[int] = []
    for part in filter(None, text.split(",")):
        first, _, last = part.partition("-")
        out += range(int(first), int(last or first) + 1)
    return tuple(out)


def format_layers(layers: tuple[int, ...] | list[int]) -> str:
    """(0, 1, 2, 5) -> "0-2,5"."""
    runs: list[list[int]] = []
    for i in sorted(layers):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    return ",".join(f"{a}-{b}" if b > a else str(a) for a, b in runs)


def decode(doc: Mapping[str, Any]) -> Table:
    rows = tuple(Row(p, role, tp, tuple(shape), count, parse_layers(layers), bool(linear), dtype)
                 for p, role, tp, shape, count, layers, linear, dtype in doc["tensors"])
    return Table(name=doc["name"], model_class=doc["class"], num_layers=doc["num_layers"], tied=doc["tied"],
                 rows=rows, notes=tuple(doc.get("notes", ())), exact=bool(doc.get("exact", True)))


def group_rows(items: list[tuple[str, str, str, tuple[int, ...], int, int | None, bool, str | None]]) -> list[Row]:
    """Tensors (pattern, role, tp, shape, count, layer, linear, dtype) -> rows: alike tensors of a layer summed
    into one count, alike layers into one row with their indices, in the order first seen."""
    per_layer: dict[tuple[Any, ...], int] = {}
    for pattern, role, tp, shape, count, layer, linear, dtype in items:
        key = (pattern, role, tp, shape, linear, dtype, layer)
        per_layer[key] = per_layer.get(key, 0) + count
    grouped: dict[tuple[Any, ...], list[int]] = {}
    for (pattern, role, tp, shape, linear, dtype, layer), count in per_layer.items():
        grouped.setdefault((pattern, role, tp, shape, count, linear, dtype), []).extend(
            [] if layer is None else [layer])
    return [Row(p, role, tp, shape, count, tuple(layers), linear, dtype)
            for (p, role, tp, shape, count, linear, dtype), layers in grouped.items()]


@lru_cache(maxsize=32)
def load_table(file: str) -> Table:
    return decode(json.loads((TABLES_DIR / file).read_text(encoding="utf-8")))


@lru_cache(maxsize=1)
def _index_text() -> str:
    path = TABLES_DIR / "index.json"
    return path.read_text(encoding="utf-8") if path.is_file() else ""


def table_file(signature: str) -> str | None:
    """``index()["tables"].get(signature)``, read off the text: tools/weight_tensors.py writes the index with one
    table a line, and a run looks up one or two of the ~330 (parsing it all was a millisecond of a capacity run)."""
    text = _index_text()
    tables_from = text.find('\n "tables": {')
    if tables_from < 0:
        return None
    found = entry(text, signature, indent="  ", start=tables_from, end=text.find("\n }", tables_from))  # its end
    return None if found is ABSENT else str(found)


def table_for(raw: Mapping[str, Any]) -> Table | None:
    """The recorded table of a config with this shape signature, else None. A sub-config without a
    model_type is tried with the default sub-configs of each wrapper the tables were recorded under."""
    file = table_file(signature(raw))
    wrappers = index().get("wrappers", []) if file is None and _untyped_sections(raw) else []
    for wrapper in wrappers:
        file = table_file(signature(raw, wrapper))
        if file:
            break
    return load_table(file) if file else None
