"""Every cache kind kvplan reads from a real config, hand-derived (issue 10's families).

Each expected number carries its derivation and the transformers or vLLM 0.33 source it follows.
The six failures of issue 10 come first: a string sliding_window_pattern (EXAONE-4), `conv` layers
(LFM2), recurrent state dtypes from the config (Qwen3.5, Nemotron-H), DeepSeek sparse attention's
indexer cache, Gemma-4's global geometry, and a nested text config that leaves fields to the class
defaults (llava).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from catalog import NEEDS_CLASS_DEFAULTS, REFUSED

import kvplan
from kvplan.config import bundled_index, normalize
from kvplan.errors import ConfigError, ShardingError
from kvplan.specs import (
    Composite,
    CrossAttn,
    FullAttn,
    IndexerCache,
    LinearState,
    MLAAttn,
    NoKV,
    SlidingAttn,
)


def _raw(model_id: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(bundled_index()[model_id].read_text())
    return data


def _kinds(model: kvplan.ModelConfig) -> str:
    return "".join({"full": "G", "sliding": "L", "linear": "S", "none": "-"}.get(s.kind, "?") for s in model.layer_specs)


# ---------------------------------------------------------------- 1. EXAONE-4: "LLLG"


@pytest.mark.parametrize("model_id", ["LGAI-EXAONE/EXAONE-4.0-32B", "LGAI-EXAONE/EXAONE-4.5-33B"])
def test_exaone4_string_pattern(model, model_id: str) -> None:
    # sliding_window_pattern "LLLG": L local (sliding 4096), G global, from layer 0, repeated
    # (configuration_exaone4.py); vllm/model_executor/models/exaone4.py:172-192 slides iff
    # layer_types[i] == "sliding_attention". 64 layers = 48 sliding + 16 full, 8 KV heads × 128.
    m = model(model_id)
    assert _kinds(m) == "LLLG" * 16
    # per token: 64 × 8 × (128 + 128) × 2 B = 262,144; 32k tokens: 16 full × 4,096 B × 32,768 + 48 sliding ×
    # 4,096 B × 4,096 = 2,147,483,648 + 805,306,368
    r = kvplan.kv_cache(m, max_model_len=32768)
    assert (r.bytes_per_token, r.bytes_per_sequence) == (262_144, 2_952_790_016)


def test_exaone4_string_pattern_without_layer_types() -> None:
    # the same config with its layer_types removed: the string alone gives the same layers
    raw = _raw("LGAI-EXAONE/EXAONE-4.0-32B")
    raw.pop("layer_types")
    assert _kinds(normalize(raw, model_id="exaone-4", source="exaone-4 without layer_types")) == "LLLG" * 16
    raw["sliding_window_pattern"] = "LLXG"
    with pytest.raises(ConfigError, match="letters L"):
        normalize(raw, model_id="exaone-4", source="exaone-4")


# ---------------------------------------------------------------- 2. LFM2: conv layers


@pytest.mark.parametrize("model_id", ["LiquidAI/LFM2-1.2B", "LiquidAI/LFM2.5-VL-1.6B"])
def test_lfm2_short_conv_layers(model, model_id: str) -> None:
    # LFM2-1.2B names its attention layers in full_attn_idxs [2, 5, 8, 10, 12, 14]; the LFM2.5-VL text
    # config spells the same with layer_types "conv" / "full_attention". ShortConv state
    # (vllm/model_executor/layers/mamba/mamba_utils.py:248-258): (conv_L_cache - 1) × conv_dim =
    # 2 × 2,048 elements × 2 B = 8,192 B per conv layer; attention 8 KV heads × 64 (2,048 / 32).
    m = model(model_id)
    assert _kinds(m) == "SSGSSGSSGSGSGSGS"
    assert m.linear == LinearState(mixer="short_conv", conv_kernel=3, conv_channels=2048, num_state_heads=0,
                                   state_rows=0, state_cols=0)
    r = kvplan.kv_cache(m, max_model_len=4096)
    # 6 × 8 × 128 × 2 B = 12,288 B/token; 4,096 tokens + 10 × 8,192 B of state
    assert (r.bytes_per_token, r.bytes_per_sequence) == (12_288, 12_288 * 4096 + 81_920)


# ---------------------------------------------------------------- 3. recurrent state dtypes


@pytest.mark.parametrize(("model_id", "state_bytes"), [
    # Qwen3.5 reads mamba_ssm_dtype "float32" (vllm/model_executor/models/config.py:953-977): conv
    # 3 × (2 × 16 × 128 + 48 × 128) = 30,720 elements × 2 B = 61,440 + recurrent 48 × 128 × 128 × 4 B
    pytest.param("Qwen/Qwen3.5-27B", 61_440 + 3_145_728, id="qwen3.5-27b"),
    # 35B-A3B: 32 value heads: 3 × 8,192 × 2 = 49,152 + 32 × 128 × 128 × 4 = 2,097,152
    pytest.param("Qwen/Qwen3.5-35B-A3B", 49_152 + 2_097_152, id="qwen3.5-35b-a3b"),
    # Nemotron-H: mamba_ssm_cache_dtype "float32" (config.py:812-840): Mamba-2 conv 3 × (64 × 64 + 2 × 8 × 128)
    # = 18,432 × 2 B = 36,864 + ssm 64 × 64 × 128 × 4 B = 2,097,152
    pytest.param("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", 36_864 + 2_097_152, id="nemotron-3-nano"),
    # Nemotron-H-56B names no dtype: the hook's default is float32 too. conv 3 × (256 × 64 + 2 × 8 × 256) = 61,440
    # × 2 B = 122,880 + ssm 256 × 64 × 256 × 4 B = 16,777,216
    pytest.param("nvidia/Nemotron-H-56B-Base-8K", 122_880 + 16_777_216, id="nemotron-h-56b"),
    # Qwen3-Next has no hook: both in the model dtype. 3 × 8,192 × 2 + 32 × 128 × 128 × 2
    pytest.param("Qwen/Qwen3-Next-80B-A3B-Thinking", 49_152 + 1_048_576, id="qwen3-next"),
])
def test_state_dtype_from_the_config(model, model_id: str, state_bytes: int) -> None:
    group = next(g for g in kvplan.build_layout(model(model_id)).groups if isinstance(g.spec, LinearState))
    assert group.state_bytes_per_layer == state_bytes


def test_ssm_state_dtype_overrides_the_config(model) -> None:
    # --ssm-state-dtype bf16 (vLLM --mamba-ssm-cache-dtype): recurrent 48 × 128 × 128 × 2 B; conv unchanged.
    # --state-dtype fp32 (--mamba-cache-dtype): the conv state in fp32; the recurrent keeps the config's fp32.
    m = model("Qwen/Qwen3.5-27B")
    state = m.linear
    assert state is not None and state.ssm_dtype == "fp32"
    assert kvplan.build_layout(m, ssm_state_dtype="bf16").whole.state_bytes == 48 * (61_440 + 1_572_864)
    assert kvplan.build_layout(m, state_dtype="fp32").whole.state_bytes == 48 * (122_880 + 3_145_728)


def test_kda_recurrent_state_is_fp32(model) -> None:
    # Kimi-Linear KDA (mamba_utils.py:132-149, :295-319): conv 3 × (3 × 32 × 128) × 2 B = 73,728;
    # recurrent 32 × 128 × 128 fp32 = 2,097,152. kda_layers are 1-based: 20 KDA + 7 MLA (576 × 2 B).
    m = model("moonshotai/Kimi-Linear-48B-A3B-Instruct")
    layout = kvplan.build_layout(m)
    assert sum(isinstance(s, LinearState) for s in m.layer_specs) == 20
    assert layout.whole.state_bytes == 20 * (73_728 + 2_097_152)
    assert layout.whole.bytes_per_token() == 7 * 1_152


# ---------------------------------------------------------------- 4. DeepSeek sparse attention


@pytest.mark.parametrize(("kv_dtype", "per_layer"), [
    # bf16: the latent (512 + 64) × 2 B = 1,152 + the indexer key 128 fp8 + 128/128 × 4 B scale = 132
    pytest.param("auto", 1_152 + 132, id="bf16"),
    # fp8 on H100 is FLASHMLA_SPARSE's fp8_ds_mla: 512 + 4 × 4 + 64 × 2 = 656
    # (vllm/model_executor/layers/attention/mla_attention.py:359-375)
    pytest.param("fp8", 656 + 132, id="fp8-ds-mla"),
    # fp8_e4m3 goes to FLASHINFER_MLA_SPARSE_SM90: a plain fp8 latent, 576
    pytest.param("fp8_e4m3", 576 + 132, id="fp8-e4m3"),
])
@pytest.mark.parametrize("model_id", ["deepseek-ai/DeepSeek-V3.2", "zai-org/GLM-5"])
def test_sparse_mla_indexer_cache(model, model_id: str, kv_dtype: str, per_layer: int) -> None:
    m = model(model_id)
    assert set(m.layer_specs) == {Composite(parts=(MLAAttn(kv_lora_rank=512, qk_rope_head_dim=64, sparse=True),
                                                  IndexerCache(head_dim=128)))}
    r = kvplan.kv_cache(m, kv_dtype=kv_dtype, tp=8, max_model_len=1)
    assert r.bytes_per_token == m.num_layers * per_layer == r.bytes_per_token_per_gpu  # all replicated over TP


def test_indexcache_skips_layers() -> None:
    # attention.py:166-200: with index_topk_freq 4 and the default offset 2, layer i keeps an indexer iff
    # max(i - 1, 0) % 4 == 0: layers 0, 1, 5, 9, ...; "S" in index_topk_pattern skips a layer.
    raw = {**_raw("deepseek-ai/DeepSeek-V3.2"), "index_topk_freq": 4}
    m = normalize(raw, model_id="v3.2", source="v3.2 freq 4")
    with_indexer = [i for i, s in enumerate(m.layer_specs) if isinstance(s, Composite)]
    assert with_indexer[:4] == [0, 1, 5, 9] and len(with_indexer) == 2 + 59 // 4
    raw = {**_raw("deepseek-ai/DeepSeek-V3.2"), "index_topk_pattern": "FS" * 30 + "F"}
    m = normalize(raw, model_id="v3.2", source="v3.2 pattern")
    assert [isinstance(s, Composite) for s in m.layer_specs[:4]] == [True, False, True, False]


# ---------------------------------------------------------------- 5. Gemma-4 global geometry


@pytest.mark.parametrize(("model_id", "sliding", "full", "per_token"), [
    # 26B-A4B: sliding 8 KV heads × 256; full layers global_head_dim 512 with num_global_key_value_heads 2
    # (attention_k_eq_v; transformers Gemma4TextConfig.__post_init__, vllm/model_executor/models/gemma4.py:576-590).
    # 25 × 8 × 512 × 2 + 5 × 2 × 1,024 × 2 = 204,800 + 20,480
    pytest.param("google/gemma-4-26B-A4B", (25, 8, 256), (5, 2, 512), 225_280, id="26b-a4b"),
    # 31B: 50 sliding × 16 × 512 × 2 + 10 full × 4 × 1,024 × 2 = 819,200 + 81,920
    pytest.param("nvidia/Gemma-4-31B-IT-NVFP4", (50, 16, 256), (10, 4, 512), 901_120, id="31b"),
])
def test_gemma4_global_layers(model, model_id: str, sliding: tuple[int, int, int], full: tuple[int, int, int],
                              per_token: int) -> None:
    m = model(model_id)
    s = SlidingAttn(num_kv_heads=sliding[1], head_dim=sliding[2], v_head_dim=sliding[2], window=1024)
    f = FullAttn(num_kv_heads=full[1], head_dim=full[2], v_head_dim=full[2])
    assert (m.layer_specs.count(s), m.layer_specs.count(f)) == (sliding[0], full[0])
    assert m.layer_specs[-1] == f  # the last layer is always full
    assert kvplan.kv_cache(m, max_model_len=1, kv_dtype="bf16").bytes_per_token == per_token


def test_checkpoint_kv_cache_scheme_is_auto(model) -> None:
    # NVIDIA's NVFP4 Gemma-4 declares a modelopt kv_cache_scheme of 8-bit floats: vLLM's kv_cache_dtype auto
    # becomes fp8_e4m3 (vllm/utils/torch_utils.py:443-516), half the bf16 bytes: 901,120 / 2
    m = model("nvidia/Gemma-4-31B-IT-NVFP4")
    r = kvplan.kv_cache(m, max_model_len=1)
    assert (m.kv_cache_dtype, r.layout.kv_dtype.name, r.bytes_per_token) == ("fp8_e4m3", "fp8_e4m3", 450_560)
    assert model("deepseek-ai/DeepSeek-V3").kv_cache_dtype is None  # block-fp8 weights, no KV scheme: auto


def test_kv_shared_layers_hold_nothing() -> None:
    # num_kv_shared_layers: the last n layers read an earlier layer's cache (vllm/model_executor/models/
    # gemma4.py:401-493, gemma3n.py:311-400) and hold none, but stay in the PP split.
    raw = _raw("google/gemma-4-26B-A4B")
    raw["text_config"] = {**raw["text_config"], "num_kv_shared_layers": 6}
    m = normalize(raw, model_id="gemma-4 shared", source="gemma-4-26B-A4B, 6 shared layers")
    assert m.layer_specs[24:] == (NoKV(),) * 6 and not isinstance(m.layer_specs[23], NoKV)
    # layers 0-23: 20 sliding + 4 full: 20 × 8,192 + 4 × 4,096 B/token
    assert kvplan.kv_cache(m, max_model_len=1).bytes_per_token == 20 * 8_192 + 4 * 4_096
    assert kvplan.build_layout(m, pp=2).stage_ranges == (range(0, 15), range(15, 30))


# ---------------------------------------------------------------- 6. nested text configs and class defaults


def test_llava_reads_its_text_config_once_class_defaults_exist() -> None:
    # llava-1.5's text_config omits num_hidden_layers, hidden_size and the heads: LlamaConfig's defaults
    # (32 layers, 4,096, 32 heads) apply. kvplan reads the text config over the wrapper; with the defaults in
    # place the model is 32 × 32 × 256 × 2 B = 524,288 B/token (fp16), 4,096 tokens.
    raw = _raw("llava-hf/llava-1.5-7b-hf")
    defaults = {"num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32}
    m = normalize({**raw, "text_config": {**defaults, **raw["text_config"]}}, model_id="llava", source="llava")
    assert (m.num_layers, m.dtype, m.max_model_len) == (32, "fp16", 4096)
    assert kvplan.kv_cache(m, max_model_len=1).bytes_per_token == 524_288
    try:
        kvplan.load_model("llava-hf/llava-1.5-7b-hf")
    except ConfigError as exc:  # until the class-default table exists: the missing field, named
        assert NEEDS_CLASS_DEFAULTS["llava-hf/llava-1.5-7b-hf"] in str(exc)


# ---------------------------------------------------------------- other kinds


def test_nas_per_layer_heads_and_no_op_blocks(model) -> None:
    # Nemotron-NAS (vllm/model_executor/models/nemotron_nas.py:133-161): 31 no_op attention blocks hold
    # nothing; 49 blocks with n_heads_in_group 8: 64 / 8 = 8 KV heads × 128. num_key_value_heads is null.
    m = model("nvidia/Llama-3_3-Nemotron-Super-49B-v1")
    assert m.layer_specs.count(NoKV()) == 31 and m.num_kv_heads == 8
    assert kvplan.kv_cache(m, max_model_len=1).bytes_per_token == 49 * 8 * 256 * 2  # 200,704


def test_nas_refuses_linear_replacement() -> None:
    raw = _raw("nvidia/Llama-3_3-Nemotron-Super-49B-v1")
    raw["block_configs"][3]["attention"].update(replace_with_linear=True, no_op=False, n_heads_in_group=None)
    with pytest.raises(ConfigError, match=r"block_configs\[3\].attention.replace_with_linear"):
        normalize(raw, model_id="nas", source="nas")


@pytest.mark.parametrize(("model_id", "kinds", "per_token", "state"), [
    # MiniMax-M1: attn_type_list, 0 lightning (a (64, 128, 128) state in the model dtype), 1 softmax
    pytest.param("MiniMaxAI/MiniMax-M1-80k", ("SSSSSSSG" * 10), 10 * 8 * 256 * 2, 64 * 128 * 128 * 2, id="minimax-m1"),
    # MiniMax-M2.7: every entry 1: 62 full layers, 8 × 128
    pytest.param("MiniMaxAI/MiniMax-M2.7", "G" * 62, 62 * 8 * 256 * 2, 0, id="minimax-m2.7"),
])
def test_attn_type_list(model, model_id: str, kinds: str, per_token: int, state: int) -> None:
    m = model(model_id)
    assert _kinds(m) == kinds
    layout = kvplan.build_layout(m)
    assert layout.whole.bytes_per_token() == per_token
    assert layout.whole.state_bytes == kinds.count("S") * state


def test_nemotron_layers_block_type_names_the_layers(model) -> None:
    # Nemotron-3-Ultra names no num_hidden_layers: 108 layers_block_type entries (48 mamba, 48 moe, 12 attention)
    m = model("nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16")
    assert (m.num_layers, _kinds(m).count("S"), _kinds(m).count("G"), _kinds(m).count("-")) == (108, 48, 12, 48)


def test_whisper_decoder_self_and_cross_attention(model) -> None:
    # Each decoder layer: self-attention over its tokens and cross-attention over max_source_positions (1,500)
    # encoder frames (vllm/model_executor/models/whisper.py:157-231); 20 heads × 64 (1,280 / 20), fp16.
    m = model("openai/whisper-large-v3")
    assert set(m.layer_specs) == {Composite(parts=(
        FullAttn(num_kv_heads=20, head_dim=64, v_head_dim=64),
        CrossAttn(num_kv_heads=20, head_dim=64, v_head_dim=64, encoder_tokens=1500)))}
    r = kvplan.kv_cache(m, max_model_len=448)
    # 32 × 20 × 128 × 2 B = 81,920 B per decoder token; cross: 32 × 1,500 × 5,120 B per sequence
    assert (r.bytes_per_token, m.max_model_len) == (163_840, 448)
    assert r.bytes_per_sequence == 163_840 * 448 + 32 * 1_500 * 5_120


def test_attention_free_mamba(model) -> None:
    # FalconMamba: Mamba-1 in every layer, conv (4 - 1) × 8,192 + ssm 8,192 × 16, bf16: 311,296 B per layer; the
    # checkpoint's intermediate_size 8,192 (transformers 5 recomputes expand × hidden = 16 × 4,096 for it)
    m = model("tiiuae/falcon-mamba-7b")
    r = kvplan.kv_cache(m, max_model_len=4096, tp=2)
    assert (r.bytes_per_token, r.bytes_per_sequence, r.bytes_per_sequence_per_gpu) == (0, 64 * 311_296, 32 * 311_296)


def test_mamba2_groups_shard_or_replicate(model) -> None:
    # MambaMixer2 (mamba_mixer2.py:316-322): n_groups % tp == 0, or one group replicated on every rank.
    # Nemotron-3-Nano: 8 groups; tp 16 is refused. Granite-4.0-tiny: 1 group; tp 4 holds
    # I / 4 + 2 × d_state conv channels = 768 + 256 per rank (mamba_utils.py:185-211).
    with pytest.raises(ShardingError, match="8 groups"):
        kvplan.kv_cache(model("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"), tp=16, max_model_len=1)
    layout = kvplan.build_layout(model("ibm-granite/granite-4.0-tiny-preview"), tp=4)
    state = next(s for s in layout.specs_per_gpu if isinstance(s, LinearState))
    assert state.conv_elements == 3 * (3_072 // 4 + 2 * 128)


@pytest.mark.parametrize(("model_id", "field"), list(REFUSED.items()))
def test_unmodelled_architectures_refuse_in_one_line(model_id: str, field: str) -> None:
    with pytest.raises(ConfigError, match=f"'{field}'") as info:
        kvplan.load_model(model_id)
    assert "\n" not in str(info.value)


# ---------------------------------------------------------------- families no bundled config has


def _defaults(name: str) -> dict[str, Any]:
    """A transformers config class's defaults (its reference model), as a config.json would hold them."""
    transformers = pytest.importorskip("transformers")
    data: dict[str, Any] = getattr(transformers, name)().to_dict()
    return data


def test_zamba2_mamba_everywhere_attention_in_hybrid_layers() -> None:
    # Zamba2Config defaults: 54 layers, 9 "hybrid" (Mamba-2 + the shared attention block) and 45 Mamba-2; MHA
    # 32 heads × attention_head_dim 160 (not kv_channels 80: vLLM's Zamba2 convertor); Mamba-2 I = 2 × 2,560,
    # 1 group of d_state 64, 8 heads × 640: conv 3 × (5,120 + 128) × 2 B = 31,488 + ssm 8 × 640 × 64 × 2 B =
    # 655,360 per layer (vllm/model_executor/models/zamba2.py:869-898, 642-648)
    m = normalize(_defaults("Zamba2Config"), model_id="zamba2", source="Zamba2Config defaults")
    r = kvplan.kv_cache(m, max_model_len=4096)
    assert r.bytes_per_token == 9 * 32 * 320 * 2
    assert r.layout.whole.state_bytes == 54 * (31_488 + 655_360)


def test_falcon_h1_attention_beside_mamba_in_every_layer() -> None:
    # FalconH1Config defaults: 32 layers, each attention (8 KV heads × 128) and Mamba-2 (mamba_d_ssm 1,024,
    # 128 heads × 8, 1 group of 256, conv 4): conv 3 × (1,024 + 512) × 2 B + ssm 128 × 8 × 256 × 2 B
    m = normalize(_defaults("FalconH1Config"), model_id="falcon-h1", source="FalconH1Config defaults")
    assert all(s.kind == "full+linear" for s in m.layer_specs)
    layout = kvplan.build_layout(m)
    assert (layout.whole.bytes_per_token(), layout.whole.state_bytes) == (32 * 8 * 256 * 2, 32 * (9_216 + 524_288))


def test_jamba_attention_period() -> None:
    # JambaConfig defaults: attention at i % 8 == 4 (4 of 32 layers), Mamba-1 elsewhere: I = 2 × 4,096,
    # conv 3 × 8,192 + ssm 8,192 × 16 elements × 2 B = 311,296 B per layer
    m = normalize(_defaults("JambaConfig"), model_id="jamba", source="JambaConfig defaults")
    assert "".join("G" if s.kind == "full" else "S" for s in m.layer_specs) == "SSSSGSSS" * 4
    assert kvplan.build_layout(m).whole.state_bytes == 28 * 311_296


def test_gemma3n_kv_shared_layers_by_default() -> None:
    # Gemma3nTextConfig: 35 layers, the last num_kv_shared_layers = 15 reuse earlier caches; of the 20 that
    # keep one, layer_types full every 5th: 16 sliding (512) + 4 full, 2 KV heads × 256
    m = normalize(_defaults("Gemma3nTextConfig"), model_id="gemma3n", source="Gemma3nTextConfig defaults")
    assert m.layer_specs[20:] == (NoKV(),) * 15
    assert kvplan.kv_cache(m, max_model_len=1).bytes_per_token == 20 * 2 * 512 * 2


def test_cohere2_sliding_layers_keep_one_more_token() -> None:
    # Cohere2Config defaults: sliding_window 4,096 on 30 of 40 layers; a Cohere sliding layer sees
    # [pos - W, pos], so vLLM passes W + 1 (vllm/model_executor/models/commandr.py:234-244)
    m = normalize(_defaults("Cohere2Config"), model_id="cohere2", source="Cohere2Config defaults")
    assert {s.window for s in m.layer_specs if isinstance(s, SlidingAttn)} == {4_097}


def test_minicpm3_caches_decompressed_heads() -> None:
    # MiniCPM3 has MLA weights but vLLM caches plain K/V per head of qk_nope + qk_rope, V padded to it
    # (vllm/model_executor/models/minicpm3.py:126-176): 40 heads × 2 × (64 + 32) × 2 B per layer
    doc = {"model_type": "minicpm3", "num_hidden_layers": 62, "num_attention_heads": 40, "hidden_size": 2560,
           "num_key_value_heads": 40, "kv_lora_rank": 256, "qk_nope_head_dim": 64, "qk_rope_head_dim": 32,
           "v_head_dim": 64}
    m = normalize(doc, model_id="minicpm3", source="minicpm3 fields")
    assert not m.is_mla and kvplan.kv_cache(m, max_model_len=1).bytes_per_token == 62 * 40 * 192 * 2


def test_mimo_v2_per_type_geometry() -> None:
    # Was refused ("MiMo-V2's sliding layers have their own geometry ... not modelled"); now sized as vLLM 0.33's
    # mimo_v2.py:408-445 builds it. Without a window the sliding layers cannot be sized: the field is named.
    doc = {"model_type": "mimo_v2", "num_hidden_layers": 4, "num_attention_heads": 8, "hidden_size": 512,
           "hybrid_layer_pattern": [0, 1, 1, 0], "swa_head_dim": 192}
    with pytest.raises(ConfigError, match="'sliding_window_size'"):
        normalize(doc, model_id="mimo", source="mimo-v2 fields")
    # full layers: 8 KV heads (MHA default) × (64 + 64); sliding: 2 heads × (192 + 128), window 128:
    # per token 2 × 8 × 128 × 2 B + 2 × 2 × 320 × 2 B = 4,096 + 2,560 = 6,656 B
    m = normalize({**doc, "sliding_window_size": 128, "swa_num_key_value_heads": 2, "swa_v_head_dim": 128},
                  model_id="mimo", source="mimo-v2 fields")
    assert [s.kind for s in m.layer_specs] == ["full", "sliding", "sliding", "full"]
    assert kvplan.kv_cache(m, max_model_len=1).bytes_per_token == 6_656
    assert kvplan.kv_cache(m, max_model_len=1000).bytes_per_sequence == 4_096 * 1000 + 2_560 * 128


def test_unmodelled_architecture_is_refused() -> None:
    doc = {"architectures": ["BailingMoeV2_5ForCausalLM"], "num_hidden_layers": 4, "num_attention_heads": 8,
           "hidden_size": 512, "layer_group_size": 4}
    with pytest.raises(ConfigError, match="'architectures': BailingMoeV2_5ForCausalLM"):
        normalize(doc, model_id="bailing", source="bailing fields")


LLAMA_4 = {"model_type": "llama", "num_hidden_layers": 4, "num_attention_heads": 8, "hidden_size": 512}


@pytest.mark.parametrize(("fields", "message"), [
    pytest.param({"block_configs": [{"attention": {"no_op": True}}]}, "block_configs has 1 entries", id="nas-short"),
    pytest.param({"block_configs": [{"attention": {"n_heads_in_group": "8"}}] * 4}, "n_heads_in_group must divide",
                 id="nas-group-str"),
    pytest.param({"layers_block_type": ["x"] * 4}, "unknown layer type", id="block-type-unknown"),
    pytest.param({"linear_attn_config": {"kda_layers": [0, 9], "num_heads": 2, "head_dim": 8}},
                 "kda_layers must list distinct layer numbers", id="kda-out-of-range"),
    pytest.param({"linear_attn_config": {"kda_layers": [1]}}, "'linear_attn_config.num_heads'", id="kda-no-heads"),
    pytest.param({"sliding_window": 16, "sliding_window_pattern": ""}, "letters L", id="pattern-empty"),
    pytest.param({"attn_type_list": [0, 2, 1, 1]}, "'attn_type_list'", id="attn-type-2"),
    pytest.param({"full_attn_idxs": [7], "conv_L_cache": 3}, "full_attn_idxs must list", id="lfm2-idx"),
    pytest.param({"kv_lora_rank": 512, "qk_rope_head_dim": 64, "index_topk": 8}, "index_head_dim is missing",
                 id="indexer-no-dim"),
    pytest.param({"num_kv_shared_layers": 4}, "leaves no layer", id="all-shared"),
    pytest.param({"architectures": ["Qwen3_5ForCausalLM"], "mamba_ssm_dtype": "floaty",
                  "layer_types": ["linear_attention"] * 4, "linear_num_key_heads": 2, "linear_num_value_heads": 2,
                  "linear_key_head_dim": 8, "linear_value_head_dim": 8, "linear_conv_kernel_dim": 4},
                 "'mamba_ssm_dtype': expected a dtype name", id="ssm-dtype"),
])
def test_malformed_kind_fields_fail_in_one_line(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        normalize({**LLAMA_4, **fields}, model_id="bad", source="bad.json")
    assert str(info.value).startswith("bad.json: ") and "\n" not in str(info.value)
