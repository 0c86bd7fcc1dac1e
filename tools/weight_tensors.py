"""Regenerate kvplan/planning/weights/tables/ from the installed transformers (a developer script).

    python tools/weight_tensors.py              # write the tables
    python tools/weight_tensors.py --check      # exit 1 if a shipped table is not what this transformers gives
    python tools/weight_tensors.py --only ID    # one bundled id (or type:<model_type>), printed, nothing written

What is recorded, for every bundled config and for the no-argument config of every transformers model_type
that kvplan sizes: the model transformers builds from that config on the ``meta`` device (no memory, no
download; remote code is never run: a config whose class is remote code is built with the in-library class
of the same architecture, ``IN_LIBRARY_AS``, or not at all), and of it every tensor a checkpoint stores:
its parameters (a tied lm_head once) and its persistent buffers (DeepSeek's e_score_correction_bias), minus
the buffers a model computes at load (``COMPUTED_BUFFERS``). Each tensor gets its role and TP rule
(``kvplan.planning.weights.roles``), its shape as (out, in), the dtype the class keeps it in when that is
not the model's (``_keep_in_fp32_modules_strict``); identical tensors of several decoder layers are one row
with their layer indices. The class built is the config's ``architectures[0]`` (what vLLM loads: the vision
and audio towers of a multimodal checkpoint included), else the Auto class for its model_type. A config
that cannot be built, or that kvplan does not size, is listed in ``index.json`` under ``skipped`` with why.
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's kvplan, whatever the working directory
sys.path.insert(0, str(Path(__file__).resolve().parent))  # weight_scaling beside this script

from kvplan.config import bundled_index  # noqa: E402
from kvplan.config.hf import normalize  # noqa: E402
from kvplan.errors import KvplanError  # noqa: E402
from kvplan.planning.weights.roles import Context, classify, pattern_of  # noqa: E402
from kvplan.planning.weights.tables import TABLES_DIR, format_layers, group_rows, signature  # noqa: E402

# Remote-code model_types -> (the in-library model_type of the same architecture, keys it sets). Their
# keys are renamed to the in-library class's names (RENAMED). Kimi-K2 is DeepSeek-V3; Falcon's original
# RefinedWeb configs are FalconConfig; ChatGLM2/3's block is transformers' Glm (fused query_key_value with
# bias -> q/k/v with attention_bias, SwiGLU, RMSNorm, untied output layer); MiniMax-M1 is MiniMax-Text-01.
IN_LIBRARY_AS: dict[str, tuple[str, dict[str, Any]]] = {
    "kimi_k2": ("deepseek_v3", {}),
    "RefinedWebModel": ("falcon", {"new_decoder_architecture": False}),
    "RefinedWeb": ("falcon", {"new_decoder_architecture": True}),
    "chatglm": ("glm", {}),
    "minimax_m1": ("minimax", {}),
}
# Keys whose values a remote config spells differently: MiniMax-M1's attn_type_list (0 lightning, 1 softmax)
# is MiniMaxConfig's layer_types.
CONVERTED = {"attn_type_list": ("layer_types", lambda v: ["full_attention" if t == 1 else "linear_attention" for t in v])}
RENAMED = {
    "n_layer": "num_hidden_layers", "n_head": "num_attention_heads", "n_head_kv": "num_kv_heads",  # Falcon RW
    "num_layers": "num_hidden_layers", "padded_vocab_size": "vocab_size", "ffn_hidden_size": "intermediate_size",
    "multi_query_group_num": "num_key_value_heads", "kv_channels": "head_dim", "add_qkv_bias": "attention_bias",
}
# Persistent buffers a model computes in __init__ and no checkpoint stores (vLLM computes them too):
# MiniMax-Text-01 / M1 lightning attention's ALiBi-like slopes and decay tables.
COMPUTED_BUFFERS = ("slope_rate", "query_decay", "key_decay", "diagonal_decay")
DROPPED_KEYS = ("model_type", "auto_map")
# Class defaults not listed as skipped: types kvplan does not size, and encoders, towers and sub-configs that
# have no generative class of their own (bert, siglip_vision_model, qwen3_vl_text).
NOT_RECORDED = ("kvplan does not size it", "transformers has no generative model class")


def _quiet() -> None:
    import transformers

    transformers.logging.set_verbosity_error()
    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")


def hf_config(raw: dict[str, Any]) -> tuple[Any, list[str]] | str:
    """The transformers config object of a config document, and notes; or why there is none."""
    from transformers import CONFIG_MAPPING

    model_type = str(raw.get("model_type"))
    notes: list[str] = []
    target, extra = IN_LIBRARY_AS.get(model_type, (model_type, {}))
    fields = {(RENAMED.get(k, k) if target != model_type else k): v for k, v in raw.items() if k not in DROPPED_KEYS}
    if target != model_type:
        notes.append(f"remote-code model_type {model_type!r} built as transformers' {target!r}")
        for key, (name, convert) in CONVERTED.items():
            if key in fields:
                fields[name] = convert(fields.pop(key))
    elif model_type not in CONFIG_MAPPING:
        text = raw.get("text_config")
        if not isinstance(text, dict) or text.get("model_type") not in CONFIG_MAPPING:
            return f"model_type {model_type!r} is remote code only (not in transformers' CONFIG_MAPPING)"
        inner = hf_config(dict(text))
        if isinstance(inner, str):
            return inner
        unread = sorted(set(text) - set(type(inner[0])().to_dict()))
        return inner[0], [f"approximate: remote-code wrapper {model_type!r} built as its text model alone, "
                          f"transformers' {text['model_type']!r}: the wrapper's own tensors (a vision tower) are not "
                          f"counted, and keys that class does not read may change shapes it cannot see "
                          f"({', '.join(unread[:6])})", *inner[1]]
    try:
        return CONFIG_MAPPING[target](**{**fields, **extra}), notes
    except Exception as exc:  # a config class refusing the file's values
        return f"{type(exc).__name__} from {target}'s config class: {str(exc).strip()[:160]}"


def model_class(raw: dict[str, Any], config: Any) -> Any:
    """architectures[0] when transformers has it (vLLM resolves the same name), else the Auto class."""
    import transformers

    arch = (raw.get("architectures") or [None])[0]
    if isinstance(arch, str) and raw.get("model_type") not in IN_LIBRARY_AS and hasattr(transformers, arch):
        found = getattr(transformers, arch)
        if getattr(found, "config_class", None) in (type(config), None) or isinstance(config, found.config_class):
            return found
    for auto in ("AutoModelForCausalLM", "AutoModelForImageTextToText", "AutoModelForSpeechSeq2Seq",
                 "AutoModelForSeq2SeqLM"):
        mapping = getattr(transformers, auto)._model_mapping
        if type(config) in mapping:
            return mapping[type(config)]
    return None


def build(raw: dict[str, Any]) -> tuple[Any, list[str]] | str:
    """The model on the meta device, and notes; or why it cannot be built."""
    import torch

    found = hf_config(raw)
    if isinstance(found, str):
        return found
    config, notes = found
    cls = model_class(raw, config)
    notes += _known_activation(config)
    if cls is None:
        return f"transformers has no generative model class for {type(config).__name__}"
    try:
        with torch.device("meta"):
            return cls._from_config(config), notes
    except Exception as exc:  # the class refusing the config
        return f"{type(exc).__name__} building {cls.__name__}: {str(exc).strip().splitlines()[0][:160]}"


def _known_activation(config: Any) -> list[str]:
    """A hidden_act transformers does not know (Kimi-K3's situ) is built as silu: no tensor depends on it."""
    from transformers.activations import ACT2FN

    act = getattr(config, "hidden_act", None)
    if isinstance(act, str) and act not in ACT2FN:
        config.hidden_act = "silu"
        return [f"hidden_act {act!r} unknown to transformers: built with silu (no tensor depends on it)"]
    return []


def stored(model: Any) -> Iterator[tuple[str, Any, Any]]:
    """(name, tensor, owning module) of every parameter (shared ones once) and persistent buffer."""
    modules = dict(model.named_modules())
    for name, param in model.named_parameters():
        yield name, param, modules.get(name.rpartition(".")[0])
    for mod_name, module in modules.items():
        for key, buffer in module._buffers.items():
            if buffer is not None and key not in module._non_persistent_buffers_set and key not in COMPUTED_BUFFERS:
                yield f"{mod_name}.{key}" if mod_name else key, buffer, module


def oriented(name: str, shape: tuple[int, ...], module: Any, role: str, tp: str, hidden: int) -> tuple[int, ...]:
    """(out, in) for matrices: Conv1D stores (in, out); expert stacks put the hidden width on either side."""
    from transformers.pytorch_utils import Conv1D

    if isinstance(module, Conv1D) and name.endswith(".weight"):
        return shape[::-1]
    if role == "experts" and len(shape) == 3:
        _, a, b = shape
        hidden_in = tp == "expert-column"  # gate/up read the hidden state; down writes it
        if (hidden_in and a == hidden != b) or (not hidden_in and b == hidden != a):
            return (shape[0], b, a)
    return shape


def is_linear(name: str, module: Any, role: str, shape: tuple[int, ...]) -> bool:
    import torch
    from transformers.pytorch_utils import Conv1D

    if role in ("router", "lm_head", "embedding", "norms"):
        return False
    if role == "experts":
        return len(shape) == 3 and not name.endswith("bias")
    return isinstance(module, (torch.nn.Linear, Conv1D)) and name.endswith(".weight")


def fp32_kept(model: Any, name: str) -> bool:
    keep = getattr(model, "_keep_in_fp32_modules_strict", None) or ()
    return any(f".{k}." in f".{name}." for k in keep)


def rows(model: Any, context: Context) -> list[list[Any]]:
    """The table rows: one per (pattern, role, rule, shape, count, linear, dtype), with its decoder layers."""
    items = []
    for name, tensor, module in stored(model):
        shape = tuple(int(d) for d in tensor.shape)
        role, tp, layer = classify(name, shape, context)
        shape = oriented(name, shape, module, role, tp, context.hidden)
        count, shape = (shape[0], shape[1:]) if role == "experts" and len(shape) >= 2 else (1, shape)
        items.append((pattern_of(name, layer), role, tp, shape, count, layer,
                      is_linear(name, module, role, (count, *shape)), "float32" if fp32_kept(model, name) else None))
    return [[r.pattern, r.role, r.tp, list(r.shape), r.count, format_layers(r.layers), int(r.linear), r.dtype]
            for r in group_rows(items)]


def tied(model: Any) -> bool:
    try:
        out, inp = model.get_output_embeddings(), model.get_input_embeddings()
    except (AttributeError, NotImplementedError):
        return False
    weight = getattr(out, "weight", None)
    return weight is not None and weight is getattr(inp, "weight", None)


def table(name: str, raw: dict[str, Any]) -> dict[str, Any] | str:
    """The table document of one config, or why there is none."""
    try:
        kv = normalize(copy.deepcopy(raw), model_id=name, source=name)
    except KvplanError as exc:
        return f"kvplan does not size it: {str(exc).splitlines()[0][:160]}"
    wrapper = raw.get("model_type") if raw.get("model_type") != kv.raw.get("model_type") else None
    key = signature(kv.raw, wrapper)  # what kvplan looks it up by (a wrapper's fields as ModelConfig.raw has them)
    built = build(copy.deepcopy(raw))  # config classes rewrite nested dicts in place
    if isinstance(built, str):
        return built
    model, notes = built
    context = Context(hidden=kv.hidden_size, layer_kinds=kv.layer_kinds,
                      encoder_decoder=bool(getattr(model.config, "is_encoder_decoder", False)))
    found = rows(model, context)
    layers = {i for r in found for i in _expand(r[5])}
    if layers != set(range(kv.num_layers)):
        return f"{type(model).__name__} has decoder layers {format_layers(sorted(layers))}, kvplan {kv.num_layers}"
    doc = {"name": name, "class": type(model).__name__, "num_layers": kv.num_layers, "tied": tied(model),
           "signature": key, "exact": not any(n.startswith("approximate") for n in notes), "tensors": found}
    doc |= {"wrapper": wrapper} if wrapper and _untyped(kv.raw) else {}
    return {**doc, "notes": notes} if notes else doc


def _untyped(raw: dict[str, Any]) -> bool:
    from kvplan.config.defaults import SUB_CONFIG_KEYS

    return any(isinstance(raw.get(s), dict) and not raw[s].get("model_type") for s in SUB_CONFIG_KEYS)


def _expand(text: str) -> list[int]:
    from kvplan.planning.weights.tables import parse_layers

    return list(parse_layers(text))


def file_name(name: str) -> str:
    return name.replace("type:", "_type__").replace("/", "__") + ".json"


def default_configs() -> Iterator[tuple[str, dict[str, Any]]]:
    """("type:<model_type>", the no-argument config as a dict) for every model_type transformers has."""
    from transformers import CONFIG_MAPPING

    for model_type in sorted(CONFIG_MAPPING.keys()):
        try:
            yield f"type:{model_type}", CONFIG_MAPPING[model_type]().to_dict()
        except Exception:  # a class that needs arguments: nothing to record
            continue


def build_tables(only: str | None = None) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """({name: table document}, {name: why skipped}) for the bundled configs and the class defaults."""
    _quiet()
    docs: dict[str, dict[str, Any]] = {}
    skipped: dict[str, str] = {}
    bundled = ((k, json.loads(p.read_text())) for k, p in bundled_index().items())
    for name, raw in (*bundled, *default_configs()):
        if only is not None and name != only:
            continue
        try:
            doc = table(name, raw)
        except Exception as exc:  # a model whose tensors cannot be listed: its reason, not a crash
            doc = f"{type(exc).__name__} listing its tensors: {str(exc).strip()[:160]}"
        if isinstance(doc, str):
            if not name.startswith("type:") or not doc.startswith(NOT_RECORDED):
                skipped[name] = doc
        elif doc["signature"] not in {d["signature"] for d in docs.values()}:
            docs[name] = doc
    return docs, skipped


def render_table(doc: dict[str, Any]) -> str:
    """One row per line (small diffs when transformers changes a model)."""
    head = json.dumps({k: v for k, v in doc.items() if k != "tensors"}, sort_keys=True)[:-1]
    body = ",\n".join(json.dumps(r, separators=(",", ":")) for r in doc["tensors"])
    return f'{head}, "tensors": [\n{body}\n]}}\n'


def render_index(docs: dict[str, dict[str, Any]], skipped: dict[str, str]) -> str:
    import transformers

    index = {"transformers_version": transformers.__version__,
             "tables": {d["signature"]: file_name(n) for n, d in sorted(docs.items())},
             "wrappers": sorted({d["wrapper"] for d in docs.values() if d.get("wrapper")}),
             "skipped": dict(sorted(skipped.items()))}
    return json.dumps(index, indent=1, sort_keys=True) + "\n"


def render_scaling(docs: dict[str, dict[str, Any]]) -> str:
    """tables/scaling.json: how each model_type's shapes follow its config's sizes (tools/weight_scaling.py)."""
    import transformers
    from weight_scaling import recipes

    defaults = dict(default_configs())
    found = recipes(docs, defaults, lambda name, raw: _listed(name, raw))
    body = ",\n".join(f"{json.dumps(t)}: {json.dumps(r, sort_keys=True, separators=(',', ':'))}"
                      for t, r in sorted(found.items()))
    return f'{{"transformers_version": {json.dumps(transformers.__version__)}, "types": {{\n{body}\n}}}}\n'


def _listed(name: str, raw: dict[str, Any]) -> dict[str, Any] | str:
    try:
        return table(name, raw)
    except Exception as exc:  # a perturbed config the class refuses: that key is not a size
        return f"{type(exc).__name__}: {exc}"


def rendered(only: str | None = None) -> dict[str, str]:
    """{file name under tables/: its text}."""
    docs, skipped = build_tables(only)
    files = {file_name(n): render_table(d) for n, d in docs.items()}
    if only is None:
        files["index.json"] = render_index(docs, skipped)
        files["scaling.json"] = render_scaling(docs)
    else:
        files |= {f"skipped: {n}": why for n, why in skipped.items()}
    return files


def stale(files: dict[str, str]) -> list[str]:
    have = {p.name: p.read_text(encoding="utf-8") for p in TABLES_DIR.glob("*.json")}
    return sorted(n for n in files.keys() | have.keys() if files.get(n) != have.get(n))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped tables instead of writing")
    parser.add_argument("--only", help="one bundled id or type:<model_type>: print its table, write nothing")
    args = parser.parse_args(argv)
    files = rendered(args.only)
    if args.only:
        print("\n".join(files.values()) or f"{args.only}: not a bundled id or model_type")
        return 0
    if args.check:
        names = stale(files)
        for name in names:
            print(f"out of date: {TABLES_DIR.relative_to(ROOT) / name}", file=sys.stderr)
        print(f"{TABLES_DIR.relative_to(ROOT)} is {'out of date: run python tools/weight_tensors.py' if names else 'current'}")
        return 1 if names else 0
    TABLES_DIR.mkdir(exist_ok=True)
    for old in TABLES_DIR.glob("*.json"):
        old.unlink()
    for name, text in files.items():
        (TABLES_DIR / name).write_text(text, encoding="utf-8")
    index = json.loads(files["index.json"])
    print(f"wrote {len(files) - 1} tables to {TABLES_DIR.relative_to(ROOT)}; skipped {len(index['skipped'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
