"""The bundled configs, normalized ahead of time: `kvplan size` on a bundled id reads one small JSON file
and builds the ModelConfig from it, without importing pydantic or running the normalization.

Each bundled config.json has a file in `normalized/` (`org--name.json`) written by
`python tools/normalized_configs.py`: the config's size and CRC-32 and the ModelConfig that
`kvplan.config.hf.normalize` made of it (specs as {"type": ..., fields}, runs of equal layer specs as
[count, spec], the raw fields beside). A file whose config changed since, or that is missing, is not
used: the config is parsed and validated as any other. tests/config/test_normalized_index.py checks
that every file equals a fresh normalization, so a change to the loaders that is not regenerated fails CI.
"""

from __future__ import annotations

import dataclasses
import json
import zlib
from pathlib import Path
from typing import Any

from kvplan import specs
from kvplan.config.model import ModelConfig

FORMAT = 1
INDEX_DIR = Path(__file__).resolve().parent / "normalized"
_SPEC_TYPES = {cls.__name__: cls for cls in (specs.FullAttn, specs.SlidingAttn, specs.ChunkedAttn, specs.CrossAttn,
                                             specs.MLAAttn, specs.IndexerCache, specs.LinearState, specs.NoKV,
                                             specs.Composite, specs.CompressedMLA, specs.SlidingMLA,
                                             specs.CompressorState)}


def index_file(model_id: str) -> Path:
    return INDEX_DIR / (model_id.replace("/", "--") + ".json")


def fingerprint(data: bytes) -> list[int]:
    return [len(data), zlib.crc32(data)]


def normalized(path: Path, data: bytes, model_id: str) -> ModelConfig | None:
    """The pre-normalized ModelConfig of a bundled config whose bytes are `data`; None if it has none or
    the config changed since it was written."""
    try:
        doc = json.loads(index_file(model_id).read_bytes())
    except (OSError, ValueError):
        return None
    if doc.get("format") != FORMAT or doc.get("config") != fingerprint(data):
        return None
    fields = {k: _decode(v) for k, v in doc["model"].items()}
    fields["layer_specs"] = tuple(spec for count, spec in fields["layer_specs"] for _ in range(count))
    return ModelConfig(**fields, source=str(path), raw=doc["raw"])


def encode(model: ModelConfig, data: bytes) -> dict[str, Any]:
    """The index document of `model`, normalized from a config whose bytes are `data`."""
    fields = {f.name: getattr(model, f.name) for f in dataclasses.fields(model) if f.name not in ("source", "raw")}
    runs: list[list[Any]] = []
    for spec in model.layer_specs:
        if runs and runs[-1][1] == spec:
            runs[-1][0] += 1
        else:
            runs.append([1, spec])
    fields["layer_specs"] = runs
    return {"format": FORMAT, "config": fingerprint(data), "model": _encode(fields), "raw": model.raw}


def _encode(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"type": type(value).__name__, **{f.name: _encode(getattr(value, f.name))
                                                 for f in dataclasses.fields(value)}}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {k: _encode(v) for k, v in value.items()}
    return value


def _decode(value: Any) -> Any:
    """Lists back to tuples (every sequence in a ModelConfig is one), typed dicts back to specs."""
    if isinstance(value, list):
        return tuple(_decode(v) for v in value)
    if isinstance(value, dict) and "type" in value:
        cls = _SPEC_TYPES[value["type"]]
        return cls(**{k: _decode(v) for k, v in value.items() if k != "type"})
    return value
