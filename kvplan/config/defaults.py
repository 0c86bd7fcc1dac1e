"""Class defaults: the values a config.json may leave out because its config class supplies them.

``save_pretrained`` writes only the keys that differ from the class's defaults, so a llava config's
``text_config`` can omit ``num_hidden_layers`` (LlamaConfig's 32). ``class_defaults.json`` beside this
module records, per ``model_type`` of transformers' ``CONFIG_MAPPING``, the defaults of the keys kvplan
reads and the ``model_type`` of each sub-config; ``tools/class_defaults.py`` regenerates it from an
installed transformers. kvplan reads the JSON (once, when a default is first needed) and never imports
transformers.

The rules, as transformers applies them:

- A key the file names wins, null included (``"sliding_window": null`` in Mistral-7B-Instruct-v0.3
  is no window, not MistralConfig's 4096). A field is resolved through its alias keys; the class
  default is used only when the file names none of them.
- The table holds constants only. A default that ``__init__`` computes from other fields
  (``num_key_value_heads = num_attention_heads``, ``head_dim = hidden_size // heads``, ``layer_types``
  from the layer count and a pattern) is not recorded: kvplan derives those from the file's own values.
- A nested text config takes the defaults of its own ``model_type``, else of its wrapper's default
  text sub-config (llava -> llama). Only the keys the top-level model decides (``WRAPPER_KEYS``) keep
  the wrapper's default.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from kvplan.config.aliases import TEXT_CONFIG_KEYS
from kvplan.json_lines import ABSENT, entry
from kvplan.records import Record

TABLE_PATH = Path(__file__).with_name("class_defaults.json")
SUB_CONFIG_KEYS = (*TEXT_CONFIG_KEYS, "vision_config", "audio_config")
# transformers v5 ties lm_head to the embedding by the top-level config (the wrapper's, for a VLM).
WRAPPER_KEYS = ("tie_word_embeddings",)


class Default(Record, kw_only=False):
    key: str  # the config key whose default it is (or a hand-written row's field name)
    value: Any
    model_type: str  # the config class it comes from


@lru_cache(maxsize=1)
def table() -> dict[str, Any]:
    """The parsed class_defaults.json: transformers_version, skipped, model_types."""
    data: dict[str, Any] = json.loads(TABLE_PATH.read_text(encoding="utf-8"))
    return data


def class_defaults(model_type: object) -> Mapping[str, Any]:
    """The recorded defaults of one config class ({} for a model_type transformers does not know)."""
    return row(model_type) if isinstance(model_type, str) else {}


@lru_cache(maxsize=1)
def _text() -> str:
    return TABLE_PATH.read_text(encoding="utf-8")


@lru_cache(maxsize=1024)
def row(model_type: str) -> Mapping[str, Any]:
    """One model_type's row, parsed alone: tools/class_defaults.py writes a row a line, and a run reads one or two of
    the 800 (parsing the whole table was a fiftieth of `kvplan capacity`'s start-up). {} for a type it lacks."""
    text = _text()
    rows_from = text.find('\n  "model_types": {')
    found = entry(text, model_type, indent="    ", start=rows_from) if rows_from >= 0 else ABSENT
    return {} if found is ABSENT else dict(found)


def sub_config_type(model_type: object, key: str) -> str | None:
    """The model_type of a wrapper's default sub-config (llava, "text_config" -> "llama")."""
    found = class_defaults(model_type).get(key)
    return found if isinstance(found, str) else None


def text_defaults(model_type: object) -> tuple[str, Mapping[str, Any]]:
    """(class, defaults) for the language-model fields of a config of this model_type: for a wrapper, its
    text sub-config class's, with the wrapper's WRAPPER_KEYS over them (its other keys describe the
    wrapper, not the language model: musicflamingo's head_dim is the audio tower's)."""
    own = class_defaults(model_type)
    for key in TEXT_CONFIG_KEYS:
        sub = sub_config_type(model_type, key)
        if sub is not None:
            top = {k: own[k] for k in WRAPPER_KEYS if k in own}
            return sub, {**class_defaults(sub), **top}
    return str(model_type), own


def is_named(fields: Mapping[str, Any], key: str) -> bool:
    """Whether the file names `key` (an "a.b" path for nested keys), even as null."""
    node: Any = fields
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


def omitted_default(fields: Mapping[str, Any], keys: Sequence[str], *, name: str = "",
                    hand: Mapping[str, Mapping[str, Any]] | None = None) -> Default | None:
    """The default of a field none of whose alias `keys` the file names: a hand-written row for `name`
    under fields' model_type (classes the table cannot express), else the first of `keys` its class sets."""
    if any(is_named(fields, key) for key in keys):
        return None
    model_type = fields.get("model_type")
    row = (hand or {}).get(str(model_type), {})
    if name in row:
        return Default(name, row[name], str(model_type))
    source, defaults = text_defaults(model_type)
    for key in keys:
        if defaults.get(key) is not None:
            return Default(key, defaults[key], source)
    return None
