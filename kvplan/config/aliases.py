"""Model quirks as data: field aliases across config families, hand-written family defaults, model-id aliases.

A new model family is a new row here (plus a configs/ fixture), never a new branch in the
formulas. Sources: vLLM's ``get_total_num_kv_heads`` order and ``derive_max_model_len_and_key``
(``vllm/transformers_utils/model_arch_config_convertor.py``), transformers' config classes.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

# canonical field -> config keys, first non-null wins (order matters).
FIELD_ALIASES: dict[str, tuple[str, ...]] = {
    "num_layers": (
        "num_hidden_layers",
        "n_layer",  # Falcon RefinedWeb, GPT-2, BigCode
        "num_layers",  # ChatGLM
        "n_layers",  # Meta params.json, MPT
    ),
    "num_attention_heads": ("num_attention_heads", "n_head", "n_heads"),  # n_head: Falcon/GPT-2; n_heads: Meta/MPT
    "hidden_size": ("hidden_size", "n_embd", "d_model", "dim"),  # dim: Meta params.json
    # vLLM's order (get_total_num_kv_heads); n_kv_heads is Meta's params.json.
    "num_kv_heads": (
        "n_head_kv",  # Falcon RefinedWeb (40B)
        "num_kv_heads",  # Falcon (in-library)
        "num_key_value_heads",  # Llama, Qwen, Mistral, ...
        "multi_query_group_num",  # ChatGLM (only with multi_query_attention)
        "num_attention_groups",
        "n_kv_heads",  # Meta params.json
        "attn_config.kv_n_heads",  # MPT / DBRX (nested)
    ),
    "head_dim": ("head_dim", "kv_channels", "attention_head_dim"),  # kv_channels: ChatGLM
    "v_head_dim": ("v_head_dim",),
    "kv_lora_rank": ("kv_lora_rank",),
    "qk_rope_head_dim": ("qk_rope_head_dim",),
    "qk_nope_head_dim": ("qk_nope_head_dim",),
    "sliding_window": ("sliding_window", "sliding_window_size"),
    "sliding_window_pattern": ("sliding_window_pattern",),  # Gemma-3 int p; EXAONE-4 "LLLG" (L local, G global)
    "use_sliding_window": ("use_sliding_window",),  # Qwen2/3: window only if true ...
    "max_window_layers": ("max_window_layers",),  # ... and only from this layer on
    "attention_chunk_size": ("attention_chunk_size",),  # Llama-4 chunked local attention
    "no_rope_layers": ("no_rope_layers",),  # Llama-4: 1 = chunked layer
    "full_attention_interval": ("full_attention_interval",),  # Qwen3-Next: every k-th layer is full
    "attn_layer_period": ("attn_layer_period",),  # Jamba: attention every p layers ...
    "attn_layer_offset": ("attn_layer_offset",),  # ... at this offset, Mamba elsewhere
    "layer_types": ("layer_types",),
    "linear_conv_kernel_dim": ("linear_conv_kernel_dim",),  # Qwen3-Next gated DeltaNet
    "linear_num_key_heads": ("linear_num_key_heads",),
    "linear_num_value_heads": ("linear_num_value_heads",),
    "linear_key_head_dim": ("linear_key_head_dim",),
    "linear_value_head_dim": ("linear_value_head_dim",),
    "mamba_d_state": ("mamba_d_state", "ssm_state_size", "state_size"),  # Jamba; Nemotron-H, Granite-4; Mamba
    "mamba_d_conv": ("mamba_d_conv", "conv_kernel"),
    "mamba_expand": ("mamba_expand", "expand"),
    "mamba_num_heads": ("mamba_num_heads", "mamba_n_heads", "n_mamba_heads"),  # Mamba-2: (heads, head_dim, d_state)
    "mamba_head_dim": ("mamba_head_dim", "mamba_d_head", "mamba_headdim"),  # n_mamba_heads, mamba_headdim: Zamba2
    "mamba_n_groups": ("mamba_n_groups", "n_groups", "mamba_ngroups"),  # Mamba-2 B/C groups (conv over x, B and C)
    "hybrid_override_pattern": ("hybrid_override_pattern",),  # Nemotron-H: M mamba, * attention, - / E MLP
    "layers_block_type": ("layers_block_type",),  # Nemotron-H (newer form), Zamba2: one name per layer
    "attn_type_list": ("attn_type_list",),  # MiniMax-M1/M2: 0 lightning (linear) attention, 1 softmax
    "full_attn_idxs": ("full_attn_idxs",),  # LFM2 (first release): attention layers; the others short conv
    "linear_attn_config": ("linear_attn_config",),  # Kimi-Linear: 1-based kda_layers, KDA heads and conv
    "block_configs": ("block_configs",),  # Nemotron-NAS / DeciLM: per-layer attention (no_op, n_heads_in_group)
    "global_head_dim": ("global_head_dim",),  # Gemma-4: full layers' head_dim ...
    "num_global_kv_heads": ("num_global_key_value_heads",),  # ... and KV heads (with attention_k_eq_v)
    "attention_k_eq_v": ("attention_k_eq_v",),
    "num_kv_shared_layers": ("num_kv_shared_layers",),  # Gemma-3n/4: the last n layers reuse earlier KV
    "use_bidirectional_attention": ("use_bidirectional_attention",),  # Gemma-3/4: "all"/true halves the window
    "index_topk": ("index_topk",),  # DeepSeek sparse attention (V3.2, GLM-5): an indexer K cache per layer
    "index_head_dim": ("index_head_dim",),
    "index_topk_freq": ("index_topk_freq",),  # IndexCache: which layers keep an indexer
    "index_topk_pattern": ("index_topk_pattern",),
    "index_skip_topk_offset": ("index_skip_topk_offset",),
    "compress_ratios": ("compress_ratios",),  # DeepSeek-V4 per-layer compression (kvplan.config.compressed)
    "hybrid_layer_pattern": ("hybrid_layer_pattern",),  # MiMo-V2: 1 sliding (swa_* geometry), 0 full
    "cross_attention_layers": ("cross_attention_layers",),
    "vision_config": ("vision_config",),  # mllama: the image tiles a cross-attention layer keeps  # mllama: these layers attend to the image tokens only
    "conv_l_cache": ("conv_L_cache",),  # LFM2 short conv: kernel size (the state keeps L - 1 rows)
    "conv_dim": ("conv_dim",),
    "mamba_d_ssm": ("mamba_d_ssm",),  # Falcon-H1: Mamba inner width (else mamba_expand × hidden_size)
    "decoder_layers": ("decoder_layers",),  # encoder-decoder (Whisper): the decoder holds the cache
    "decoder_attention_heads": ("decoder_attention_heads",),
    "max_source_positions": ("max_source_positions",),  # Whisper: encoder frames a cross-attention keeps
    "is_encoder_decoder": ("is_encoder_decoder",),
    "multi_query": ("multi_query",),  # Falcon / BigCode: one KV head ...
    "new_decoder_architecture": ("new_decoder_architecture",),  # ... unless Falcon's new architecture
    "multi_query_attention": ("multi_query_attention",),  # ChatGLM: multi_query_group_num applies
    "dtype": ("torch_dtype", "dtype"),
    # MTP modules: DeepSeek/GLM/MiMo/Nemotron; Qwen3.5/3.6 (vLLM 0.33 models/qwen3_5_mtp.py:82)
    "num_nextn_predict_layers": ("num_nextn_predict_layers", "mtp_num_hidden_layers"),
    # vLLM derive_max_model_len: the minimum of all of these that are present.
    "max_model_len": (
        "max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
        "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len",
    ),
}

# Fields the weights and budget models read (kvplan.planning.weights, kvplan.planning.profile_run), beyond the
# KV fields above: first present wins.
WEIGHT_FIELDS: dict[str, tuple[str, ...]] = {
    "vocab_size": ("vocab_size", "padded_vocab_size"),  # padded_vocab_size: ChatGLM
    "intermediate_size": ("intermediate_size", "ffn_hidden_size", "n_inner"),  # ffn_hidden_size: ChatGLM
    "tie_word_embeddings": ("tie_word_embeddings",),
    "num_experts": ("n_routed_experts", "num_local_experts", "num_experts"),  # DeepSeek/GLM, Mixtral/gpt-oss, Qwen
    "moe_intermediate_size": ("moe_intermediate_size",),  # absent: experts are intermediate_size wide (Mixtral)
    "num_shared_experts": ("n_shared_experts",),  # DeepSeek/GLM: n × moe_intermediate_size, ungated
    "shared_expert_intermediate_size": ("shared_expert_intermediate_size",),  # Qwen: with a sigmoid gate
    "first_k_dense_replace": ("first_k_dense_replace",),  # DeepSeek/GLM: the first k layers are dense
    "moe_layer_freq": ("moe_layer_freq",),  # DeepSeek: MoE when layer % freq == 0
    "decoder_sparse_step": ("decoder_sparse_step",),  # Qwen MoE: MoE when (layer + 1) % step == 0
    "mlp_only_layers": ("mlp_only_layers",),  # Qwen MoE: dense layers by index
    "q_lora_rank": ("q_lora_rank",),  # MLA: low-rank query (absent/null: one q_proj)
    "linear_num_key_heads": ("linear_num_key_heads",),  # gated DeltaNet (Qwen3-Next)
    "linear_num_value_heads": ("linear_num_value_heads",),
    "linear_key_head_dim": ("linear_key_head_dim",),
    "linear_value_head_dim": ("linear_value_head_dim",),
    "linear_conv_kernel_dim": ("linear_conv_kernel_dim",),
    "num_experts_per_tok": ("num_experts_per_tok", "experts_per_token", "moe_topk"),  # moe_topk: Hunyuan
    "max_position_embeddings": ("max_position_embeddings", "n_positions"),  # rotary cos/sin cache length
    "rope_scaling": ("rope_scaling", "rope_parameters"),  # rope_parameters: transformers 5
    "partial_rotary_factor": ("partial_rotary_factor",),  # rotary on a fraction of head_dim
}

# Class defaults the generated table (config/defaults.py, class_defaults.json) cannot hold, by model_type:
# remote-code classes transformers does not ship. Applied only where the file names none of the field's keys.
WEIGHT_DEFAULTS: dict[str, dict[str, Any]] = {
    "chatglm": {"tie_word_embeddings": False},  # remote ChatGLMConfig: separate output_layer
}

# Nested configs that hold the language model's fields (multimodal wrappers).
TEXT_CONFIG_KEYS = ("text_config", "llm_config", "language_config")

# Class defaults of the KV fields that the generated table (config/defaults.py) cannot hold, by model_type:
# remote-code classes, and patterns that transformers' __init__ turns into layer_types (the table records
# constants only). Applied only where the file names none of the field's keys.
FAMILY_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma2": {"sliding_window_pattern": 2},  # Gemma2Config: even layers sliding
    "gemma3": {"sliding_window_pattern": 6},  # Gemma3TextConfig: kwargs sliding_window_pattern, default 6
    "gemma3_text": {"sliding_window_pattern": 6},
    "cohere2": {"sliding_window_pattern": 4},  # Cohere2Config: kwargs sliding_window_pattern, default 4
    "RefinedWebModel": {"multi_query": True},  # falcon-7b's remote RWConfig
    "RefinedWeb": {"new_decoder_architecture": True},  # falcon-40b: grouped KV via n_head_kv
    "chatglm": {"multi_query_attention": False},  # remote ChatGLMConfig
}

# Fields a config class's __init__ derives from another key when the file names that key: no class default
# then (transformers NemotronHConfig turns hybrid_override_pattern into layers_block_type and takes the
# layer count from layers_block_type's length).
DERIVED_FROM: dict[str, tuple[str, ...]] = {
    "layers_block_type": ("hybrid_override_pattern",),
    "num_layers": ("layers_block_type",),
}

# HF's layer_types strings -> kvplan layer kinds.
LAYER_TYPE_NAMES: dict[str, str] = {
    "full_attention": "full", "attention": "full", "global": "full", "full": "full",
    "sliding_attention": "sliding", "local": "sliding", "sliding": "sliding",
    "chunked_attention": "chunked", "chunked": "chunked",
    "linear_attention": "linear", "mamba": "linear", "linear": "linear",
    "conv": "linear",  # LFM2 short convolution: a conv state per sequence
    "indexed_attention": "full", "deepseek_sparse_attention": "full", "qwen_sparse_attention": "full",
    "hybrid": "hybrid",  # Zamba2 layers_block_type: a Mamba-2 mixer plus the shared attention block
    "moe": "none", "mlp": "none",  # Nemotron-H layers_block_type: feed-forward layers, no cache
    "none": "none",
}

# Config fields that set the recurrent state's dtype when vLLM's mamba_ssm_cache_dtype is auto, by
# architecture: (field, value when the field is absent). vllm/model_executor/models/config.py:812-848
# (NemotronH: mamba_ssm_cache_dtype, default float32) and :953-977 (Qwen3.5: mamba_ssm_dtype).
SSM_DTYPE_HOOKS: dict[str, tuple[str, str | None]] = {
    "NemotronHForCausalLM": ("mamba_ssm_cache_dtype", "float32"),
    "NemotronHPuzzleForCausalLM": ("mamba_ssm_cache_dtype", "float32"),
    "NemotronH_Nano_VL_V2": ("mamba_ssm_cache_dtype", "float32"),
    "Qwen3_5ForCausalLM": ("mamba_ssm_dtype", None),
    "Qwen3_5MoeForCausalLM": ("mamba_ssm_dtype", None),
    "Qwen3_5ForConditionalGeneration": ("mamba_ssm_dtype", None),
    "Qwen3_5MoeForConditionalGeneration": ("mamba_ssm_dtype", None),
}

# model_types kvplan has rules for beyond transformers' config classes (config/defaults.py's table): the bundled
# configs' remote-code types. Any other model_type is unknown: it must name the fields kvplan needs (UNKNOWN_NEEDS) and
# is sized from them with a note, never from Llama's defaults.
KNOWN_MODEL_TYPES = ("chatglm", "RefinedWeb", "RefinedWebModel", "kimi_k2", "minimax_m1", "nemotron-nas",
                     "exaone4_5_text")
# Architectures kvplan has rules for whatever their model_type (AliceAI, MiniMax-M3: no released config).
KNOWN_ARCHITECTURES = ("AliceAIForCausalLM", "MiniMaxM3SparseForCausalLM", "MiniMaxM3SparseForConditionalGeneration")
# (canonical field, what to name) an unknown model_type must give: no head count, KV heads or width is guessed.
UNKNOWN_NEEDS = (("num_layers", "num_hidden_layers"), ("num_attention_heads", "num_attention_heads"),
                 ("num_kv_heads", "num_key_value_heads"), ("head_dim", "head_dim (or hidden_size)"))

# vLLM's architectures by release (first listed, ...): data shared with kvplan.engines.vllm.served
REGISTRY = Path(__file__).resolve().parents[1] / "engines" / "vllm" / "registry.json"

# Architectures whose linear_* fields feed Kimi's KDA layer, not a gated DeltaNet (kvplan.config.state).
KDA_ON_LINEAR_FIELDS = ("AliceAIForCausalLM",)

# Architectures vLLM 0.33 serves whose caches kvplan does not model: refused in one line naming the config's
# `architectures`, never sized with the generic rules. Each row: why (what vLLM builds that kvplan has no rule for,
# with the file that builds it); the release vLLM serves it from is the registry's (``served_from``).
UNMODELLED_ARCHITECTURES: dict[str, str] = {
    "BailingMoeV2_5ForCausalLM": (
        "lightning-attention state beside MLA (bailing_moe_linear.py:68-75, :768-780); its width is config.head_dim, "
        "which transformers' BailingHybridConfig (model_type bailing_hybrid) rewrites to qk_rope_head_dim, and no "
        "released config shows which class a checkpoint gets"),
    "BailingMoeV3ForCausalLM": (
        "KDA state beside MLA (bailing_moe_v3.py:131-158) sized from config.head_dim, which transformers' "
        "BailingHybridConfig rewrites to qk_rope_head_dim; no released config shows which class a checkpoint gets"),
    "BailingMoeV3VLForConditionalGeneration": ("the Bailing V3 text model (KDA beside MLA), see BailingMoeV3ForCausalLM"),
    "Qwen4ExpForCausalLM": (
        "a per-layer-embedding short-conv state not split by TP, and QSA layers with a ring buffer "
        "(CircularBufferSpec) and a compressed key cache beside K/V (models/qwen4_exp/nvidia/model.py:790-898, "
        "common/qsa_cache.py:842-875)"),
    "InklingForCausalLM": (
        "a short-conv cache kept as a sliding-window cache of its own block size on every layer, beside the "
        "attention (models/inkling/nvidia/sconv_swa_attn.py:150-195)"),
    "InklingForConditionalGeneration": ("the Inkling text model's short-conv sliding cache, see InklingForCausalLM"),
    "Glm5NextForCausalLM": (
        "KDA layers beside sparse MLA with a kpool indexer and a ring-buffer tail cache (CircularBufferSpec; "
        "models/glm5next/common/attention.py:79-275)"),
    "DeepseekV41ForCausalLM": (
        "DeepSeek-V4.1's compressed MLA with bounded replay and a ring buffer (CircularBufferSpec; "
        "models/deepseek_v41/compressor.py:231), not DeepSeek-V4's layout"),
    "Step5ForCausalLM": (
        "a sparse summary cache (one 256-byte fp8 summary per 8 tokens) and a CSA tail ring beside DSA "
        "(models/step5/nvidia/sparse_summary_cache.py:116-156)"),
    "Dots3NoteForCausalLM": (
        "DeepSeek sparse MLA with a physical head size override (models/dots3_note/nvidia/model.py:236-239)"),
}

# Config fields whose architecture kvplan does not model: a one-line refusal names the field.
UNMODELLED_FIELDS: dict[str, str] = {
}

# Familiar names -> bundled ids, where the bundled config stands in for a sibling with the same
# architecture (see configs/SOURCES.md).
MODEL_ID_ALIASES: dict[str, str] = {
    "qwen/qwen3-next-80b-a3b": "Qwen/Qwen3-Next-80B-A3B-Thinking",
    "qwen/qwen3-next-80b-a3b-instruct": "Qwen/Qwen3-Next-80B-A3B-Thinking",
    "google/gemma-2-9b": "google/gemma-2-9b-it",
    "google/gemma-3-27b": "google/gemma-3-27b-it",
    "google/gemma-3-27b-pt": "google/gemma-3-27b-it",
    "moonshotai/kimi-k2": "moonshotai/Kimi-K2-Instruct",
    "moonshotai/kimi-k2-base": "moonshotai/Kimi-K2-Instruct",
    "meta-llama/llama-3.1-405b-instruct": "meta-llama/Llama-3.1-405B",
    "meta-llama/llama-3.3-70b-instruct": "meta-llama/Llama-3.1-70B-Instruct",  # Llama-3.3: Llama-3.1-70B's architecture
    "meta-llama/llama-3.3-70b": "meta-llama/Llama-3.1-70B-Instruct",
    "meta-llama/meta-llama-3-8b-instruct": "meta-llama/Meta-Llama-3-8B",
    "deepseek-ai/deepseek-v3.1": "deepseek-ai/DeepSeek-V3",  # V3.1 / V3.1-Terminus: V3's architecture
    "deepseek-ai/deepseek-v3.1-terminus": "deepseek-ai/DeepSeek-V3",
    "google/gemma-4-31b-it": "nvidia/Gemma-4-31B-IT-NVFP4",  # NVIDIA's NVFP4 repo of the same model
    "google/gemma-4-31b": "nvidia/Gemma-4-31B-IT-NVFP4",
    "mistralai/mistral-7b-instruct-v0.1": "mistralai/Mistral-7B-v0.1",
    "mistralai/mixtral-8x7b-instruct-v0.1": "mistralai/Mixtral-8x7B-v0.1",
    "deepseek-ai/deepseek-v3-base": "deepseek-ai/DeepSeek-V3",
    "deepseek-ai/deepseek-v2-lite-chat": "deepseek-ai/DeepSeek-V2-Lite",
}


@cache
def _registry() -> dict[str, list[str | None]]:
    """vLLM's architectures by release: the data of ``kvplan.engines.vllm.served`` (read, not imported)."""
    doc = json.loads(REGISTRY.read_text())
    return dict(doc["architectures"])


def served_from(arch: str) -> str | None:
    """The first vLLM release that lists `arch` (None: not listed, or 0.8.0 and before)."""
    row = _registry().get(arch)
    return row[0] if row else None
