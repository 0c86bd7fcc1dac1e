"""Hugging Face config.json (or Meta params.json) -> ModelConfig.

Three steps, each a small function: unwrap the language model's fields (`text_config`...),
resolve the alias table into canonical keys, validate them with pydantic (lenient about unknown
keys, strict about the types of the ones kvplan uses), then derive what the config leaves
implicit (head_dim, KV heads of MQA families, per-layer kinds). Reading never executes code.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from kvplan.config.aliases import DERIVED_FROM, FAMILY_DEFAULTS, FIELD_ALIASES, TEXT_CONFIG_KEYS
from kvplan.config.build import (
    coarse_kinds,
    family_notes,
    implied_values,
    kinds_and_specs,
    mla_spec,
    nas_kv_heads,
    native_kv_dtype,
    refuse_unmodelled,
    unknown_type_note,
)
from kvplan.config.defaults import WRAPPER_KEYS, class_defaults, is_named, omitted_default
from kvplan.config.geometry import Geometry, sliding_window
from kvplan.config.model import ModelConfig
from kvplan.config.schema import HFConfig
from kvplan.dtypes import canonical_dtype
from kvplan.errors import ConfigError, UnreadableConfig

MAX_CONFIG_BYTES = 64 * 1024**2
QUANT_SIDECAR = "hf_quant_config.json"
MAX_CACHED_BYTES = 256 * 1024  # a parsed config is kept per (bytes, path, id) below this size


def read_bytes(path: Path) -> bytes:
    """The bytes of a config file, turning every failure into one ConfigError line."""
    try:
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise ConfigError(f"{path}: larger than {MAX_CONFIG_BYTES // 1024**2} MiB; not a model config")
        return path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None


def parse_json(data: bytes, source: str) -> dict[str, Any]:
    """A JSON object from a file's bytes, or one ConfigError line."""
    try:
        doc = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise UnreadableConfig(f"{source} is not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset "
                               f"{exc.start}): not a config.json") from None
    except (ValueError, RecursionError) as exc:
        raise UnreadableConfig(f"{source} is not valid JSON: {str(exc)[:120]}") from None
    if not isinstance(doc, dict):
        raise UnreadableConfig(f"{source}: expected a JSON object, got {type(doc).__name__}")
    return doc


def read_json(path: Path) -> dict[str, Any]:
    """Read a JSON object from `path`, turning every failure into one ConfigError line."""
    return parse_json(read_bytes(path), str(path))


def language_model_fields(raw: dict[str, Any]) -> dict[str, Any]:
    """The text model's fields: a nested text_config/llm_config wins, the wrapper fills gaps, and a
    key the wrapper decides (WRAPPER_KEYS) that neither names takes the wrapper class's default (the
    merged fields carry the text class's model_type, whose defaults are not the wrapper's)."""
    for key in TEXT_CONFIG_KEYS:
        nested = raw.get(key)
        if isinstance(nested, dict):
            own = class_defaults(raw.get("model_type"))
            decided = {k: own[k] for k in WRAPPER_KEYS if k in own and not is_named(raw, k) and k not in nested}
            merged = {**decided, **{k: v for k, v in raw.items() if k not in TEXT_CONFIG_KEYS}, **nested}
            if nested.get("architectures") is None and raw.get("architectures") is not None:
                merged["architectures"] = raw["architectures"]  # the class vLLM builds is the wrapper's (mllama)
            return merged
    return raw


def _lookup(fields: dict[str, Any], key: str) -> Any:
    node: Any = fields
    for part in key.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(part)
    return node


def canonical_fields(fields: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """Alias table -> {canonical: value} and {canonical: the config key it came from}."""
    values: dict[str, Any] = {"model_type": fields.get("model_type")}
    origin: dict[str, str] = {"model_type": "model_type"}
    for name, keys in FIELD_ALIASES.items():
        present = [(k, v) for k in keys if (v := _lookup(fields, k)) is not None]
        if name == "max_model_len":  # vLLM: the smallest of the length fields present
            present = sorted((p for p in present if isinstance(p[1], int) and not isinstance(p[1], bool)),
                             key=lambda p: p[1])
        if present:
            origin[name], values[name] = present[0]
    for name, keys in FIELD_ALIASES.items():  # keys the file leaves out: their config class's defaults
        if name in origin or any(is_named(fields, k) for k in DERIVED_FROM.get(name, ())):
            continue
        if found := omitted_default(fields, keys, name=name, hand=FAMILY_DEFAULTS):
            values[name], origin[name] = found.value, f"{found.key} (default of {found.model_type})"
    return values, origin


def validate(values: dict[str, Any], origin: dict[str, str], source: str) -> HFConfig:
    try:
        return HFConfig.model_validate(values)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0]) if err["loc"] else "?"
        key = origin.get(field, FIELD_ALIASES.get(field, (field,))[0])
        got = f", got {err['input']!r}"[:60] if field in origin else ""
        raise ConfigError(f"{source}: config field '{key}': {err['msg'].lower()}{got}") from None


def model_dtype(cfg: HFConfig) -> tuple[str, tuple[str, ...]]:
    """vLLM's dtype=auto: the checkpoint dtype, with fp32 (and unknown/absent) served in bf16."""
    name = (cfg.dtype or "").removeprefix("torch.")
    canonical = canonical_dtype(name) if name else None
    if canonical in ("bf16", "fp16"):
        return canonical, ()
    if not name:
        return "bf16", ("config has no torch_dtype; assuming bf16",)
    return "bf16", (f"checkpoint dtype {name} is served as bf16 (dtype=auto)",)


def total_kv_heads(cfg: HFConfig, origin: dict[str, str]) -> int:
    """vLLM get_total_num_kv_heads: MQA flags first, NAS blocks, then the alias list, else MHA."""
    if cfg.multi_query and not cfg.new_decoder_architecture:
        return 1  # Falcon/BigCode MQA: a defaulted num_kv_heads would be the query-head count
    if origin.get("num_kv_heads") == "multi_query_group_num" and not cfg.multi_query_attention:
        return cfg.num_attention_heads  # ChatGLM without multi-query attention
    return cfg.num_kv_heads or nas_kv_heads(cfg) or cfg.num_attention_heads


def default_notes(origin: dict[str, str], values: dict[str, Any]) -> tuple[str, ...]:
    """A note for each KV field the file leaves out and its config class's default fills in (a default that
    turns something off, False or 0, changes nothing and is not named)."""
    notes = []
    for name, how in origin.items():
        key, found, model_type = how.partition(" (default of ")
        if found and values.get(name):
            notes.append(f"{key} = {values[name]!r} is not in the config: the default of model_type "
                         f"{model_type.rstrip(')')}'s config class in transformers")
    return tuple(notes)


QUANTIZED_NAMES = ("NVFP4", "FP8", "FP4", "AWQ", "GPTQ", "INT4", "INT8", "W4A16", "W8A8", "MXFP4")


def unstated_quantization(raw: dict[str, Any], model_id: str) -> tuple[str, ...]:
    """A note when the repo's name says its weights are quantized but its config carries no
    quantization_config (NVIDIA's older ModelOpt repos keep it in hf_quant_config.json beside config.json)."""
    if "quantization_config" in raw or "compression_config" in raw:
        return ()
    said = [tag for tag in QUANTIZED_NAMES if tag in model_id.upper().replace("_", "-").split("-")]
    if not said:
        return ()
    return (f"the name says {said[0]} but the config has no quantization_config and no {QUANT_SIDECAR} was found "
            f"beside it: weights are counted in the model dtype; give weights_dtype (--weights-dtype) to count "
            f"them as the checkpoint stores them",)


def _head_dim(cfg: HFConfig, source: str) -> int:
    heads = cfg.num_attention_heads
    head_dim = cfg.head_dim or (cfg.hidden_size or 0) // heads  # head_dim null or 0 -> hidden // heads
    if head_dim <= 0:
        why = (f"hidden_size {cfg.hidden_size} is smaller than num_attention_heads {heads}" if cfg.hidden_size
               else "no hidden_size to derive it from")
        raise ConfigError(f"{source}: no head_dim, and {why}")
    return head_dim


def _kv_heads(cfg: HFConfig, origin: dict[str, str], source: str, is_mla: bool) -> int:
    if cfg.num_kv_heads == 0:  # `or heads` below would silently read 0 as MHA
        raise ConfigError(f"{source}: config field '{origin['num_kv_heads']}' is 0; "
                          "expected at least 1 KV head (or null for one per attention head)")
    kv_heads, heads = total_kv_heads(cfg, origin), cfg.num_attention_heads
    if not is_mla and (kv_heads > heads or heads % kv_heads):
        raise ConfigError(f"{source}: {kv_heads} KV heads do not divide {heads} attention heads")
    if is_mla and not cfg.qk_rope_head_dim:
        raise ConfigError(f"{source}: kv_lora_rank is set (MLA) but qk_rope_head_dim is missing")
    return kv_heads


def normalize(raw: dict[str, Any], *, model_id: str, source: str) -> ModelConfig:
    """A config document -> the normalized, validated ModelConfig."""
    fields = language_model_fields(raw)
    values, origin = canonical_fields(fields)
    values = implied_values(values, origin, fields)
    refuse_unmodelled(values, origin, source, fields.get("architectures"))
    cfg = validate(values, origin, source)  # a missing layer or head count is named here first
    unknown = unknown_type_note(values, origin, source, fields.get("architectures"))
    head_dim = _head_dim(cfg, source)
    is_mla = cfg.kv_lora_rank is not None and cfg.kv_lora_rank > 0
    kv_heads = _kv_heads(cfg, origin, source, is_mla)
    v_head_dim = head_dim if is_mla else (cfg.v_head_dim or head_dim)
    geo = Geometry(num_attention_heads=cfg.num_attention_heads, num_kv_heads=kv_heads, head_dim=head_dim,
                   v_head_dim=v_head_dim, mla=mla_spec(cfg) if is_mla else None, state=None)
    kinds, specs, state = kinds_and_specs(cfg, fields, geo, source)
    dtype, notes = model_dtype(cfg)
    notes += default_notes(origin, values)
    notes += unstated_quantization(raw, model_id)
    if cfg.head_dim == 0:  # vLLM's get_head_size would take the 0 and fail; transformers' `or` reads it as unset
        notes += (f"head_dim is 0 in the config: read as hidden_size // num_attention_heads = {head_dim} (vLLM "
                  "would take the 0 and fail to build the model)",)
    return ModelConfig(
        model_id=model_id, source=source, model_type=cfg.model_type, num_layers=cfg.num_layers,
        num_attention_heads=cfg.num_attention_heads, num_kv_heads=kv_heads, head_dim=head_dim, v_head_dim=v_head_dim,
        hidden_size=cfg.hidden_size or cfg.num_attention_heads * head_dim, layer_kinds=coarse_kinds(kinds),
        layer_specs=specs, sliding_window=sliding_window(cfg) if "sliding" in kinds else None,
        attention_chunk_size=cfg.attention_chunk_size if "chunked" in kinds else None,
        kv_lora_rank=cfg.kv_lora_rank if is_mla else None,
        qk_rope_head_dim=cfg.qk_rope_head_dim if is_mla else None,
        qk_nope_head_dim=cfg.qk_nope_head_dim if is_mla else None,
        mla_v_head_dim=cfg.v_head_dim if is_mla else None, linear=state,
        dtype=dtype, kv_cache_dtype=native_kv_dtype(cfg, fields, is_mla), max_model_len=cfg.max_model_len or None,
        num_nextn_predict_layers=cfg.num_nextn_predict_layers or 0,
        notes=(*notes, *family_notes(cfg), *((unknown,) if unknown else ())), raw=fields,
    )


def load_file(path: Path, model_id: str | None = None) -> ModelConfig:
    """Read and normalize one config file (small files are parsed once per content, with the
    hf_quant_config.json beside it)."""
    data = read_bytes(path)
    sidecar = path.with_name(QUANT_SIDECAR)
    quant = read_bytes(sidecar) if path.name == "config.json" and sidecar.is_file() else b""
    parse = _parse_cached if len(data) <= MAX_CACHED_BYTES else _parse
    return parse(data, quant, path, model_id)


def _parse(data: bytes, quant: bytes, path: Path, model_id: str | None) -> ModelConfig:
    raw = parse_json(data, str(path))
    if quant and "quantization_config" not in raw:
        raw["quantization_config"] = modelopt_sidecar(parse_json(quant, str(path.with_name(QUANT_SIDECAR))))
    return normalize(raw, model_id=model_id or _id_from_path(path, raw), source=str(path))


def modelopt_sidecar(doc: dict[str, Any]) -> dict[str, Any]:
    """hf_quant_config.json (ModelOpt 0.29 and before) as the quantization_config vLLM reads from it: taken
    whole when the config has none (vllm 0.33 transformers_utils/config.py:951-962), its `quantization`
    block read as a modelopt method (config/model.py _parse_quant_hf_config: producer name modelopt)."""
    inner = doc.get("quantization")
    producer = doc.get("producer")
    if isinstance(inner, dict) and isinstance(producer, dict) and producer.get("name") == "modelopt":
        return {**inner, "quant_method": "modelopt", "producer": producer}
    return doc


_parse_cached = lru_cache(maxsize=256)(_parse)


def _id_from_path(path: Path, raw: dict[str, Any]) -> str:
    name = raw.get("_name_or_path")
    if isinstance(name, str) and name and not name.startswith(("/", ".")):
        return name
    return path.parent.name if path.name in ("config.json", "params.json") else path.stem
