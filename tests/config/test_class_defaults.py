"""Class defaults: a config may leave out any key whose value equals its config class's default.

- A real llava export whose text_config names no layer count, width or heads loads with LlamaConfig's.
- Every bundled config (whatever configs/ holds), with each key that equals its class default dropped,
  one at a time and all together, gives the same answers: ``kvplan size --json`` at two points, the
  weights per GPU, and ``capacity`` under every engine at a fixed KV budget.
- The shipped table is what the installed transformers gives (tools/class_defaults.py regenerates it).
- A key the file names, null included, is never overridden by a default.

tests/data/llava-1.5-7b-hf.config.json: llava-hf/llava-1.5-7b-hf as vendored in
tung2kg1/AI-Stock-Chart-Analysis @ 61f63b568cf2def9b3e13740ee072bf3b48dac8a (llava-1.5-7b-hf/config.json),
CRLF line endings saved as LF; an early revision (transformers 4.36.0.dev0), before the text_config
was written out in full.
"""

from __future__ import annotations

import copy
import importlib.util
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import kvplan
from kvplan.config import bundled_index, normalize
from kvplan.config.aliases import FIELD_ALIASES
from kvplan.config.defaults import SUB_CONFIG_KEYS, class_defaults, is_named, sub_config_type, table
from kvplan.config.hf import canonical_fields, language_model_fields
from kvplan.engines import ENGINE_NAMES
from kvplan.errors import KvplanError
from kvplan.planning.capacity import capacity
from kvplan.planning.weights import param_count, weight_bytes_per_gpu
from kvplan.render.capacity import capacity_payload
from kvplan.render.payload import plain
from kvplan.render.size import size_payload

ROOT = Path(__file__).resolve().parents[2]
LLAVA = ROOT / "tests" / "data" / "llava-1.5-7b-hf.config.json"
CONFIGS = {**bundled_index(), "llava-hf/llava-1.5-7b-hf (tests/data)": LLAVA}


def read(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc


# --------------------------------------------------------------------------- llava: text_config from LlamaConfig


def test_llava_text_config_takes_llamaconfig_defaults() -> None:
    m = normalize(read(LLAVA), model_id="llava", source=str(LLAVA))
    # text_config names only max_position_embeddings 4096 and vocab_size 32064; LlamaConfig supplies
    # 32 layers, hidden 4096, 32 heads; KV heads default to the heads, head_dim to 4096 // 32 = 128.
    assert (m.num_layers, m.num_attention_heads, m.num_kv_heads, m.head_dim) == (32, 32, 32, 128)
    assert m.max_model_len == 4096
    # 32 layers × 32 KV heads × (128 + 128) × 2 B (float16) = 524,288 B per token
    assert kvplan.kv_cache(m, max_model_len=4096).bytes_per_token == 524_288
    # Llama-2-7B's 6,738,415,616 parameters (vocab 32000) + 64 more vocab rows × 4096 in the embedding
    # and in the untied lm_head = 6,738,939,904; LlamaConfig's intermediate_size 11008 is in there. Beside it,
    # the checkpoint's CLIP ViT-L/14-336 tower (CLIPVisionConfig defaults but for the file's 24 layers of 1024,
    # 336 px, 14 px patches: 303,507,456) and the two-layer projector (1024 -> 4096 -> 4096 with biases:
    # 20,979,712), which LlavaForConditionalGeneration builds and vLLM loads: 324,487,168 in `vision`.
    counted = param_count(m)
    assert counted.total - counted.vision == 6_738_415_616 + 2 * 64 * 4096
    assert counted.vision == 303_507_456 + 20_979_712


def test_llava_says_where_the_defaults_came_from() -> None:
    _, origin = canonical_fields(language_model_fields(read(LLAVA)))
    assert origin["num_layers"] == "num_hidden_layers (default of llama)"
    assert origin["max_model_len"] == "max_position_embeddings"  # named by the file


def test_llava_agrees_with_transformers() -> None:
    transformers = pytest.importorskip("transformers")
    text = transformers.LlavaConfig.from_dict(read(LLAVA)).text_config
    m = normalize(read(LLAVA), model_id="llava", source=str(LLAVA))
    assert (m.num_layers, m.num_attention_heads, m.num_kv_heads, m.hidden_size) == (
        text.num_hidden_layers, text.num_attention_heads, text.num_key_value_heads, text.hidden_size)
    assert m.field("intermediate_size") == text.intermediate_size


def test_a_text_config_without_model_type_is_the_wrappers_default_sub_config() -> None:
    raw = read(LLAVA)
    del raw["text_config"]["model_type"]
    assert sub_config_type("llava", "text_config") == "llama"
    m = normalize(raw, model_id="llava", source=str(LLAVA))
    assert (m.num_layers, m.num_attention_heads, m.hidden_size) == (32, 32, 4096)


def test_derived_defaults_are_derived_not_injected() -> None:
    """LlamaConfig computes num_key_value_heads and head_dim from the heads and the width: a llava text
    config with 40 heads of width 5120 has 40 KV heads of 128, not a no-argument LlamaConfig's 32 of 128."""
    raw = read(LLAVA)
    raw["text_config"] |= {"hidden_size": 5120, "num_attention_heads": 40}
    m = normalize(raw, model_id="llava", source=str(LLAVA))
    assert (m.num_attention_heads, m.num_kv_heads, m.head_dim) == (40, 40, 128)
    assert not {"num_key_value_heads", "head_dim", "layer_types"} & set(class_defaults("llama"))
    assert class_defaults("qwen3")["head_dim"] == 128  # a constant in Qwen3Config: recorded


def test_an_unknown_wrapper_still_needs_its_fields() -> None:
    raw = read(LLAVA) | {"model_type": "not_a_model"}
    raw["text_config"] = {k: v for k, v in raw["text_config"].items() if k != "model_type"}
    with pytest.raises(KvplanError, match="num_hidden_layers': field required"):
        normalize(raw, model_id="x", source="x.json")


# --------------------------------------------------------------------------- dropping a default changes nothing

POINTS = ((1, 4096, "auto"), (2, 32768, "fp8"))  # (tp, seq_len, kv_dtype)
KV_BUDGET = (20 * 2**30,)


def attempt(call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    try:
        return call(*args, **kwargs)
    except KvplanError as exc:
        return f"error: {exc}"


def _size(m: kvplan.ModelConfig, **kwargs: Any) -> Any:
    return plain(size_payload(kvplan.kv_cache(m, **kwargs)))


def _capacity(m: kvplan.ModelConfig, engine: str) -> Any:
    return plain(capacity_payload(capacity(m, engine=engine, kv_budget_bytes=KV_BUDGET)))


def answers(raw: dict[str, Any]) -> dict[str, Any]:
    """Every answer kvplan gives for a config (an error is an answer too: a refused architecture's line)."""
    m = attempt(normalize, raw, model_id="drop-a-default", source="config.json")
    if isinstance(m, str):
        return {"load": m}
    out = {f"size tp={tp} max_model_len={n} kv_dtype={dt}": attempt(_size, m, tp=tp, max_model_len=n, kv_dtype=dt)
           for tp, n, dt in POINTS}
    out["weights per GPU, tp=2"] = attempt(weight_bytes_per_gpu, m, tp=2)
    out |= {f"capacity {engine}": attempt(_capacity, m, engine) for engine in ENGINE_NAMES}
    return out


def _same(a: Any, b: Any) -> bool:
    return json.dumps(_unnoted(a), sort_keys=True) == json.dumps(_unnoted(b), sort_keys=True)  # True is not 1 here


def _unnoted(answer: Any) -> Any:
    """An answer without the notes that name a dropped key's class default (they say what was dropped; every
    number must stay the same)."""
    if not isinstance(answer, dict) or "notes" not in answer:
        return answer
    return {**answer, "notes": [n for n in answer["notes"] if "is not in the config: the default of" not in n]}


def _lookup(doc: dict[str, Any], key: str) -> Any:
    for part in key.split("."):
        doc = doc[part]
    return doc


def _section_class(raw: dict[str, Any], section: str | None) -> object:
    """The config class of the top level or of a sub-config: its own model_type, else the wrapper's default."""
    if section is None:
        return raw.get("model_type")
    return raw[section].get("model_type") or sub_config_type(raw.get("model_type"), section)


def droppable(raw: dict[str, Any]) -> list[tuple[str | None, str]]:
    """(section, key) for each key the file names with its class's default value (section None: top level).
    A sub-config's model_type stays: save_pretrained always writes it."""
    found: list[tuple[str | None, str]] = []
    for section in (None, *SUB_CONFIG_KEYS):
        doc = raw if section is None else raw.get(section)
        if not isinstance(doc, dict):
            continue
        defaults = class_defaults(_section_class(raw, section))
        found += [(section, k) for k, v in defaults.items()
                  if k not in SUB_CONFIG_KEYS and is_named(doc, k) and _same(_lookup(doc, k), v)]
    return found


def dropped(raw: dict[str, Any], keys: list[tuple[str | None, str]]) -> dict[str, Any]:
    out = copy.deepcopy(raw)
    for section, key in keys:
        *path, leaf = key.split(".")
        node = out if section is None else out[section]
        for part in path:
            node = node[part]
        del node[leaf]
    return out


def _drop_cases() -> list[Any]:
    return [pytest.param(path, id=name) for name, path in CONFIGS.items()]


@pytest.mark.parametrize("path", _drop_cases())
def test_dropping_a_key_that_equals_its_class_default_changes_no_answer(path: Path) -> None:
    raw = read(path)
    keys = droppable(raw)
    if not keys:
        pytest.skip("no key of this config equals its class default (or its class is not in transformers)")
    expected = answers(raw)
    for case in [[k] for k in keys] + [keys]:
        got = answers(dropped(raw, case))
        changed = [name for name in expected if not _same(expected[name], got[name])]
        assert not changed, f"dropping {case} changed {changed}"


def test_the_drop_test_drops_something() -> None:
    """The bundled configs hold keys equal to their class defaults (else the test above checks nothing)."""
    counts = {name: len(droppable(read(path))) for name, path in CONFIGS.items()}
    assert sum(counts.values()) >= 40 and sum(1 for n in counts.values() if n) >= 20, counts


def test_dropping_a_default_without_the_table_would_change_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The drop test can fail: with an empty table, gemma-3's omitted vocab_size and context length are lost."""
    raw = read(CONFIGS["google/gemma-3-27b-it"])
    raw["text_config"] |= {"vocab_size": 262208, "max_position_embeddings": 131072}  # Gemma3TextConfig's
    assert ("text_config", "vocab_size") in droppable(raw)
    expected = answers(raw)
    monkeypatch.setattr("kvplan.config.defaults.row", lambda model_type: {})
    got = answers(dropped(raw, [("text_config", "vocab_size"), ("text_config", "max_position_embeddings")]))
    assert not _same(expected, got)


# --------------------------------------------------------------------------- the table is current


def _tool() -> Any:
    spec = importlib.util.spec_from_file_location("class_defaults_tool", ROOT / "tools" / "class_defaults.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_table_is_what_the_installed_transformers_gives() -> None:
    pytest.importorskip("transformers")
    fresh = _tool().build_table()
    shipped = table()
    changed = sorted(t for t in fresh["model_types"].keys() | shipped["model_types"].keys()
                     if fresh["model_types"].get(t) != shipped["model_types"].get(t))
    assert not changed, (
        f"kvplan/config/class_defaults.json (transformers {shipped['transformers_version']}) differs from "
        f"transformers {fresh['transformers_version']} for {len(changed)} model types ({', '.join(changed[:8])}); "
        "run: python tools/class_defaults.py")


def test_the_table_records_the_keys_kvplan_reads_and_nothing_null() -> None:
    keys = set(_tool().read_keys()) | set(SUB_CONFIG_KEYS)
    rows = table()["model_types"]
    assert len(rows) > 500 and table()["transformers_version"]
    assert all(set(row) <= keys and None not in row.values() for row in rows.values())


# --------------------------------------------------------------------------- an explicit key always wins


@pytest.mark.parametrize("path", _drop_cases())
def test_a_default_never_overrides_a_key_the_file_names(path: Path) -> None:
    """Each field whose alias keys the file names (null included) comes from the file; and a value written
    under any alias of a field the class has a default for wins over that default (llama: n_layer 33
    is 33 layers, not num_hidden_layers' default 32)."""
    fields = language_model_fields(read(path))
    _, origin = canonical_fields(fields)
    for name, keys in FIELD_ALIASES.items():
        if any(is_named(fields, k) for k in keys):
            assert "default of" not in origin.get(name, ""), (name, origin.get(name))
    defaults = class_defaults(fields.get("model_type"))
    for name, keys in FIELD_ALIASES.items():
        default = next((defaults[k] for k in keys if k in defaults), None)
        if not isinstance(default, int) or isinstance(default, bool):
            continue
        for key in (k for k in keys if "." not in k):
            doc = {k: v for k, v in fields.items() if k not in keys} | {key: default + 1}
            assert canonical_fields(doc)[0][name] == default + 1, (name, key)


def test_an_explicit_null_is_not_replaced_by_the_class_default() -> None:
    # MistralConfig's sliding_window default is 4096; Mistral-7B-Instruct-v0.3 writes null: no window.
    m = kvplan.load_model("mistralai/Mistral-7B-Instruct-v0.3")
    assert class_defaults("mistral")["sliding_window"] == 4096
    assert m.sliding_window is None and set(m.layer_kinds) == {"full"}
    # DeepseekV2Config's q_lora_rank default is 1536; DeepSeek-V2-Lite writes null: one q_proj.
    lite = kvplan.load_model("deepseek-ai/DeepSeek-V2-Lite")
    assert class_defaults("deepseek_v2")["q_lora_rank"] == 1536
    assert lite.raw["q_lora_rank"] is None and lite.field("q_lora_rank") is None


def test_each_row_read_alone_is_the_tables_row() -> None:
    # class_defaults parses one row of the file (kvplan.config.defaults.row), as tools/class_defaults.py lays it out:
    # every model_type's row read alone is what the whole parse holds, and a key outside model_types is no row.
    from kvplan.config.defaults import row

    rows = table()["model_types"]
    assert len(rows) > 700 and all(row(t) == r for t, r in rows.items())
    assert row("transformers_version") == {} and row("nougat") == {} and row("no-such-type") == {}
