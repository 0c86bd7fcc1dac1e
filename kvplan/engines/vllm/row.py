"""What one vLLM release row holds: the ``VllmRelease`` dataclass and the small records it is built from.

A row is data read from that release's Python (paths relative to the installed ``vllm/`` package); the rows
themselves are in ``rows.py``, the functions that read them in ``releases.py``. Every field is a rule some
release introduced; ``changes`` says, for each release, which rules are new in it and where its code has them.
"""

from __future__ import annotations

from typing import Literal

from kvplan.engines.version import Version
from kvplan.records import Record

GIB = 1024**3
# vLLM V1's NCCL memory by when its budget sees it (CommRule), per group, from the non-torch memory real logs print
# (estimates: NCCL's own allocations, not vLLM's code). "init" (0.8-0.10: every communicator is growth after the
# snapshot, NCCL_CUMEM_ENABLE=0): TP 2 on an H200 1.38 GiB of non-torch growth (vllm-v0102-qwen3-next-80b-a3b-tp2-h200)
# -> 1.33 per group beside the 0.05 baseline; a TP-2 A100 0.69 GiB of activation + non-torch where TP 1 has 0.56
# (vllm-v01011-qwen2-7b-*-a100-80gb) and TP 8 on L40S 0.17-0.21 GiB (vllm-v0102-qwen3-235b-a22b-fp8-tp8-l40s) -> 0.13.
# "profile" (0.11-0.25: the TP group's torch communicator, created by the profile's logits all-gather, with cuMem and
# NVLS now allowed), sized by release (VllmRelease.tp_comm_measured_on): issue 21's vLLM 0.19 H100 runs log 2.06-2.21 GiB per
# GPU at TP 2-4 (0.07 with PP only), the midpoint taken, for 0.17-0.25 (0.17 adds the -O2 FlashInfer all-reduce
# fusion workspace, created in the profile at TP > 1 on SM90/SM100: 0.17.0 config/vllm.py:113-132, 204); vLLM
# 0.11.0 H100 runs (the llm-d memory profiles, tests/data/vllm-0.11-h100-profiles.json) log 0.54-0.55 GiB of
# non-torch growth at TP 2 where TP 1 logs 0.13-0.14: 0.41 per GPU (the means), for 0.11-0.16 (no fusion workspace;
# no 0.12-0.16 log measured); without NVLS (L40S TP2 0.16, vllm-v0160-llama3-70b-awq-tp2-l40s) a plain group's 0.13.
# Keyed by (when, the release whose logs measured it, NVLS; "" for "init"), read by releases.comm_rule.
COMM_GROUP_BYTES: dict[tuple[str, str, bool], int] = {
    ("init", "", True): int(1.33 * GIB), ("init", "", False): int(0.13 * GIB),
    ("profile", "0.19", True): int(2.13 * GIB), ("profile", "0.19", False): int(0.13 * GIB),
    ("profile", "0.11", True): int(0.41 * GIB), ("profile", "0.11", False): int(0.13 * GIB)}
# The wording of the start-up check: V0; V1 0.8.0 ("GB", no estimate); 0.8.5-0.9.0 (estimate dropped); 0.9.2-0.12
# (%.2f GiB); 0.13 (+ docs link); 0.14-0.21 (round(x, 2), estimate glued to "Try"); 0.22 on ("model's", CPU notes).
RefusalStyle = Literal["v0", "v1-0.8.0", "v1-0.8", "v1", "v1-0.13", "v1-0.14", "v1-0.22"]
# Default top-k/top-p path of the V1 runner's profile sampler: PyTorch sort; FlashInfer; vLLM's Triton kernel
# (0.17 on, no sort); both, one pass each (0.21 on).
SamplerPath = Literal["sort", "flashinfer", "triton", "flashinfer+triton"]
# What the start-up check (and the binary search for its estimated maximum length) counts for one request:
# "layers": every cache module's own max_memory_usage_bytes, unpadded (0.8.0-0.13 check_enough_kv_cache_memory,
# 0.13.0 v1/core/kv_cache_utils.py:664-720, called per worker at :1340); "model_first_group": the whole model's
# groups, group width × page × the FIRST group's blocks, against the smallest worker's memory (0.14-0.16
# _max_memory_usage_bytes_from_groups, 0.14.0 :1318-1351, called at :1514-1523); "first_group": the same on each
# worker's projected groups (0.17-0.18, 0.17.0 :1327-1360, called at :1572-1577); "groups": each worker's padded
# groups, group width × page × every group's blocks (0.19 on: 0.19.0 :1332-1367, called at :1579-1584; 0.29.0
# :2041-2070 bytes per block = the largest group's, called at :2331-2336; 0.33.0 v1/core/kv_cache_planning.py:1253-1285).
StartCheck = Literal["layers", "model_first_group", "first_group", "groups"]


class Change(Record):
    """One rule a release has that the release before it did not, and where its code has it."""

    rule: str
    source: str  # release and file:line


class SchedulerTier(Record):
    """One row of the default max_num_batched_tokens / max_num_seqs table (``engine/arg_utils.py``)."""

    min_memory_bytes: int  # torch total memory of the GPU class
    excludes_a100: bool  # an A100 falls through to the next tier (0.9.0 on)
    serve: tuple[int, int]  # `vllm serve`: (max_num_batched_tokens, max_num_seqs)
    llm: tuple[int, int]  # the LLM class
    names: tuple[str, ...] = ()  # 0.8.0: the tier is picked by device name (h100, h200), not memory


class Mrv2Rule(Record):
    """Which models run on Model Runner V2 (``v1/worker/gpu/``) without VLLM_USE_V2_MODEL_RUNNER
    (``config/vllm.py`` ``_is_default_v2_model_runner_model``); a model with an unsupported feature falls back."""

    architectures: frozenset[str] = frozenset()
    every_model: bool = False  # 0.29 on
    listed_dense_only: bool = False  # 0.22-0.23: a listed architecture, neither MoE nor quantized
    any_dense: bool = False  # 0.25 on: any model without experts, or a listed one
    hybrid: Literal["never", "listed", "yes"] = "yes"  # Mamba/linear-attention hybrids: never (0.25-0.26)


Capability = tuple[int, int]  # CUDA compute capability as vLLM reads it: (9, 0) = sm90, (12, 1) = sm121


class MoeBackendRule(Record):
    """One entry of a release's MXFP4 MoE backend priority: the backend, the compute capabilities it runs on
    (``low`` up to, not including, ``high``) and a package it needs that may be missing ("": none), with kvplan's
    guess of whether it is there."""

    backend: str  # marlin | triton | flashinfer_trtllm | deepgemm
    low: Capability
    high: Capability
    optional: str = ""
    assumed_present: bool = True  # kvplan's guess for the optional package (the pick is then an estimate)


class Mxfp4Rule(Record):
    """Which MXFP4 MoE backend a release picks by compute capability (the first entry that runs on the GPU), for
    gpt-oss-style experts (quant_method mxfp4, bf16 activations) and for DeepSeek-V4's fp4 experts, and what the
    triton_kernels layout keeps."""

    gpt_oss: tuple[MoeBackendRule, ...]
    deepseek_v4: tuple[MoeBackendRule, ...] = ()
    triton_keeps_scales: bool = False  # the original block scales stay beside the swizzled ones (0.10-0.24)
    source: str


class VllmRelease(Record):
    """One vLLM release as data: its defaults, what its budget subtracts and what it accepts (``rows.py``)."""

    key: str  # what follows `vllm@`
    label: str  # EnginePlan.version
    # the engine that runs: V0 (LLMEngine, worker/worker.py; vLLM 0.8 keeps it behind VLLM_USE_V1=0) or V1
    # (v1/engine/core.py, the default from 0.8.0)
    generation: Literal["V0", "V1"]
    release: str = ""  # the version whose code the row was read from ("" for V0 rows)
    gpu_memory_utilization: float
    usable_rounding: Literal["floor", "ceil"]  # total × u: int() before 0.14, ceil (request_memory) from 0.14
    absolute_peak: bool  # torch peak and non-torch are absolute device values (context included), not growth
    # NCCL memory the budget sees: every communicator (the snapshot precedes the distributed init, 0.9.2-0.10;
    # V0), the TP group's communicator created lazily by the profile's logits all-gather (0.11-0.25), none (0.26 on)
    tp_comm: Literal["all", "lazy", "none"] = "all"
    # whose logs size that lazy communicator: 0.11's (no all-reduce fusion workspace in the profile, 0.11-0.16) or
    # 0.19's (the -O2 FlashInfer all-reduce fusion at TP > 1 on SM90/SM100 from 0.17 creates its workspace there too)
    tp_comm_measured_on: Literal["0.11", "0.19"] = "0.19"
    graph_estimate: Literal["none", "logged", "subtracted"] = "none"  # CUDA graphs before the KV cache (V1 runner)
    persistent_sampler_buffers: bool  # Model Runner V2 penalty state (max_num_seqs × vocab int32) counts (0.27 on)
    compiled: bool  # V1 runs the profile forward through torch.compile unless enforce_eager
    rows_capped: bool  # sampler rows = min(max_num_seqs, max_num_batched_tokens) (V1); V0: max_num_seqs
    full_hidden_at_sampler: bool
    sampled_row_copies: int
    sampler: str  # default top-k/top-p path of the profile run (SamplerPath, or "v0")
    sampler_paths: tuple[str, ...]  # paths the release can take
    sort_bytes_per_logit: float
    mrv2: Mrv2Rule | None = None  # models on Model Runner V2 by default (None: opt-in only)
    mrv2_sampler: Literal["gumbel", "bf16", "flashinfer"] = "gumbel"  # MRV2's profile sampler pass
    mrv2_graph_estimate: bool = False  # MRV2 profile_cudagraph_memory estimates (0.29 on; 0 before)
    scheduler: tuple[SchedulerTier, ...]  # first tier the GPU reaches
    seqs_capped: bool = False  # max_num_seqs = min(default, max_num_batched_tokens) (0.10.1 on)
    chunked_prefill_always: bool  # V1; V0 chunks only past 32k (then max_num_batched_tokens = max_model_len)
    async_scheduling: bool
    async_with_pp: bool = True  # 0.14 turns async scheduling off with pp > 1
    in_flight: Literal["one", "batches"] = "one"  # sliding reserve: one batch, or max_concurrent_batches (0.26 on)
    legacy_token_log: bool  # "GPU KV cache size" = num_blocks // groups × block (before 0.21)
    one_line_log: bool = False  # size and concurrency on one line (0.28 on)
    concurrency_from_tokens: bool  # V0, 0.8, 0.9.0: num_blocks × block / max_model_len; later: blocks / per request
    hybrid_kv_cache_manager: bool  # sliding layers keep their window (0.9.2 on); before, every layer is full
    group_size_ratio: float | None = 1.5  # hybrid group size: max count if max < ratio × min, else min (None: min)
    hybrid_groups_strided: bool = True  # groups take every n-th layer of a type (0.11 on); contiguous runs before
    refusal: RefusalStyle
    refusal_null_block: bool = False  # the check leaves out one block, the null block (0.29 on)
    mxfp4_backend: str | None  # default MoE backend for MXFP4 experts on Hopper (a GPU without a capability)
    mxfp4: Mxfp4Rule | None = None  # the MXFP4 MoE backend by compute capability (None: no MXFP4 experts)
    fp8_moe_refine: bool = False  # FP8 MoE block scales that do not divide at the TP are refined, not refused (0.29 on)
    # AWQ linear layers pick their kernel with choose_mp_linear_kernel, Machete first on sm90 (0.19 on; before,
    # Marlin always): Machete keeps the zero points pre-multiplied by the scales, in the activation dtype
    awq_kernel_chooser: bool = False
    mrope_per_model: bool = False  # M-RoPE caches max_position × the model's factor (0.32 on), else × 4
    mla_block_forced: int | None = None  # Hopper MLA (FlashMLA) block size forced when none fits it (before 0.18)
    mla_block_multiples: bool = True  # a given multiple of the forced size is kept (0.12 on)
    # Mamba states under prefix caching: hybrids turn it on by default (0.28 on); what it gives a model without
    # Mamba "all" support: one state block per request as without it (before 0.15: 0.12-0.14 switch prefix caching
    # off for it), or "align" (0.15 on: two state blocks, plus a prefill checkpoint block for the mixers listed);
    # the architectures that get mamba_cache_mode "all" instead (SupportsMambaPrefixCaching, 0.12-0.27; kvplan does
    # not model "all" and refuses them); the 16-token hybrid block rule (before 0.29) or the kernel-block one
    hybrid_prefix_caching: bool = False
    mamba_align_mode: bool = False
    mamba_checkpoint_mixers: frozenset[str] = frozenset()
    mamba_all_mode_architectures: frozenset[str] = frozenset()
    hybrid_block_legacy: bool = True
    start_check: StartCheck = "layers"  # what the start-up check counts for one request (StartCheck above)
    block_size_from_groups: bool = False  # the logged block size is the smallest group's (0.18 on; before the config's)
    mla_absorbed_weights: bool = False
    decode_context_parallel: bool = False  # --decode-context-parallel-size exists (0.11 on)
    v0_blocks_label: str = "GPU"  # V0 "# GPU blocks" (0.6), "# CUDA blocks" (0.7), "# cuda blocks" (0.8)
    # Speculative decoding (V1): methods kvplan follows, those whose drafted tokens get KV slots ahead of the
    # target's (scheduler num_lookahead_tokens), and the reserve rules for Mamba states and sliding windows.
    spec_methods: tuple[str, ...] = ()
    lookahead_methods: tuple[str, ...] = ()
    spec_state_blocks: bool = False  # MambaSpec.num_speculative_blocks counted in max_memory_usage_bytes (0.15 on)
    spec_sliding_retained: bool = False  # SlidingWindowSpec.extra_retained_tokens (multi-module MTP, 0.28 on)
    mtp_head_shared: bool = False  # an MTP module's shared_head.head is the target's lm_head (0.16 on)
    spec_conv_mixers: frozenset[str] = frozenset()  # linear mixers whose conv state keeps K more rows (0.11 GDN)
    # LoRA: families whose embed_tokens/lm_head get slots (models' embedding_modules), extra adapter vocabulary
    lora_embedding_families: frozenset[str] = frozenset({"llama", "mistral", "mixtral"})
    lora_extra_vocab: int = 256
    lora_target_modules: bool = False  # --lora-target-modules exists (0.19 on)
    # Multimodal profile run (V1): None = not modelled; cdiv (0.9) or floor (get_max_items, 0.10 on)
    encoder_items_rule: Literal["cdiv", "floor"] | None = None
    encoder_padded_to_budget: bool = False  # 0.11-0.12 expand each item's output to the encoder budget's rows
    text_only_skips_towers: bool = False  # every modality limited to 0: the towers are not built (0.15 on)
    kv_offloading: bool = False  # --kv-offloading-size (native CPU tier through the OffloadingConnector, 0.12 on)
    # What the release accepts before it plans (checks.py, parallel.py; the names and sources: rows_accepts.py):
    # the KV cache dtype names (None: not checked), refused by config/cache.py's validator (0.33) rather than as
    # argparse choices; LoRA ranks, as the MaxLoRARanks literal's choices (0.12 on) rather than LoRAConfig's check;
    # --block-size choices (None: any, or the backends decide: backend_block_sizes, 0.18 on); the compute
    # capabilities a backend takes nvfp4 KV on (an int: the whole major) and FlashInfer's FA2 path refusing head 64
    # and sinks (0.32 on); GQA decode context parallel checked (0.30 on); --data-parallel-size (0.8.5 on) and
    # --enable-expert-parallel (V1) exist
    kv_dtypes: tuple[str, ...] | None = None
    kv_dtype_validator: bool = False
    lora_ranks: tuple[int, ...] | None = None
    lora_ranks_literal: bool = False
    block_sizes: tuple[int, ...] | None = None
    backend_block_sizes: bool = False
    nvfp4_capabilities: tuple[Capability | int, ...] = ()
    nvfp4_fa2: bool = False
    dcp_gqa_checked: bool = False
    data_parallel: bool = False
    expert_parallel: bool = False
    # Family rules (families.py): architectures whose V is padded to the K width; compute capabilities kept on the
    # smallest scheduler tier whatever their memory
    v_padded_to_k: frozenset[str] = frozenset()
    small_tier_capabilities: tuple[Capability, ...] = ()
    # DeepSeek-V4 (deepseek_v4.py): how one block id of its groups is sized, and what a request reserves
    dsv4_block_layout: Literal["packed", "buckets", "tuples"] = "packed"
    dsv4_concurrency: Literal["blocks", "bytes"] = "blocks"
    fp8_merged_relaxed: bool = False  # a merged FP8 layer whose partitions' blocks do not divide passes (0.14 on)
    triton_sampler_sorts_few_rows: bool = True  # the Triton top-k/top-p sorts under 8 rows (before 0.30)
    # the models (model_type or architecture) that have an MTP drafter (None: the release's MTP is not checked)
    mtp_drafters: frozenset[str] | None = None
    changes: tuple[Change, ...] = ()  # the rules new in this release (see rows.py)
    source: str

    @property
    def version(self) -> tuple[int, ...]:
        """The release read, as numbers (0.19.0 -> (0, 19, 0)); () for V0 rows."""
        return Version.parse(self.release).parts
