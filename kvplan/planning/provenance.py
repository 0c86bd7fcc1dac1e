"""Whether every input of a budget term is exact, from the code's own records.

A term is exact only when its rule is the engine's and every input behind it is exact. The inputs that are not,
and where each is recorded:

- the weights' tensors: kvplan's formula for a family no tensor table matches, or a table built from a stand-in
  class (``ModelParts.estimate``, the record ``weights_source`` reads); MTP modules copied from the last decoder layer
  (``ModelParts.mtp_exact``);
- the weights' format: a what-if ``weights_dtype`` (kvplan's layout of that format, not a checkpoint's); a field of
  the config's ``quantization_config`` that the format reader does not read, and a storage key of the config
  (``expert_dtype``: any ``*_dtype`` key but the model's and the cache states') it does not read, both recorded as
  ``weight_format`` reads the config (``Reads``); a field whose value leaves the stored bytes as counted is listed
  in ``NO_STORAGE``, a field the method's engine loader never reads in ``NOT_LOADED``; MXFP4 experts an engine lays
  out without a layout term in kvplan;
- the rotary caches: a rope field ``rotary_bytes`` does not read (recorded the same way; a second rope theta, such
  as MiMo's ``swa_rope_theta``, builds a cache of its own), a rope type whose positions it does not know
  (``ROPE_TYPES``);
- the GPU: kvplan's default (no GPU named) decides the scheduler's defaults by its memory (the profile's
  persistent rows, the encoder's budget) and the MXFP4 kernel backend by its architecture (the padded layouts).

``audited`` applies these to the terms a stage subtracts; each reason is said in ``BudgetTerm.estimated_because``.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import replace
from functools import lru_cache
from typing import Any

from kvplan.config.model import ModelConfig
from kvplan.engines.base import BudgetRules, BudgetTerm, Request
from kvplan.errors import KvplanError
from kvplan.planning.weights import weight_format, weight_parts
from kvplan.planning.weights.formats import _weight_format, content_key
from kvplan.planning.weights.loaded import rotary_bytes

FLOAT_WEIGHTS = ("bf16", "fp16", "fp32", "bfloat16", "float16", "float32", "auto")  # a what-if stored whole: exact
# quantization_config fields whose value leaves the bytes a checkpoint stores as the reader counts them, by path
# (dots for nesting, globs allowed) -> the values that do (None: any value)
NO_STORAGE: dict[str, tuple[Any, ...] | None] = {
    "quant_method": None,  # names the reader
    "fmt": None,  # e4m3 or e5m2: one byte either way
    "activation_scheme": ("dynamic",),  # "static" stores an fp32 input scale per linear layer, not counted
    "dequantize": (False,),
    "quantization_status": None, "producer": None, "producer.*": None, "global_compression_ratio": None,
    "kv_cache_scheme": None, "kv_cache_scheme.*": None, "kv_cache_quant_algo": None,  # the KV cache's, not weights'
    "config_groups.*.targets": (["Linear"],),  # every linear layer, as the reader applies it
    "config_groups.*.input_activations": (None,), "config_groups.*.output_activations": (None,),
    "config_groups.*.weights.observer": None, "config_groups.*.weights.observer_kwargs": None,
    "config_groups.*.weights.dynamic": (False,), "config_groups.*.weights.actorder": (None,),
    "config_groups.*.weights.symmetric": (True,), "config_groups.*.weights.zp_dtype": (None,),
    "config_groups.*.format": None,  # repeats the top-level format
    "bnb_4bit_compute_dtype": None, "llm_int8_threshold": None, "llm_int8_has_fp16_weight": (False,),
    "damp_percent": None, "true_sequential": None, "model_name_or_path": None, "model_file_base_name": None,
    "zero_point": (True,),  # AWQ: a zero point per group, as the reader counts (False would store none)
    "version": ("gemm", "GEMM"),  # AWQ's GEMM packing: qweight, qzeros, scales as counted (GEMV packs otherwise)
}
# a storage key of the config: a dtype some module is stored in (expert_dtype), not the model's or a cache state's
# fields a method's engine loader never reads: they restate the format, the loader's own keys define it
# (ModelOpt: vLLM 0.23 quantization/modelopt.py:276-330 reads quant_algo, kv_cache_quant_algo, group_size,
# exclude_modules, and per layer hf_quant_config.json's quantized_layers, :2226-2251; never config_groups)
NOT_LOADED: dict[str, tuple[str, ...]] = {"modelopt": ("config_groups", "config_groups.*")}
NOT_STORAGE_PREFIXES = ("mamba_", "ssm_", "torch_")  # cache states' and the model's dtypes
# rope fields that do not change the cache's size: its base, interleaving, which layers skip it
ROPE_NO_SIZE = frozenset({"rope_theta", "use_mrope", "rope_interleave", "indexer_rope_interleave", "no_rope_layers",
                          "no_rope_layer_interval", "qk_rope_head_dim", "head_dim", "mrope_section",
                          "mrope_interleaved"})
ROPE_KEY_WORDS = ("rope", "rotary")  # a key naming either is a rope field
# rope types whose cache positions the count knows (weights/rotary.py _positions, after vLLM 0.19's get_rope paths)
ROPE_TYPES = (None, "default", "llama3", "ntk", "linear", "dynamic", "yarn", "deepseek_yarn", "longrope", "mrope",
              "proportional")


class Reads(dict[str, Any]):
    """A config mapping that records which keys are read (nested mappings as dotted paths)."""

    def __init__(self, data: dict[str, Any], seen: set[str], prefix: str = "") -> None:
        super().__init__(data)
        self.seen, self.prefix = seen, prefix

    def _wrap(self, key: str, value: Any) -> Any:
        self.seen.add(self.prefix + key)
        return Reads(value, self.seen, f"{self.prefix}{key}.") if isinstance(value, dict) else value

    def __getitem__(self, key: str) -> Any:
        return self._wrap(key, super().__getitem__(key))

    def get(self, key: str, default: Any = None) -> Any:
        return self._wrap(key, super().__getitem__(key)) if key in self else default

    def values(self) -> Any:
        return [self._wrap(k, v) for k, v in super().items()]

    def items(self) -> Any:
        return [(k, self._wrap(k, v)) for k, v in super().items()]


def leaves(config: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(dotted path, value) of every field that is not itself a mapping."""
    for key, value in config.items():
        if isinstance(value, dict) and value:
            yield from leaves(value, f"{prefix}{key}.")
        else:
            yield prefix + key, value


def no_storage(path: str, value: Any, method: str = "") -> bool:
    """A field whose value stores nothing more than the reader counts, or that the method's loader never reads."""
    return any(fnmatch.fnmatchcase(path, p) and (allowed is None or value in allowed) for p, allowed in
               NO_STORAGE.items()) or any(fnmatch.fnmatchcase(path, p) for p in NOT_LOADED.get(method, ()))


def is_storage_key(key: str) -> bool:
    """``re.match(r"^(?!mamba_|ssm_|torch_)\\w+_dtype$", key)`` in string methods (a pattern costs ~0.2 ms to compile
    in a fresh process): a word ending in _dtype ($ also before one final newline), not a cache state's or torch's."""
    text = key.removesuffix("\n")
    stem = text.removesuffix("_dtype")
    return stem != text and stem.replace("_", "a").isalnum() and not key.startswith(NOT_STORAGE_PREFIXES)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:57]}..."


def _read_by_format(model: ModelConfig, weights_dtype: str | None) -> set[str]:
    """The config keys the format reader reads (its uncached body: the cached one keys on the config's content)."""
    seen: set[str] = set()
    with suppress(KvplanError):  # a format no reader takes: no weights term is built from it either
        _weight_format.__wrapped__(replace(model, raw=Reads(model.raw, seen)), "", weights_dtype)
    return seen


def unread_fields(model: ModelConfig) -> tuple[str, ...]:
    """The config's weight-storage fields the format reader does not read: quantization_config fields (but those
    whose value stores nothing more) and storage keys (expert_dtype)."""
    return _unread_fields(model, content_key(model))


@lru_cache(maxsize=256)
def _unread_fields(model: ModelConfig, _key: str) -> tuple[str, ...]:
    seen = _read_by_format(model, None)
    quant = model.raw.get("quantization_config")
    fields = [(f"quantization_config.{p}", v) for p, v in leaves(quant)] if isinstance(quant, dict) else []
    method = str(quant.get("quant_method", "")).lower() if isinstance(quant, dict) else ""
    out = [f"{p} {_shown(v)} not read" for p, v in fields if p not in seen and
           not any(s.startswith(p + ".") for s in seen) and
           not no_storage(p.removeprefix("quantization_config."), v, method)]
    return (*out, *(f"{k} {_shown(model.raw[k])} not read (a module stored in another dtype)" for k in model.raw
                    if is_storage_key(k) and k not in seen))


def weights_reasons(model: ModelConfig, weights_dtype: str | None, what_if: bool) -> tuple[str, ...]:
    """Why the checkpoint's weights on a GPU are an estimate (empty: exact)."""
    parts = weight_parts(model)
    formula = "formula" in parts.source
    out = [] if not parts.estimate else [
        "the tensors are kvplan's formula for this family (no tensor table matches the config and no checkpoint "
        "index was read)" if formula else f"the tensors come from a stand-in ({parts.source}): {'; '.join(parts.notes)}"]
    if what_if and (weights_dtype or "auto").lower() not in FLOAT_WEIGHTS:
        out.append(f"weights_dtype {weights_dtype}: kvplan's {weight_format(model, weights_dtype).name} layout of that "
                   "format (its scales and groups), not a checkpoint's")
    elif not what_if:  # a what-if format replaces the checkpoint's, its fields with it
        out += unread_fields(model)
    return tuple(out)


def fp4_layout_reasons(model: ModelConfig, weights_dtype: str | None, rules: BudgetRules) -> tuple[str, ...]:
    """MXFP4 experts an engine lays out for its kernels where kvplan has no layout term for them (vLLM's backends
    for gpt-oss and DeepSeek-V4 experts are modelled, ``loaded.mxfp4_term``; SGLang's, TRT-LLM's, transformers' and
    compressed-tensors MXFP4 are not)."""
    fmt = weight_format(model, weights_dtype)
    fp4 = any(n.startswith(("mxfp4", "float4")) for n in (fmt.name, *(f.name for _, f in fmt.modules)))
    if not fp4 or rules.mxfp4_backend is not None or weights_dtype:  # a layout term counts them (loaded.mxfp4_term)
        return ()
    return (f"{fmt.name} experts as this engine's kernels lay them out (padding, swizzled scales) are not modelled: "
            "the checkpoint's bytes are counted",)


# other values a rope field is tried at: a field whose change leaves the caches as they are is not read (recording
# the reads would not do: a default argument is read whether or not it is used). Any one that moves the caches
# decides, so the one that moves a rope configuration (most models' only rope field to try) goes first.
ROPE_TRIALS: tuple[Any, ...] = ({"rope_type": "yarn", "factor": 3, "original_max_position_embeddings": 7}, None, 0.5, 7,
                                1234567)


def _rope_unread(model: ModelConfig) -> list[str]:
    """Rope fields whose value the caches do not follow, but those a rope configuration restates."""
    base, out = rotary_bytes(model), []
    nested = [p for p in (model.raw.get("rope_parameters"), model.field("rope_scaling")) if isinstance(p, dict)]
    nested += [v for p in nested for v in p.values() if isinstance(v, dict)]
    for key in (k for k in model.raw if any(w in k for w in ROPE_KEY_WORDS) and k not in ROPE_NO_SIZE):
        if any(p.get(key) == model.raw[key] for p in nested if p is not model.raw.get(key)):
            continue  # restated inside the rope parameters the caches read
        moved = False
        for value in ROPE_TRIALS:
            with suppress(KvplanError, TypeError, ValueError, AttributeError, KeyError):
                moved = value != model.raw[key] and rotary_bytes(replace(model, raw={**model.raw, key: value})) != base
            if moved:
                break
        if not moved:
            out.append(key)
    return out


def rotary_reasons(model: ModelConfig) -> tuple[str, ...]:
    """Why the rotary caches are an estimate: a rope field the count does not read (a second rope theta: a cache of
    its own), a rope type whose positions it does not know (empty: exact). Once per config content (fit's budgets
    ask it for every setup)."""
    return _rotary_reasons(model, content_key(model))


@lru_cache(maxsize=64)
def _rotary_reasons(model: ModelConfig, _key: str) -> tuple[str, ...]:
    out = [f"{k} {_shown(model.raw[k])} not read (a rope field the caches do not follow; a second theta builds a cache of its own)"
           for k in _rope_unread(model)]
    params = [p for p in (model.raw.get("rope_parameters"), model.field("rope_scaling")) if isinstance(p, dict)]
    configs = [v for v in params[0].values() if isinstance(v, dict)] or params[:1] if params else []
    kinds = {c.get("rope_type") or c.get("type") for c in configs}
    out += [f"rope type {k!r}: its cache's positions are not known to the count" for k in kinds if k not in ROPE_TYPES]
    return tuple(out)


def gpu_default_reasons(request: Request, knobs: tuple[str, ...]) -> tuple[str, ...]:
    """`knobs` the release filled in by the memory of a GPU kvplan assumed (no GPU, no GPU memory named)."""
    device, asked = request.device, request.asked
    if device is None or not device.assumed or asked is None:
        return ()
    given, resolved = dict(asked.items()), dict(request.settings.items())
    filled = [k for k in knobs if given.get(k) is None and resolved.get(k) is not None]
    return tuple(f"{k} {resolved[k]:,} is the release's default for an assumed {device.name} (no GPU given)"
                 for k in filled)


def backend_reasons(request: Request, rules: BudgetRules) -> tuple[str, ...]:
    """The MXFP4 kernel backend the release picks by the GPU's architecture, where the GPU is kvplan's assumption and
    no backend was asked (the pick's own assumptions are the term's, ``loaded.mxfp4_term``)."""
    asked = request.asked.vllm.moe_backend if request.asked is not None else None
    device = request.device
    if asked is not None or rules.mxfp4_backend is None or device is None or not device.assumed:
        return ()
    return (f"MXFP4 backend {rules.mxfp4_backend}: the release's pick for an assumed {device.name} (no GPU given); "
            "the backend follows the GPU's architecture",)


def _draft_reasons(request: Request, weights_dtype: str | None, what_if: bool) -> tuple[str, ...]:
    draft = request.draft
    if draft is None:
        return ()
    if draft.method == "mtp":
        parts = weight_parts(request.model)
        template = () if parts.mtp_exact else ("the MTP modules are the model's last decoder layer copied, with "
                                               "DeepSeek's enorm/hnorm/eh_proj (no table records their tensors)",)
        return (*template, *weights_reasons(request.model, weights_dtype, what_if))
    return weights_reasons(draft.model, None, False) if draft.model is not None else ()


def _reasons(term: BudgetTerm, request: Request, rules: BudgetRules, weights: tuple[str | None, bool]) -> \
        tuple[str, ...]:
    kind, name = term.kind, term.name
    if kind == "weights" and term.bytes > 0:
        return (*weights_reasons(request.model, *weights), *fp4_layout_reasons(request.model, weights[0], rules))
    if kind == "weights_extra" and name.startswith("rotary"):
        return rotary_reasons(request.model)
    if kind == "weights_extra" and name.startswith("MXFP4"):
        return backend_reasons(request, rules)
    if kind == "draft_weights":
        return _draft_reasons(request, *weights)
    if kind == "persistent":
        return gpu_default_reasons(request, ("max_num_seqs",))
    if kind == "encoder_cache":
        return gpu_default_reasons(request, ("max_num_batched_tokens", "max_num_seqs"))
    return ()


def audited(terms: tuple[BudgetTerm, ...], request: Request, rules: BudgetRules, weights_dtype: str | None,
            what_if: bool) -> tuple[BudgetTerm, ...]:
    """The terms, each whose inputs are not all exact an estimate that says why (an exact one made an estimate)."""
    return tuple(t.estimated(*_reasons(t, request, rules, (weights_dtype, what_if))) for t in terms)
