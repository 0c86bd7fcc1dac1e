"""Hypothesis strategies for config.json documents: valid ones per family, and broken ones.

`valid_docs()` draws a config of a known family (dense GQA/MHA/MQA, Falcon MQA, MLA, sliding,
chunked, gated-DeltaNet and Mamba hybrids), optionally wrapped in `text_config`, together with
what kvplan must read from it (`Expected`), so a valid config is checked, not only "not crashing".
`broken_docs()` mutates valid ones (missing fields, wrong types, nulls, zeros, negatives, huge
values, unknown model_type, KV heads > heads, ...); `config_bytes()` adds non-UTF-8, truncated and
deeply nested files. `parallel_args()` draws the knobs of `kv_cache`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from kvplan.config.aliases import FIELD_ALIASES, TEXT_CONFIG_KEYS
from kvplan.dtypes import KV_DTYPE_NAMES

# Every config key the loader looks at (nested MPT key as its leaf), to aim mutations at them.
CONFIG_KEYS = sorted({k.split(".")[-1] for keys in FIELD_ALIASES.values() for k in keys}
                     | {"model_type", "attn_config", *TEXT_CONFIG_KEYS})
MODEL_TYPES = ("llama", "mistral", "qwen2", "qwen3", "phi3", "gemma2", "gemma3_text", "cohere2", "falcon",
               "RefinedWeb", "RefinedWebModel", "gpt_bigcode", "chatglm", "llama4_text", "deepseek_v3",
               "qwen3_next", "jamba", "gpt_oss")
TORCH_DTYPES = ("bfloat16", "float16", "float32", "torch.bfloat16", "half", "float8_e4m3fn", None)


@dataclass(frozen=True)
class Expected:
    """What the loader must read from a valid document."""

    num_layers: int
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int
    kinds: frozenset[str]
    is_mla: bool = False


Doc = tuple[dict[str, Any], Expected]

small_pos = st.integers(1, 64)
head_dims = st.sampled_from([32, 64, 80, 96, 112, 128, 256])
windows = st.integers(1, 1 << 16)


def _common(draw: st.DrawFn) -> dict[str, Any]:
    doc: dict[str, Any] = {}
    dtype = draw(st.sampled_from(TORCH_DTYPES))
    if dtype is not None:
        doc["torch_dtype"] = dtype
    if draw(st.booleans()):
        doc["max_position_embeddings"] = draw(st.integers(1, 1 << 20))
    return doc


def _heads(draw: st.DrawFn) -> tuple[int, int, int]:
    """(attention heads, KV heads dividing them, head_dim)."""
    kv = draw(st.sampled_from([1, 2, 4, 8, 16, 32]))
    group = draw(st.integers(1, 16))
    return kv * group, kv, draw(head_dims)


# Classes whose num_key_value_heads defaults to num_attention_heads (Qwen2/3 and Mistral default to a
# constant 32 / 8 instead), and whose head_dim defaults to hidden_size // heads (Qwen3's is 128). An unknown
# model_type ("x") must name its KV heads (kvplan guesses no family's defaults for it); its head_dim may come from
# hidden_size.
DERIVED_KV_HEADS = ("llama", "phi3")
DERIVED_HEAD_DIM = ("llama", "mistral", "qwen2", "phi3", "x")


@st.composite
def dense_doc(draw: st.DrawFn) -> Doc:
    """Llama-family GQA/MHA/MQA, head_dim explicit or hidden_size // heads."""
    heads, kv, head_dim = _heads(draw)
    layers = draw(st.integers(1, 160))
    model_type = draw(st.sampled_from(["llama", "mistral", "qwen2", "qwen3", "phi3", "x"]))
    doc = {**_common(draw), "model_type": model_type,
           "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": kv}
    if model_type == "mistral":
        doc["sliding_window"] = None  # MistralConfig's default is a 4096 window; Mistral-7B-Instruct-v0.3 writes null
    if draw(st.booleans()) or model_type not in DERIVED_HEAD_DIM:
        doc["head_dim"] = head_dim
        doc["hidden_size"] = draw(st.integers(1, 1 << 15))
    else:
        doc["hidden_size"] = heads * head_dim
    if draw(st.booleans()) and kv == heads and model_type in DERIVED_KV_HEADS:
        del doc["num_key_value_heads"]  # MHA: KV heads default to the attention heads
    return doc, Expected(layers, heads, kv, head_dim, frozenset({"full"}))


@st.composite
def falcon_doc(draw: st.DrawFn) -> Doc:
    """Falcon/RefinedWeb naming: n_layer, n_head, multi_query (one KV head) or n_head_kv."""
    heads, head_dim, layers = draw(small_pos), draw(head_dims), draw(st.integers(1, 80))
    doc = {**_common(draw), "n_layer": layers, "n_head": heads, "hidden_size": heads * head_dim}
    if draw(st.booleans()):
        doc |= {"model_type": draw(st.sampled_from(["falcon", "RefinedWebModel"])), "multi_query": True}
        kv = 1
    else:
        kv = draw(st.sampled_from([d for d in range(1, heads + 1) if heads % d == 0]))
        doc |= {"model_type": "RefinedWeb", "new_decoder_architecture": True, "n_head_kv": kv}
    return doc, Expected(layers, heads, kv, head_dim, frozenset({"full"}))


@st.composite
def mla_doc(draw: st.DrawFn) -> Doc:
    """DeepSeek-style MLA: one latent of kv_lora_rank + qk_rope_head_dim per token."""
    heads, layers = draw(st.integers(1, 128)), draw(st.integers(1, 96))
    rank = draw(st.sampled_from([128, 256, 512, 1024]))
    rope, nope, v = draw(st.sampled_from([32, 64])), draw(st.sampled_from([64, 128])), draw(st.sampled_from([64, 128]))
    doc = {**_common(draw), "model_type": "deepseek_v3", "num_hidden_layers": layers, "num_attention_heads": heads,
           "num_key_value_heads": heads, "hidden_size": heads * 56, "kv_lora_rank": rank,
           "qk_rope_head_dim": rope, "qk_nope_head_dim": nope, "v_head_dim": v}
    return doc, Expected(layers, heads, heads, 56, frozenset({"full"}), is_mla=True)


@st.composite
def sliding_doc(draw: st.DrawFn) -> Doc:
    """Sliding windows: every layer (Mistral), a Gemma pattern, or explicit layer_types."""
    heads, kv, head_dim = _heads(draw)
    layers, window = draw(st.integers(1, 96)), draw(windows)
    doc = {**_common(draw), "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": kv,
           "head_dim": head_dim, "sliding_window": window}
    style = draw(st.sampled_from(["all", "pattern", "layer_types"]))
    if style == "all":
        doc["model_type"] = "mistral"
        kinds = ["sliding"] * layers
    elif style == "pattern":
        pattern = draw(st.integers(1, 8))
        doc |= {"model_type": "gemma3_text", "sliding_window_pattern": pattern}
        kinds = ["sliding" if (i + 1) % pattern else "full" for i in range(layers)]
    else:
        kinds = draw(st.lists(st.sampled_from(["sliding", "full"]), min_size=layers, max_size=layers))
        names = {"sliding": "sliding_attention", "full": "full_attention"}
        doc |= {"model_type": "gpt_oss", "layer_types": [names[k] for k in kinds]}
    return doc, Expected(layers, heads, kv, head_dim, frozenset(kinds))


@st.composite
def chunked_doc(draw: st.DrawFn) -> Doc:
    """Llama-4 chunked local attention, with or without an explicit no_rope_layers."""
    heads, kv, head_dim = _heads(draw)
    layers = draw(st.integers(1, 64))
    doc = {**_common(draw), "model_type": "llama4_text", "num_hidden_layers": layers, "num_attention_heads": heads,
           "num_key_value_heads": kv, "head_dim": head_dim, "attention_chunk_size": draw(windows)}
    flags = draw(st.none() | st.lists(st.integers(0, 1), min_size=layers, max_size=layers))
    if flags is None:
        flags = [int((i + 1) % 4 != 0) for i in range(layers)]
    else:
        doc["no_rope_layers"] = flags
    kinds = frozenset("chunked" if f else "full" for f in flags)
    return doc, Expected(layers, heads, kv, head_dim, kinds)


@st.composite
def linear_doc(draw: st.DrawFn) -> Doc:
    """Qwen3-Next (gated DeltaNet, full every k-th layer) or Jamba (Mamba, attention every p-th)."""
    heads, kv, head_dim = _heads(draw)
    layers = draw(st.integers(1, 96))
    doc = {**_common(draw), "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": kv,
           "head_dim": head_dim}
    if draw(st.booleans()):
        interval = draw(st.integers(1, 8))
        doc |= {"model_type": "qwen3_next", "full_attention_interval": interval, "linear_conv_kernel_dim": 4,
                "linear_num_key_heads": 16, "linear_num_value_heads": 32, "linear_key_head_dim": 128,
                "linear_value_head_dim": 128}
        kinds = {"linear" if (i + 1) % interval else "full" for i in range(layers)}
    else:
        period = draw(st.integers(1, 8))
        offset = draw(st.integers(0, period - 1))
        doc |= {"model_type": "jamba", "attn_layer_period": period, "attn_layer_offset": offset,
                "mamba_d_state": 16, "mamba_d_conv": 4, "mamba_expand": 2, "hidden_size": heads * head_dim}
        kinds = {"full" if i % period == offset else "linear" for i in range(layers)}
    return doc, Expected(layers, heads, kv, head_dim, frozenset(kinds))


@st.composite
def wrapped(draw: st.DrawFn, inner: st.SearchStrategy[Doc]) -> Doc:
    """A multimodal wrapper: the language model's fields under text_config (or a sibling key)."""
    doc, expected = draw(inner)
    key = draw(st.sampled_from(TEXT_CONFIG_KEYS))
    outer: dict[str, Any] = {"model_type": "wrapper_vlm", key: doc,
                             "vision_config": {"num_hidden_layers": 27, "num_attention_heads": 16}}
    if draw(st.booleans()) and "torch_dtype" in doc:
        outer["torch_dtype"] = doc.pop("torch_dtype")  # the wrapper fills gaps
    return outer, expected


_families = st.one_of(dense_doc(), falcon_doc(), mla_doc(), sliding_doc(), chunked_doc(), linear_doc())


def valid_docs() -> st.SearchStrategy[Doc]:
    return st.one_of(_families, wrapped(_families))


# ------------------------------------------------------------------------------- broken documents

json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True),
                         st.text(max_size=20))
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)
bad_values = st.one_of(
    st.sampled_from([None, 0, -1, -(2**63), 2**31, 2**64, 10**30, 1.5, 0.0, -0.5, float("inf"), float("nan"),
                     "", "32", "abc", True, False, [], [1, 2], {}, {"a": 1}]),
    st.integers(), json_values,
)


def _deep(depth: int) -> Any:
    node: Any = 1
    for _ in range(depth):
        node = [node]
    return node


@st.composite
def mutate(draw: st.DrawFn, doc: dict[str, Any]) -> dict[str, Any]:
    """One to four edits aimed at the keys the loader reads."""
    doc = json.loads(json.dumps(doc))  # deep copy
    target = doc
    for key in TEXT_CONFIG_KEYS:
        if isinstance(doc.get(key), dict) and draw(st.booleans()):
            target = doc[key]
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["delete", "set", "set_known", "model_type", "kv_gt_heads", "layer_types",
                                   "nest", "deep", "zero", "negative", "huge", "wrap_non_dict"]))
        keys = sorted(target) or ["num_hidden_layers"]
        if op == "delete" and target:
            target.pop(draw(st.sampled_from(keys)), None)
        elif op == "set":
            target[draw(st.sampled_from(keys))] = draw(bad_values)
        elif op == "set_known":
            target[draw(st.sampled_from(CONFIG_KEYS))] = draw(bad_values)
        elif op == "model_type":
            target["model_type"] = draw(st.sampled_from(MODEL_TYPES) | st.text(max_size=12) | bad_values)
        elif op == "kv_gt_heads":
            heads = target.get("num_attention_heads", target.get("n_head", 8))
            target["num_key_value_heads"] = (heads if isinstance(heads, int) else 8) * draw(st.integers(2, 4)) + 1
        elif op == "layer_types":
            target["layer_types"] = draw(st.lists(st.sampled_from(["full_attention", "sliding_attention", "mamba",
                                                                   "bogus", "none"]), max_size=10))
        elif op == "nest":
            target[draw(st.sampled_from(TEXT_CONFIG_KEYS))] = draw(st.sampled_from([{}, {"num_hidden_layers": 0},
                                                                                    {"text_config": {}}]))
        elif op == "deep":
            target[draw(st.sampled_from(keys))] = _deep(draw(st.integers(50, 400)))
        elif op in ("zero", "negative", "huge"):
            value = {"zero": 0, "negative": -draw(st.integers(1, 2**40)),
                     "huge": draw(st.integers(10**6, 2**80))}[op]
            target[draw(st.sampled_from(CONFIG_KEYS))] = value
        elif op == "wrap_non_dict":
            target[draw(st.sampled_from(TEXT_CONFIG_KEYS))] = draw(json_scalars)
    return doc


@st.composite
def broken_docs(draw: st.DrawFn) -> dict[str, Any]:
    """A valid document after a few hostile edits, or an arbitrary JSON object."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.dictionaries(st.sampled_from(CONFIG_KEYS) | st.text(max_size=8), json_values, max_size=12))
    doc, _ = draw(valid_docs())
    return draw(mutate(doc))


def _dump(doc: Any) -> bytes:
    return json.dumps(doc).encode()


@st.composite
def config_bytes(draw: st.DrawFn) -> bytes:
    """The bytes of a config file: valid, mutated, truncated, non-UTF-8, non-objects, deep nesting."""
    kind = draw(st.sampled_from(["valid", "broken", "truncated", "latin1", "garbage", "bom", "not_object",
                                 "deep", "utf16"]))
    if kind == "valid":
        return _dump(draw(valid_docs())[0])
    if kind == "broken":
        return _dump(draw(broken_docs()))
    body = _dump(draw(valid_docs())[0])
    if kind == "truncated":
        return body[: draw(st.integers(0, max(0, len(body) - 1)))]
    if kind == "latin1":  # an invalid UTF-8 byte inside a string value
        at = body.index(b'"', 1) + 1 if b'"' in body[1:] else 1
        return body[:at] + draw(st.sampled_from([b"\xff", b"\xe9", b"\xc3\x28", b"\x80"])) + body[at:]
    if kind == "garbage":
        return draw(st.binary(max_size=200))
    if kind == "bom":
        return b"\xef\xbb\xbf" + body
    if kind == "utf16":
        return body.decode().encode("utf-16")
    if kind == "not_object":
        return _dump(draw(json_values.filter(lambda v: not isinstance(v, dict))))
    depth = draw(st.integers(500, 200_000))
    return b"[" * depth + b"]" * draw(st.sampled_from([0, depth]))


# ------------------------------------------------------------------------------- kv_cache arguments

@st.composite
def parallel_args(draw: st.DrawFn) -> dict[str, Any]:
    """tp/pp/dcp/dtype/block/max_model_len/batch for kv_cache, including ones the engines refuse."""
    return {
        "tp": draw(st.sampled_from([1, 1, 2, 3, 4, 8, 16, 0, -2])),
        "pp": draw(st.sampled_from([1, 1, 2, 3, 4, 200, 0])),
        "dcp": draw(st.sampled_from([1, 1, 1, 2, 4, 0])),
        "kv_dtype": draw(st.sampled_from([*KV_DTYPE_NAMES, "FP8", " bf16 ", "int3", ""])),
        "block_size": draw(st.sampled_from([16, 16, 0, 1, 32, 256, -1])),
        "quant_group": draw(st.sampled_from([8, 8, 16, 0, 3])),
        "max_model_len": draw(st.none() | st.integers(-2, 1 << 22)),
        "batch": draw(st.integers(-1, 1024)),
    }

