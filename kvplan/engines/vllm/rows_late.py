"""vLLM 0.17 to 0.33 as rows (0.6.4-0.16 and the conventions: ``rows.py``), and the table of every row."""

from __future__ import annotations

from kvplan.engines.vllm.row import Mrv2Rule, VllmRelease
from kvplan.engines.vllm.rows import (
    _V028,
    MXFP4_021,
    MXFP4_024,
    MXFP4_025,
    SORT_V1,
    V0_ROWS,
    V1_010,
    V1_011,
    V1_012,
    V1_013,
    V1_014,
    V1_015,
    V1_016,
    V1_08,
    V1_080,
    V1_09,
    V1_090,
    _after,
)
from kvplan.engines.vllm.rows_accepts import (
    KV_018,
    KV_020,
    KV_025,
    KV_028,
    KV_030,
    KV_032,
    KV_033,
    MTP_017,
    MTP_020,
    MTP_021,
    MTP_028,
    NVFP4_020,
    NVFP4_032,
)

V1_017 = _after(V1_016, "0.17", "0.17.0", (
    ("V1 sampler top-k/top-p by a Triton kernel for >= 8 rows (no sort): bf16 2 + fp32 4 + softmax 4 + exponential "
     "noise 4 = 14 B per logit (derived, not measured) + a kept min(SMs, rows) × vocab fp32 buffer",
     "v1/sample/ops/topk_topp_sampler.py:245-255; v1/sample/ops/topk_topp_triton.py:990-1003"),
    ("-O2 default: FlashInfer all-reduce + RMSNorm fusion at TP > 1 on SM90/SM100, workspace created in the profile "
     "(inside the TP communicator term, sized from 0.19's logs from here on; 0.11's before)",
     "config/vllm.py:113-132, 204, 223; compilation/passes/fusion/allreduce_rms_fusion.py:215"),
    ("Model Runner V2 warmup_kernels after the KV cache", "v1/worker/gpu_worker.py:582"),
    ("speculative decoding: a Mamba-2 layer's conv state keeps kernel − 1 + K rows too (OLMo's GDN in 0.19)",
     "model_executor/layers/mamba/mamba_utils.py:127-150; model_executor/layers/mamba/mamba_mixer2.py:492, 911"),
    ("the start-up check runs on each worker's projected groups against its own memory (still the first group's "
     "blocks only)", "v1/core/kv_cache_utils.py:1327-1360, 1558-1577"),
), sampler="triton", sampler_paths=("sort", "flashinfer", "triton"), start_check="first_group",
    tp_comm_measured_on="0.19", spec_conv_mixers=frozenset({"gdn", "olmo_gdn", "mamba2"}),
    mtp_drafters=MTP_017)
V1_018 = _after(V1_017, "0.18", "0.18.0", (
    ("CUDA-graph memory profiled inside the memory window and logged, subtracted only with "
     "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1 (default 0): 'In v0.19, CUDA graph memory profiling will be "
     "enabled by default'", "v1/worker/gpu_worker.py:384-402, 491; envs.py:1635-1637; v1/worker/gpu_model_runner.py:5592-5691"),
    ("hybrid group size threshold 1.5 × the smallest count", "v1/core/kv_cache_utils.py:956-1075"),
    ("no MLA block forcing: block 16 unless the backend needs another (FLASH_ATTN_MLA on Hopper with auto dtype)",
     "platforms/interface.py:426-474; v1/attention/backend.py:188-197"),
    ("the block size the engine keeps is the smallest group block (an attention-free model's: its Mamba block, "
     "max_model_len without prefix caching)", "v1/engine/core.py:271-275"),
), graph_estimate="logged", group_size_ratio=1.5, mla_block_forced=None, block_size_from_groups=True,
    kv_dtypes=KV_018, block_sizes=None, backend_block_sizes=True)
V1_019 = _after(V1_018, "0.19", "0.19.0", (
    ("--lora-target-modules (LoRAConfig.target_modules); budget rules unchanged from 0.18 (0.19.1 diffed: same)",
     "config/lora.py:46; envs.py:1654-1656"),
    ("the start-up check and its length estimate count every group's blocks on the padded layout: group width × "
     "page × Σ groups' blocks", "v1/core/kv_cache_utils.py:1332-1367, 1370-1400, 1579-1584"),
    ("AWQ linear layers choose their kernel (choose_mp_linear_kernel): Machete on sm90, which keeps the zero "
     "points as -scale × zero in the activation dtype, one per group; Marlin elsewhere (4-bit zeros kept)",
     "model_executor/layers/quantization/awq_marlin.py:392-405; "
     "model_executor/kernels/linear/mixed_precision/machete.py:35, 110-118"),
), lora_target_modules=True, start_check="groups", awq_kernel_chooser=True)
V1_020 = _after(V1_019, "0.20", "0.20.0", (
    ("gpu_memory_utilization default 0.92", "config/cache.py:66"),
    ("CUDA-graph estimate subtracted by default (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=1; its own log says "
     "'default since v0.21.0')", "envs.py:1724-1726; v1/worker/gpu_worker.py:385, 456"),
), gpu_memory_utilization=0.92, graph_estimate="subtracted",
    kv_dtypes=KV_020, nvfp4_capabilities=NVFP4_020, v_padded_to_k=frozenset(), dsv4_block_layout="tuples",
    dsv4_concurrency="bytes", mtp_drafters=MTP_020)
V1_021 = _after(V1_020, "0.21", "0.21.0", (
    ("VLLM_USE_FLASHINFER_SAMPLER default on; the profile runs the V1 sampler twice (FlashInfer, then Triton with "
     "a per-request generator): the peak is the larger pass", "envs.py:726-730; v1/worker/gpu_model_runner.py:5746-5765"),
    ("GPU KV cache size = int(max_concurrency × max_model_len)", "v1/core/kv_cache_utils.py:1686-1715"),
    ("DeepSeek-V4 fp4 experts: TRT-LLM MXFP8 or DeepGEMM FP4 on sm10x, else Marlin",
     "model_executor/layers/fused_moe/oracle/mxfp4.py:253-271"),
), mxfp4=MXFP4_021, sampler="flashinfer+triton", sampler_paths=("sort", "flashinfer", "triton", "flashinfer+triton"),
    legacy_token_log=False,
    mtp_drafters=MTP_021)
V1_022 = _after(V1_021, "0.22", "0.22.0", (
    ("Model Runner V2 default for Qwen3ForCausalLM (dense, unquantized); its penalty state (max_num_seqs × vocab "
     "int32) is allocated before the profile and counted by no term; its graph estimate returns 0",
     "config/vllm.py:69, 492-532; v1/worker/gpu/sample/penalties.py:32-42; v1/worker/gpu/model_runner.py:620-622"),
    ("refusal says \"model's\" and that gpu_memory_utilization also controls CPU memory",
     "v1/core/kv_cache_utils.py:691-728"),
), mrv2=Mrv2Rule(architectures=frozenset({"Qwen3ForCausalLM"}), listed_dense_only=True), refusal="v1-0.22")
V1_023 = _after(V1_022, "0.23", "0.23.0", (
    ("Model Runner V2 default also for LlamaForCausalLM and MistralForCausalLM", "config/vllm.py:69-75, 544-558"),
), mrv2=Mrv2Rule(architectures=frozenset({"LlamaForCausalLM", "MistralForCausalLM", "Qwen3ForCausalLM"}),
                 listed_dense_only=True),
    dsv4_block_layout="buckets")
_MRV2_MOE = frozenset({"DeepseekV2ForCausalLM", "GraniteMoeForCausalLM", "Qwen2MoeForCausalLM"})
V1_024 = _after(V1_023, "0.24", "0.24.0", (
    ("Model Runner V2 default for its listed architectures, MoE or quantized too", "config/vllm.py:68-77, 550-561"),
    ("DeepSeek-V4 fp4 experts on DeepGEMM on sm12x too", "model_executor/layers/fused_moe/experts/deep_gemm_moe.py:423-429"),
), mxfp4=MXFP4_024, mrv2=Mrv2Rule(architectures=_MRV2_MOE | {"LlamaForCausalLM", "MistralForCausalLM", "Qwen3ForCausalLM"}))
V1_025 = _after(V1_024, "0.25", "0.25.0", (
    ("Model Runner V2 default for every model without experts (and the listed MoE ones), not hybrids",
     "config/vllm.py:68-74, 557-574"),
    ("the triton_kernels MXFP4 layout frees the original block scales", "model_executor/layers/fused_moe/oracle/mxfp4.py:1150-1156"),
), mxfp4=MXFP4_025, mrv2=Mrv2Rule(architectures=_MRV2_MOE, any_dense=True, hybrid="never"),
    kv_dtypes=KV_025)
V1_026 = _after(V1_025, "0.26", "0.26.0", (
    ("the logits all-gather goes through PyNccl (created before the snapshot): no TP communicator in the budget",
     "distributed/device_communicators/cuda_communicator.py:341-375"),
    ("sliding-window reserve over max_concurrent_batches × max_num_batched_tokens in-flight tokens (MRV2 with async: "
     "pp + 1; V1 with async: 2 at pp 1, else pp; no async: pp)", "v1/kv_cache_interface.py:567-598; config/vllm.py:512-533"),
    ("hybrids may enable prefix caching (Mamba 'all' mode for SupportsMambaPrefixCaching models, else 'align'); "
     "it stays off by default for them", "config/model.py:1895-1897; engine/arg_utils.py:2520-2522; "
     "model_executor/models/config.py:558-573"),
), tp_comm="none", in_flight="batches",
    mrv2=Mrv2Rule(architectures=_MRV2_MOE | {"InklingForCausalLM", "InklingForConditionalGeneration",
                                             "LongcatFlashNgramForCausalLM"}, any_dense=True, hybrid="never"))
V1_027 = _after(V1_026, "0.27", "0.27.0", (
    ("KV = ceil(total × u) − (free at the snapshot − free after the profile) − (torch peak − torch after): every "
     "persistent buffer counts (MRV2 penalty state included); graph profiling moved out of the window",
     "utils/mem_utils.py:314-326; v1/worker/gpu_worker.py:517"),
    ("Model Runner V2 default also for listed hybrid architectures (KimiK3)", "config/vllm.py:69-101, 637-658"),
), persistent_sampler_buffers=True,
    mrv2=Mrv2Rule(architectures=_MRV2_MOE | {"InklingForCausalLM", "InklingForConditionalGeneration",
                                             "KimiK3ForConditionalGeneration", "LongcatFlashNgramForCausalLM"},
                  any_dense=True, hybrid="listed"),
    dsv4_concurrency="blocks")
V1_028 = _after(V1_027, "0.28", "0.28.0", (
    ("scheduler tier >= 160 GiB: 16384 tokens for serve and LLM, 1024 sequences", "engine/arg_utils.py:2582-2592"),
    ("KV size and concurrency on one log line", "v1/core/kv_cache_utils.py:1861-1875"),
    ("MRV2 default sampler pass does no logits processing (bf16 logits only)",
     "v1/worker/gpu/sample/sampler.py:192-196"),
    ("sliding windows keep extra_retained_tokens (multi-module MTP)", "v1/kv_cache_interface.py:539-544"),
    ("prefix caching on by default for hybrids too, their Mamba states in 'align' mode ('all' only when asked)",
     "engine/arg_utils.py:2650; config/model.py:2072-2074; model_executor/models/config.py:602-604"),
), scheduler=_V028, hybrid_prefix_caching=True, mamba_all_mode_architectures=frozenset(), one_line_log=True,
    mrv2_sampler="bf16", spec_sliding_retained=True,
    kv_dtypes=KV_028, mtp_drafters=MTP_028)
V1_029 = _after(V1_028, "0.29", "0.29.0", (
    ("Model Runner V2 default for all models (V1 only for unsupported features); its CUDA-graph estimate is real",
     "config/vllm.py:644-677; v1/worker/gpu/model_runner.py:896-898"),
    ("the start-up check leaves out the null block; bytes per block = max over groups",
     "v1/core/kv_cache_utils.py:1358-1370, 2214-2367"),
    ("hybrid block = max(kernel block, block size)-aligned, at least 128 with MLA (kvplan's 16-token rule before)",
     "platforms/interface.py:883-916"),
    ("FP8 MoE block scales that do not divide at the TP are refined to gcd(block_n, block_k, I/tp, h) >= 32 "
     "instead of refused", "model_executor/layers/fused_moe/oracle/fp8.py:272-302; "
     "model_executor/layers/quantization/fp8.py:484-520, 566-586"),
), fp8_moe_refine=True, mrv2=Mrv2Rule(every_model=True), mrv2_graph_estimate=True, refusal_null_block=True, hybrid_block_legacy=False,
    dsv4_block_layout="packed")
V1_030 = _after(V1_029, "0.30", "0.30.0", (
    ("V1 Triton top-k/top-p for any row count; MRV2 warmup_kernels before capture; '%s KV cache size' (GPU)",
     "v1/sample/ops/topk_topp_sampler.py:368-378; v1/core/kv_cache_utils.py:2386-2402"),
),
    kv_dtypes=KV_030, dcp_gqa_checked=True, triton_sampler_sorts_few_rows=False)
V1_031 = _after(V1_030, "0.31", "0.31.0", (
    ("allocator max_split_size_mb=20 during the profile (freed workspace blocks released before measuring)",
     "v1/worker/gpu_worker.py:613-627"),
))
V1_032 = _after(V1_031, "0.32", "0.32.0", (
    ("request_memory subtracts externally held weights (not modelled)", "v1/worker/utils.py:716-763"),
    ("Mamba-2 layers add a prefill checkpoint block per request in align mode",
     "model_executor/layers/mamba/mamba_mixer2.py:1100-1108; v1/kv_cache_interface.py:1076-1080"),
    ("M-RoPE caches max_position × a factor the model passes: 1 for Qwen3-VL and Qwen3.5 unless video pruning "
     "is on (4 before, and for the other M-RoPE models)",
     "model_executor/layers/rotary_embedding/__init__.py:39, 123; model_executor/models/qwen3_vl.py:1818-1825; "
     "model_executor/models/qwen3_5.py:165"),
), mamba_checkpoint_mixers=frozenset({"mamba2"}), mrope_per_model=True,
    kv_dtypes=KV_032, nvfp4_capabilities=NVFP4_032, nvfp4_fa2=True)
V1_033 = _after(V1_032, "0.33", "0.33.0", (
    ("cuBLAS/cuBLASLt handles created before the snapshot", "v1/worker/gpu_worker.py:519-531"),
    ("MRV2 profile runs the sampler twice, the second with for_sampler_warmup() params (fp32 + FlashInfer "
     "top-k/top-p)", "v1/worker/gpu/model_runner.py:992-1014"),
    ("an A100 (and GB10) never reaches the >= 70 GiB tier; removed architectures refused",
     "engine/arg_utils.py:2940-3005; model_executor/models/registry.py:841-895"),
    ("Qwen gated DeltaNet on FlashInfer prefill adds a checkpoint block, its 64-token checkpoint grid aligns the "
     "hybrid block", "model_executor/layers/mamba/gdn/qwen_gdn_linear_attn.py:736-760; "
     "model_executor/layers/mamba/abstract.py:98-113"),
), mrv2_sampler="flashinfer", mamba_checkpoint_mixers=frozenset({"mamba2", "gdn"}),
    kv_dtypes=KV_033, kv_dtype_validator=True, small_tier_capabilities=((12, 1),))

V1_ROWS: tuple[VllmRelease, ...] = (
    V1_080, V1_08, V1_090, V1_09, V1_010, V1_011, V1_012, V1_013, V1_014, V1_015, V1_016, V1_017, V1_018, V1_019,
    V1_020, V1_021, V1_022, V1_023, V1_024, V1_025, V1_026, V1_027, V1_028, V1_029, V1_030, V1_031, V1_032, V1_033)
RELEASES: dict[str, VllmRelease] = {r.key: r for r in (*V0_ROWS, *V1_ROWS)}
NEWEST = V1_ROWS[-1].key  # the bare `vllm` plans with it


def first_with(field: str) -> str:
    """The release whose code first has a rule: the release read for the first V1 row whose `field` is set."""
    return next(r.release for r in V1_ROWS if getattr(r, field))
__all__ = ["NEWEST", "RELEASES", "SORT_V1", "V1_ROWS", "first_with"]
