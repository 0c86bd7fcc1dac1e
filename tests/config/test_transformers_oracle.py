"""Every bundled config, read by kvplan and by transformers' own config classes, must agree.

transformers is the oracle nobody here wrote: `AutoConfig.from_pretrained(<folder>)` on the bundled
folder (local files only, remote code never), then `cache_utils.get_layer_types_and_kwargs` — the
function DynamicCache itself uses to pick each layer's cache class and window. Compared: layers,
per-layer kinds, sliding window, and for non-MLA models KV heads and head_dim (with the modeling
files' rule `head_dim or hidden_size // num_attention_heads`). For MLA (kv_lora_rank set) the latent
dims are compared instead: transformers' head_dim (64) and KV heads (128) for DeepSeek-V3 describe the
decompressed per-head view it caches, not the latent engines store (engines.md §1.2, §4). KV heads and
head_dim are compared per attention layer: Gemma-4's full layers take their own (transformers'
`per_layer_config`).

Configs transformers loads only with remote code are built into the in-library class that runs the
same architecture, with the field mapping written out next to each builder. NOT_IN_TRANSFORMERS lists
the bundled configs whose architecture transformers does not have (they are checked by hand-derived
tests instead).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # read by huggingface_hub at import: set it first

import pytest
import torch
import transformers
from catalog import sized_ids
from transformers import (
    AutoConfig,
    DeepseekV3Config,
    FalconConfig,
    GlmConfig,
    KimiLinearConfig,
    MiniMaxConfig,
    PreTrainedConfig,
)
from transformers.cache_utils import get_layer_types_and_kwargs
from transformers.models.falcon.modeling_falcon import FalconAttention

import kvplan
from kvplan.config import bundled_index
from kvplan.formulas.layers import layer_specs
from kvplan.specs import AttnSpec, ChunkedAttn, CompressedMLA, IndexerCache, SlidingAttn, SlidingMLA, parts

# transformers' layer_types strings -> kvplan's layer kinds (written here, not taken from kvplan's
# own alias table, so a wrong row there cannot agree with itself).
HF_LAYER_KINDS = {
    "full_attention": "full",
    "sliding_attention": "sliding",
    "chunked_attention": "chunked",
    "linear_attention": "linear",  # gated DeltaNet, Mamba, KDA
    "conv": "linear",  # LFM2 short convolution
    "indexed_attention": "full",  # DeepSeek sparse attention (GLM-5): full attention with an indexer
    "dummy": "none",  # Nemotron-H MLP / MoE layers
}


@dataclass(frozen=True)
class Derived:
    """What a config says about the KV cache, in kvplan's vocabulary."""

    num_layers: int
    layer_kinds: tuple[str, ...]
    windows: frozenset[int]  # windows of the sliding/chunked layers (empty when none)
    heads: tuple[tuple[int, int], ...] | None = None  # (KV heads, head_dim) per attention layer; None for MLA
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    qk_nope_head_dim: int | None = None
    v_head_dim: int | None = None  # MLA only: the V width of the decompressed view


def _raw(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def _from_hf(cfg: PreTrainedConfig, *, num_kv_heads: int | None = None, head_dim: int | None = None) -> Derived:
    """Derived fields of a transformers config (its decoder text config)."""
    text = cfg.get_text_config(decoder=True)
    types, kwargs = get_layer_types_and_kwargs(text)  # what DynamicCache(config=...) dispatches on
    windows = frozenset(kw["sliding_window"] for kw in kwargs if "sliding_window" in kw)
    kinds = tuple(HF_LAYER_KINDS[t] for t in types)
    if getattr(text, "kv_lora_rank", None):
        return Derived(
            num_layers=text.num_hidden_layers, layer_kinds=kinds, windows=windows,
            kv_lora_rank=text.kv_lora_rank, qk_rope_head_dim=text.qk_rope_head_dim,
            qk_nope_head_dim=text.qk_nope_head_dim, v_head_dim=text.v_head_dim,
        )
    heads = tuple(_hf_heads(text, i, num_kv_heads, head_dim) for i, kind in enumerate(kinds) if kind not in
                  ("linear", "none"))
    return Derived(num_layers=text.num_hidden_layers, layer_kinds=kinds, windows=windows, heads=heads)


def _hf_heads(text: Any, layer: int, num_kv_heads: int | None, head_dim: int | None) -> tuple[int, int]:
    """(KV heads, head_dim) of one attention layer: the layer's own config where transformers keeps one
    (per_layer_config), else the modeling files' `head_dim or hidden_size // num_attention_heads`."""
    per_layer = getattr(text, "per_layer_config", None)
    cfg = per_layer[layer] if per_layer else text
    hf_head_dim = getattr(cfg, "head_dim", None) or text.hidden_size // text.num_attention_heads
    return (num_kv_heads if num_kv_heads is not None else cfg.num_key_value_heads,
            head_dim if head_dim is not None else hf_head_dim)


# --------------------------------------------------------------------------- remote-code configs


def _falcon_rw(raw: dict[str, Any]) -> Derived:
    """Falcon RefinedWeb (the RWConfig format of the 2023 releases) -> in-library FalconConfig.

    Mapping (what tiiuae did when moving the checkpoints into the library): n_layer ->
    num_hidden_layers, n_head -> num_attention_heads, n_head_kv -> num_kv_heads; model_type
    "RefinedWeb" (40B) is new_decoder_architecture=True, "RefinedWebModel" (7B) is False with its
    multi_query flag. The KV heads and head_dim are read off a FalconAttention built on the meta
    device, i.e. the modeling rule `num_kv_heads if (new_decoder_architecture or not multi_query)
    else 1`, not the config's defaulted num_kv_heads (= 71 for 7B).

    Engine-vs-transformers: with new_decoder_architecture, FalconAttention.forward broadcasts K/V to
    all 128 query heads *before* `layer_past.update`, so HF's cache for Falcon-40B holds 128 heads;
    vLLM (engines.md §1.2: n_head_kv first) and kvplan hold the 8 real KV heads.
    """
    cfg = FalconConfig(
        num_hidden_layers=raw["n_layer"], num_attention_heads=raw["n_head"], hidden_size=raw["hidden_size"],
        num_kv_heads=raw.get("n_head_kv"), multi_query=raw.get("multi_query", True),
        new_decoder_architecture=raw["model_type"] == "RefinedWeb",
    )
    with torch.device("meta"):
        attention = FalconAttention(cfg, layer_idx=0)
    return _from_hf(cfg, num_kv_heads=attention.num_kv_heads, head_dim=attention.head_dim)


def _chatglm(raw: dict[str, Any]) -> Derived:
    """ChatGLM2/3 (remote ChatGLMConfig) -> in-library GlmConfig, the same attention design.

    ChatGLM's SelfAttention caches `multi_query_group_num` groups when multi_query_attention is
    set (else one per attention head), each of `kv_channels` wide, over `num_layers` layers; the
    GlmConfig fields that carry those are num_key_value_heads, head_dim, num_hidden_layers.
    chatglm3-6b: 28 layers, 2 groups, kv_channels 128 (hidden 4096 / 32 heads happens to be 128 too).
    """
    groups = raw["multi_query_group_num"] if raw.get("multi_query_attention") else raw["num_attention_heads"]
    cfg = GlmConfig(
        num_hidden_layers=raw["num_layers"], num_attention_heads=raw["num_attention_heads"],
        hidden_size=raw["hidden_size"], num_key_value_heads=groups, head_dim=raw["kv_channels"],
    )
    return _from_hf(cfg)


def _kimi_k2(raw: dict[str, Any]) -> Derived:
    """Kimi-K2 (model_type kimi_k2, remote code) declares DeepseekV3ForCausalLM and uses DeepSeek-V3's
    field names: build DeepseekV3Config from the same fields."""
    fields = {k: v for k, v in raw.items() if k not in ("model_type", "auto_map", "architectures")}
    return _from_hf(DeepseekV3Config(**fields))


def _minimax_m1(raw: dict[str, Any]) -> Derived:
    """MiniMax-M1 (model_type minimax_m1, remote code) -> in-library MiniMaxConfig, the same
    lightning/softmax hybrid: its `attn_type_list` (0 lightning, 1 softmax) is MiniMaxConfig's
    `layer_types` (linear_attention / full_attention)."""
    kinds = ["linear_attention" if t == 0 else "full_attention" for t in raw["attn_type_list"]]
    fields = {k: v for k, v in raw.items() if k not in ("model_type", "auto_map", "architectures", "attn_type_list")}
    return _from_hf(MiniMaxConfig(**fields, layer_types=kinds))


def _kimi_k3(raw: dict[str, Any]) -> Derived:
    """Kimi-K3 (model_type kimi_k3, remote code) wraps a kimi_linear text config: build
    transformers' KimiLinearConfig from it."""
    text = {k: v for k, v in raw["text_config"].items() if k not in ("model_type", "auto_map", "architectures")}
    return _from_hf(KimiLinearConfig(**text))


REMOTE_CODE: dict[str, Callable[[dict[str, Any]], Derived]] = {
    "tiiuae/falcon-7b": _falcon_rw,
    "tiiuae/falcon-40b": _falcon_rw,
    "THUDM/chatglm3-6b": _chatglm,
    "THUDM/chatglm2-6b": _chatglm,
    "moonshotai/Kimi-K2-Instruct": _kimi_k2,
    "MiniMaxAI/MiniMax-M1-80k": _minimax_m1,
    "moonshotai/Kimi-K3": _kimi_k3,
}
# Bundled architectures transformers does not implement: no class to compare with.
NOT_IN_TRANSFORMERS = {
    "nvidia/Llama-3_3-Nemotron-Super-49B-v1": "nemotron-nas (DeciLM) runs remote code only; tests/config/test_kinds.py",
    "deepseek-ai/DeepSeek-V4-Flash": "compressed and sliding latents, no K/V heads: test_deepseek_v4_matches_transformers",
    "XiaomiMiMo/MiMo-V2-Flash": "heads and K/V widths per kind, window + 1 in transformers: test_mimo_v2_matches_transformers",
}


def transformers_view(model_id: str, path: Path) -> Derived:
    if model_id in REMOTE_CODE:
        return REMOTE_CODE[model_id](_raw(path))
    return _from_hf(AutoConfig.from_pretrained(str(path.parent), trust_remote_code=False))


def kvplan_view(model_id: str) -> Derived:
    m = kvplan.load_model(model_id)
    specs = layer_specs(m)
    windows = frozenset(s.window if isinstance(s, SlidingAttn) else s.chunk_size
                        for s in specs if isinstance(s, (SlidingAttn, ChunkedAttn)))
    assert {m.sliding_window, m.attention_chunk_size} - {None} == set(windows)
    common = dict(num_layers=m.num_layers, layer_kinds=m.layer_kinds, windows=windows)
    if m.is_mla:
        return Derived(**common, kv_lora_rank=m.kv_lora_rank, qk_rope_head_dim=m.qk_rope_head_dim,
                       qk_nope_head_dim=m.qk_nope_head_dim, v_head_dim=m.mla_v_head_dim)
    attention = [next(p for p in parts(s) if isinstance(p, AttnSpec)) for s, kind in zip(specs, m.layer_kinds,
                 strict=True) if kind not in ("linear", "none")]
    assert all(a.v_head_dim == a.head_dim for a in attention)  # no bundled non-MLA model has a separate V width
    return Derived(**common, heads=tuple((a.num_kv_heads, a.head_dim) for a in attention))


def _short_id(model_id: str) -> str:
    return model_id.rpartition("/")[2].lower()


BUNDLED = [(k, p) for k, p in bundled_index().items() if k in sized_ids() and k not in NOT_IN_TRANSFORMERS]


@pytest.mark.parametrize(("model_id", "path"), [pytest.param(k, p, id=_short_id(k)) for k, p in BUNDLED])
def test_kvplan_matches_transformers(model_id: str, path: Path) -> None:
    assert kvplan_view(model_id) == transformers_view(model_id, path)


def test_deepseek_v4_matches_transformers() -> None:
    """DeepSeek-V4: transformers' DeepseekV4Config turns the legacy compress_ratios into layer_types and
    compress_rates; vLLM takes max(1, compress_rates[layer_type]) per layer (vllm/models/deepseek_v4/
    attention.py:238-242). Compared: each layer's ratio, the window, the latent's width and rotary part, the
    indexer key's width."""
    model_id = "deepseek-ai/DeepSeek-V4-Flash"
    cfg = AutoConfig.from_pretrained(str(bundled_index()[model_id].parent), trust_remote_code=False)
    theirs = [max(1, cfg.compress_rates.get(t, 0)) for t in cfg.layer_types]
    m = kvplan.load_model(model_id)
    caches = [parts(s) for s in m.layer_specs]
    assert [next((p.ratio for p in c if isinstance(p, CompressedMLA)), 1) for c in caches] == theirs
    sliding = {p for c in caches for p in c if isinstance(p, SlidingMLA)}
    assert sliding == {SlidingMLA(head_dim=cfg.head_dim, rope_dim=cfg.qk_rope_head_dim, window=cfg.sliding_window)}
    keys = {p.head_dim for c in caches for p in c if isinstance(p, IndexerCache)}
    assert keys == {cfg.index_head_dim} and m.num_layers == cfg.num_hidden_layers == len(caches)


def test_mimo_v2_matches_transformers() -> None:
    """MiMo-V2: transformers' MiMoV2FlashConfig gives each layer's type, and per type the KV heads and K and V widths
    (swa_* for sliding layers). Its cache window is sliding_window_size + 1 (the config class adds one; DynamicCache
    keeps window − 1 tokens of it); vLLM takes sliding_window_size itself (vllm/model_executor/models/mimo_v2.py:
    408-429), and so does kvplan."""
    model_id = "XiaomiMiMo/MiMo-V2-Flash"
    cfg = AutoConfig.from_pretrained(str(bundled_index()[model_id].parent), trust_remote_code=False)
    types, kwargs = get_layer_types_and_kwargs(cfg)
    theirs = [(HF_LAYER_KINDS[t], cfg.swa_num_key_value_heads, cfg.swa_head_dim, cfg.swa_v_head_dim,
               kw["sliding_window"] - 1) if t == "sliding_attention" else
              (HF_LAYER_KINDS[t], cfg.num_key_value_heads, cfg.head_dim, cfg.v_head_dim, None)
              for t, kw in zip(types, kwargs, strict=True)]
    ours = [(s.kind, s.num_kv_heads, s.head_dim, s.v_head_dim, s.window if isinstance(s, SlidingAttn) else None)
            for s in kvplan.load_model(model_id).layer_specs if isinstance(s, AttnSpec)]
    assert ours == theirs and len(ours) == cfg.num_hidden_layers


# vLLM's dtype=auto (engines.md §1.3): fp32 checkpoints are served in bf16, kvplan notes it.
HF_DTYPES = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "bf16"}


@pytest.mark.parametrize(("model_id", "path"),
                         [pytest.param(k, p, id=_short_id(k)) for k, p in BUNDLED if k not in REMOTE_CODE])
def test_dtype_and_max_len_match_transformers(model_id: str, path: Path) -> None:
    """The model dtype (KV dtype "auto") and the max length, where transformers has them.

    A multimodal wrapper (Gemma-3) keeps the dtype on the wrapper, not the text config. A config
    with no dtype at all (gpt-oss) gives transformers nothing to compare; vLLM's dtype=auto serves
    such a checkpoint in bf16 (engines.md §1.3), which kvplan assumes and says so in a note. An
    attention-free model (FalconMamba) has no position limit: none to compare.
    """
    cfg = AutoConfig.from_pretrained(str(path.parent), trust_remote_code=False)
    text = cfg.get_text_config(decoder=True)
    m = kvplan.load_model(model_id)
    hf_dtype = text.dtype or cfg.dtype
    if hf_dtype is None:
        assert m.dtype == "bf16" and any("no torch_dtype" in note for note in m.notes)
    else:
        assert m.dtype == HF_DTYPES[hf_dtype]
        assert (hf_dtype == torch.float32) == any("served as bf16" in note for note in m.notes)
    # Whisper's decoder: max_target_positions learned positions (vLLM's derive_max_model_len reads it too).
    # Command-R's model_max_length (131,072) wins over its 8,192 positions in vLLM, and so in kvplan.
    limit = getattr(text, "max_position_embeddings", None) or getattr(text, "max_target_positions", None)
    assert m.max_model_len == (_raw(path).get("model_max_length") or limit)


@pytest.mark.parametrize("model_id", [pytest.param(k, id=_short_id(k)) for k in REMOTE_CODE])
def test_remote_code_list_is_exact(model_id: str) -> None:
    """The hand-built configs above are needed: AutoConfig refuses these without remote code.
    (Every other bundled config loads in the parametrized test above, so the list is exact; if a
    transformers release adds one of these in-library, this fails and the builder can go.)"""
    with pytest.raises(ValueError, match=r"trust_remote_code|custom code"):
        AutoConfig.from_pretrained(str(bundled_index()[model_id].parent), trust_remote_code=False)


def test_oracle_covers_every_family() -> None:
    """The comparison is not vacuous: the bundled set spans every kind the oracle distinguishes."""
    views = [transformers_view(k, p) for k, p in BUNDLED]
    kinds = {kind for v in views for kind in v.layer_kinds}
    assert {"full", "sliding", "linear"} <= kinds
    assert any(v.kv_lora_rank for v in views)
    assert any(v.heads and {h for h, _ in v.heads} == {1} for v in views)  # Falcon-7B MQA
    assert any(v.heads and len(set(v.heads)) > 1 for v in views)  # Gemma-4: per-layer geometry
    assert len(BUNDLED) >= 80


def test_falcon_40b_hf_cache_heads_differ_from_engines() -> None:
    """The documented difference in _falcon_rw, checked rather than asserted in prose: HF's Falcon
    new-decoder attention caches K/V broadcast to every query head."""
    raw = _raw(bundled_index()["tiiuae/falcon-40b"])
    cfg = FalconConfig(num_hidden_layers=1, num_attention_heads=8, num_kv_heads=2, hidden_size=64,
                       new_decoder_architecture=True, vocab_size=32)
    model = transformers.FalconForCausalLM(cfg).eval()
    with torch.no_grad():
        cache = model(torch.zeros(1, 3, dtype=torch.long), use_cache=True).past_key_values
    assert cache.layers[0].keys.shape[1] == 8  # all query heads, not the 2 KV heads
    assert raw["n_head_kv"] == kvplan.load_model("tiiuae/falcon-40b").num_kv_heads == 8
