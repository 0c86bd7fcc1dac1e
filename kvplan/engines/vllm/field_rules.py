"""Which of a vLLM release's rules (``VllmRelease.changes``) sets which field of its row (``changes.field_changes``).

``FIELD_RULES`` maps, per release, the opening words of a rule (a substring of its text in ``rows.py`` /
``rows_late.py``) to the fields it sets; a release with one rule sets by it every field it changes but those of
``UNCITED``. ``UNCITED`` holds the fields whose rules the rows do not write in ``changes`` (what a release accepts,
cited in ``rows_accepts.py`` and beside each field in ``row.py``; and a few rules no text names): they cite none.
tests/engines/test_changes.py keeps every substring matching exactly one rule, and every field a V1 release changes
mapped or in ``UNCITED``: a new row field says which rule sets it.
"""

from __future__ import annotations

from kvplan.engines.vllm.row import Change, VllmRelease
from kvplan.engines.vllm.rows import V0_ROWS
from kvplan.engines.vllm.rows_late import V1_ROWS

CHAIN: tuple[VllmRelease, ...] = (*V0_ROWS, *V1_ROWS)  # every row, oldest first (V0, then V1 from 0.8.0)

_SAMPLER = ("compiled", "rows_capped", "full_hidden_at_sampler", "sampled_row_copies", "sampler_paths",
            "sort_bytes_per_logit")
FIELD_RULES: dict[str, dict[str, tuple[str, ...]]] = {
    "0.8.0": {"V1 engine;": ("generation", "absolute_peak", "v0_blocks_label"), "profile run compiled": _SAMPLER,
              "scheduler tier by device name": ("scheduler", "chunked_prefill_always"),
              "refusal in \"GB\"": ("refusal",)},
    "0.8.5": {"scheduler tier by torch total": ("scheduler",), "refusal in GiB": ("refusal",)},
    "0.9.0": {"an A100 never": ("scheduler",), "FlashInfer top-k/top-p when": ("sampler_paths",),
              "torch.rand_like": ("sampled_row_copies",)},
    "0.9.2": {"KV = int(total": ("absolute_peak",), "full T × hidden": ("full_hidden_at_sampler",),
              "hybrid KV cache manager": ("concurrency_from_tokens", "hybrid_kv_cache_manager", "group_size_ratio",
                                          "hybrid_groups_strided"),
              "refusal with the estimated": ("refusal",)},
    "0.10.1.1": {"max_num_seqs capped": ("seqs_capped",), "MXFP4 (gpt-oss)": ("mxfp4_backend", "mxfp4"),
                 "get_max_items": ("encoder_items_rule",)},
    "0.11.0": {"snapshot after the distributed init": ("tp_comm", "tp_comm_measured_on"),
               "--decode-context-parallel-size": ("decode_context_parallel", "hybrid_groups_strided"),
               "expanded to the encoder budget": ("encoder_padded_to_budget",),
               "Gated-DeltaNet": ("spec_conv_mixers",)},
    "0.12.0": {"bundled triton_kernels": ("mxfp4_backend", "mxfp4"), "hybrid group size": ("group_size_ratio",),
               "Hopper MLA blocks": ("mla_block_multiples",), "no extra LoRA": ("lora_extra_vocab", "kv_offloading"),
               "SupportsMambaPrefixCaching": ("mamba_all_mode_architectures",)},
    "0.13.0": {"conserving_memory": ("refusal",), "no longer expanded": ("encoder_padded_to_budget",)},
    "0.14.0": {"ceil(total": ("usable_rounding",), "async scheduling on": ("async_scheduling", "async_with_pp"),
               "round(x, 2)": ("refusal",), "whole model's padded groups": ("start_check",)},
    "0.15.0": {"pp > 1 too": ("async_with_pp",),
               "draft-model": ("spec_methods", "lookahead_methods", "spec_state_blocks"),
               "MistralForCausalLM": ("lora_embedding_families",), "every modality": ("text_only_skips_towers",),
               "mamba_cache_mode 'align'": ("mamba_align_mode",), "every sm10x": ("mxfp4",)},
    "0.16.0": {"Qwen3 and Qwen3-MoE": ("lora_embedding_families",), "shared_head": ("mtp_head_shared",)},
    "0.17.0": {"Triton kernel": ("sampler", "sampler_paths"), "-O2 default": ("tp_comm_measured_on",),
               "Mamba-2 layer's conv": ("spec_conv_mixers",), "projected groups": ("start_check",)},
    "0.18.0": {"CUDA-graph memory profiled": ("graph_estimate",), "threshold 1.5": ("group_size_ratio",),
               "no MLA block forcing": ("mla_block_forced",), "smallest group block": ("block_size_from_groups",)},
    "0.19.0": {"--lora-target-modules": ("lora_target_modules",), "every group's blocks": ("start_check",),
               "AWQ linear layers": ("awq_kernel_chooser",)},
    "0.20.0": {"default 0.92": ("gpu_memory_utilization",), "CUDA-graph estimate subtracted": ("graph_estimate",)},
    "0.21.0": {"VLLM_USE_FLASHINFER_SAMPLER": ("sampler", "sampler_paths"), "int(max_concurrency": ("legacy_token_log",),
               "DeepSeek-V4 fp4": ("mxfp4",)},
    "0.22.0": {"Model Runner V2 default for Qwen3": ("mrv2",), "\"model's\"": ("refusal",)},
    "0.23.0": {"Model Runner V2 default also": ("mrv2",)},
    "0.24.0": {"MoE or quantized too": ("mrv2",), "sm12x": ("mxfp4",)},
    "0.25.0": {"every model without experts": ("mrv2",), "frees the original": ("mxfp4",)},
    "0.26.0": {"PyNccl": ("tp_comm",), "sliding-window reserve": ("in_flight",)},  # its MRV2 list: no rule text
    "0.27.0": {"every persistent buffer counts": ("persistent_sampler_buffers",),
               "listed hybrid architectures": ("mrv2",)},
    "0.28.0": {"scheduler tier >= 160 GiB": ("scheduler",), "one log line": ("one_line_log",),
               "no logits processing": ("mrv2_sampler",), "extra_retained_tokens": ("spec_sliding_retained",),
               "prefix caching on by default for hybrids": ("hybrid_prefix_caching", "mamba_all_mode_architectures")},
    "0.29.0": {"for all models": ("mrv2", "mrv2_graph_estimate"), "null block": ("refusal_null_block",),
               "hybrid block = max(kernel block": ("hybrid_block_legacy",), "FP8 MoE block scales": ("fp8_moe_refine",)},
    "0.30.0": {"any row count": ("triton_sampler_sorts_few_rows",)},
    "0.32.0": {"prefill checkpoint block per request": ("mamba_checkpoint_mixers",), "M-RoPE": ("mrope_per_model",)},
    "0.33.0": {"sampler twice": ("mrv2_sampler",), "Qwen gated DeltaNet": ("mamba_checkpoint_mixers",),
               "GB10": ("small_tier_capabilities",)},
}
# What a release accepts before it plans (rows_accepts.py cites where each is read), DeepSeek-V4's block layout
# (deepseek_v4.py), and the rules no text of their release names (0.8.0's MLA block forcing, 0.9.0's speculative
# methods and encoder items, 0.26's Model Runner V2 list).
UNCITED = frozenset({
    "kv_dtypes", "kv_dtype_validator", "lora_ranks", "lora_ranks_literal", "block_sizes", "backend_block_sizes",
    "nvfp4_capabilities", "nvfp4_fa2", "dcp_gqa_checked", "data_parallel", "expert_parallel", "v_padded_to_k",
    "dsv4_block_layout", "dsv4_concurrency", "fp8_merged_relaxed", "mtp_drafters",
    "mla_block_forced", "mla_block_multiples", "spec_methods", "lookahead_methods", "encoder_items_rule", "mrv2"})


def rules_setting(row: VllmRelease, field: str) -> tuple[Change, ...]:
    """The rules of `row` that set `field`: those ``FIELD_RULES`` maps it to, else a one-rule release's rule (a field
    of ``UNCITED``: none)."""
    mapped = [words for words, names in FIELD_RULES.get(row.release, {}).items() if field in names]
    if mapped:
        return tuple(c for c in row.changes if any(words in c.rule for words in mapped))
    return row.changes if len(row.changes) == 1 and field not in UNCITED else ()
