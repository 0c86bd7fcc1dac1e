"""How each model_type's tensor shapes follow its config's sizes: kvplan/planning/weights/tables/scaling.json.

Written by ``tools/weight_tensors.py`` beside the tables (``--check`` compares it too). For every text-only
model_type whose default config's table has the same tensors in every decoder layer, this records, per config
key of the default config (``CONFIG_MAPPING[type]().to_dict()``), what changing it does to the tensors, measured
by building the class on the meta device twice, at a small layer count: once as the default and once with that
key perturbed (an integer doubled, a float doubled or set to 0.5, a boolean flipped):

- ``free``: no tensor changes (dropout, epsilon, rope theta, token ids, ...);
- ``sizes``: every tensor keeps its name, and each dimension (and the count of a stacked tensor) is multiplied by
  2^e: the dimension follows the key's value to the power e (a monomial, e in -2..2), e.g. fc1's rows follow
  ``intermediate_size``, q_proj's columns ``hidden_size``;
- ``layers``: the key that sets the number of decoder layers (each layer's tensors unchanged);
- anything else (a tensor appears or goes, a dimension moves by another ratio, the class refuses the value) is not
  recorded: a config that differs from the default on such a key has no derived table.

Each table row gets its exponents: one ``{key: e}`` per dimension and one for the count. kvplan
(``kvplan.planning.weights.derived``) builds a config's tensors from them when no table matches its content.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

from kvplan.config.defaults import SUB_CONFIG_KEYS

PROBE_LAYERS = 2  # decoder layers of the probing builds (the recipe holds for uniform layers only)
LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
SKIPPED_KEYS = ("model_type", "transformers_version", "torch_dtype", "dtype", "architectures", "auto_map",
                "_name_or_path", "use_cache", "return_dict", "output_hidden_states", "output_attentions", "id2label",
                "label2id", "problem_type", "task_specific_params", "finetuning_task", "tokenizer_class", "prefix",
                "quantization_config")  # never a tensor's shape (kvplan/planning/weights/derived.py skips them too)
EXPONENTS = {Fraction(2) ** e: e for e in (-2, -1, 0, 1, 2)}
# Keys a config may name that the class's default config does not (legacy RoPE keys, dropouts, ids, ...), each
# with two values to try: a key the class does not list is read by no module, or read by getattr (Qwen3-MoE's
# head_dim): one that changes no tensor at both values is recorded as free for that type; any other stops the
# derivation for a config that names it.
EXTRA_KEYS: dict[str, tuple[Any, Any]] = {
    "rope_theta": (10000.0, 500000.0), "rope_scaling": (None, {"rope_type": "linear", "factor": 2.0}),
    "partial_rotary_factor": (0.5, 0.25), "max_position_embeddings": (2048, 8192), "bos_token_id": (1, 2),
    "eos_token_id": (1, 2), "pad_token_id": (0, 1), "attention_dropout": (0.0, 0.1), "hidden_dropout": (0.0, 0.1),
    "resid_pdrop": (0.0, 0.1), "embd_pdrop": (0.0, 0.1), "attn_pdrop": (0.0, 0.1), "initializer_range": (0.02, 0.01),
    "rms_norm_eps": (1e-6, 1e-5), "layer_norm_eps": (1e-5, 1e-6), "sliding_window": (None, 4096),
    "use_sliding_window": (False, True), "max_window_layers": (2, 28), "pretraining_tp": (1, 2),
    "hidden_act": ("silu", "gelu_new"), "head_dim": (64, 128), "num_key_value_heads": (1, 2),
}

Build = Callable[[str, dict[str, Any]], dict[str, Any] | str]  # weight_tensors.table


def _perturbed(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return 2 * value if value else 1
    if isinstance(value, float):
        return 2 * value if value else 0.5
    return None


def _key(row: list[Any]) -> tuple[Any, ...]:
    """A row without its shape and count: what stays when only sizes change."""
    pattern, role, tp, _shape, _count, layers, linear, dtype = row
    return pattern, role, tp, layers, linear, dtype


def _uniform(doc: dict[str, Any]) -> bool:
    everyone = f"0-{doc['num_layers'] - 1}" if doc["num_layers"] > 1 else "0"
    return all(r[5] in ("", everyone) for r in doc["tensors"])


def _ratios(base: list[Any], other: list[Any]) -> list[int] | None:
    """Per dimension and count, the exponent e with other = base × 2^e; None if a ratio is not one of those."""
    dims = [*base[3], base[4]], [*other[3], other[4]]
    if len(dims[0]) != len(dims[1]) or 0 in dims[0]:
        return None
    found = [EXPONENTS.get(Fraction(b, a)) for a, b in zip(*dims, strict=True)]
    return None if any(e is None for e in found) else [int(e) for e in found if e is not None]


def _effect(base: dict[str, Any], other: dict[str, Any] | str) -> list[list[int]] | None:
    """Exponents per row (rows in base's order), or None when the change is not a pure change of sizes."""
    if isinstance(other, str) or other["tied"] != base["tied"]:
        return None
    rows = {_key(r): r for r in other["tensors"]}
    if len(rows) != len(base["tensors"]) or set(rows) != {_key(r) for r in base["tensors"]}:
        return None
    out = [_ratios(r, rows[_key(r)]) for r in base["tensors"]]
    return None if any(e is None for e in out) else [e for e in out if e is not None]


def _unchanged(base: dict[str, Any], other: dict[str, Any] | str) -> bool:
    effect = _effect(base, other)
    return effect is not None and not any(e for row in effect for e in row)


def _probes(default: dict[str, Any], layer_key: str) -> Iterator[tuple[str, Any]]:
    for key, value in default.items():
        if key not in SKIPPED_KEYS and key != layer_key and _perturbed(value) is not None:
            yield key, _perturbed(value)


def recipe(name: str, model_type: str, default: dict[str, Any], doc: dict[str, Any], build: Build) -> dict[str, Any] | None:
    """The scaling recipe of one model_type's default table, or None (not text-only, layers not uniform, ...)."""
    layer_key = next((k for k in LAYER_KEYS if isinstance(default.get(k), int)), None)
    if layer_key is None or not _uniform(doc) or any(isinstance(default.get(k), dict) for k in SUB_CONFIG_KEYS):
        return None
    computed = _computed(model_type, default, layer_key)
    fixed = {k: v for k, v in default.items() if layer_key not in computed.get(k, {}) and k not in SKIPPED_KEYS}
    probe = {**fixed, "model_type": model_type, layer_key: PROBE_LAYERS}
    base = build(name, probe)
    same = None if isinstance(base, str) else _effect(_relabel(doc, PROBE_LAYERS), base)
    if isinstance(base, str) or same is None or any(e for row in same for e in row):
        return None  # the small build is not the default's layer, repeated
    free, sizes = [], {}
    for key in (k for k, v in default.items() if k in EXTRA_KEYS and (v is None or isinstance(v, str))):
        if all(_unchanged(base, build(name, {**probe, key: v})) for v in EXTRA_KEYS[key]):
            free.append(key)  # a null or named default (pad_token_id, hidden_act) no tensor depends on
    for key, value in _probes(default, layer_key):
        effect = _effect(base, build(name, {**probe, key: value}))
        if effect is None and isinstance(value, int) and not isinstance(value, bool) and default[key] % 2 == 0:
            halved = _effect(base, build(name, {**probe, key: default[key] // 2}))  # doubling refused (kv > heads)
            effect = None if halved is None else [[-e for e in row] for row in halved]
        if effect is None:
            continue
        if not any(e for row in effect for e in row):
            free.append(key)
        else:
            sizes[key] = effect
    extra_free = sorted(k for k, (a, b) in EXTRA_KEYS.items() if k not in default and all(
        _unchanged(base, build(name, {**probe, k: v})) for v in (a, b)))
    aliases = dict(getattr(type(_config(model_type)), "attribute_map", {}) or {})
    return {"table": name, "layers": layer_key, "aliases": aliases, "computed": computed,
            "defaults": {k: v for k, v in default.items() if k not in SKIPPED_KEYS}, "sizes": sorted(sizes),
            "free": sorted(free), "extra_free": extra_free, "exponents": _by_row(sizes, [len(r[3]) + 1 for r in doc["tensors"]])}


def _computed(model_type: str, default: dict[str, Any], layer_key: str) -> dict[str, dict[str, int | None]]:
    """Keys whose default the class computes from another key's value: {computed: {source: e}}, e the exponent
    of a numeric value that follows the source as a monomial, else None (a list, a value by another rule)."""
    found: dict[str, dict[str, int | None]] = {}
    for key, value in [*_probes(default, layer_key), (layer_key, _perturbed(default[layer_key]))]:
        try:
            other = type(_config(model_type))(**{key: value}).to_dict()
        except Exception:  # the class refuses the value alone: nothing learnt
            continue
        for changed, new in other.items():
            old = default.get(changed)
            if changed == key or changed in SKIPPED_KEYS or new == old:
                continue
            numeric = all(isinstance(v, int) and not isinstance(v, bool) and v for v in (old, new))
            e = EXPONENTS.get(Fraction(new, old)) if numeric else None
            found.setdefault(changed, {})[key] = None if e is None else int(e)
    return found


def _config(model_type: str) -> Any:
    from transformers import CONFIG_MAPPING

    return CONFIG_MAPPING[model_type]()


def _relabel(doc: dict[str, Any], layers: int) -> dict[str, Any]:
    """The default table as it reads with `layers` decoder layers (every layer alike)."""
    everyone = f"0-{layers - 1}" if layers > 1 else "0"
    out = copy.deepcopy(doc)
    out["tensors"] = [[*r[:5], everyone if r[5] else "", *r[6:]] for r in out["tensors"]]
    return out


def _by_row(sizes: dict[str, list[list[int]]], widths: list[int]) -> list[list[dict[str, int]]]:
    """{key: per row, per dim: e} -> per row, per dim (shape..., count): {key: e} with e != 0."""
    return [[{k: sizes[k][i][d] for k in sorted(sizes) if sizes[k][i][d]} for d in range(width)]
            for i, width in enumerate(widths)]


def recipes(docs: dict[str, dict[str, Any]], defaults: dict[str, dict[str, Any]], build: Build) -> dict[str, Any]:
    """{model_type: recipe} for every type table that has one."""
    out = {}
    for name, doc in sorted(docs.items()):
        if name.startswith("type:") and name in defaults:
            found = recipe(name, name.removeprefix("type:"), defaults[name], doc, build)
            if found is not None:
                out[name.removeprefix("type:")] = found
    return out
