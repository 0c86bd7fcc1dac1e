"""Every vLLM release kvplan follows, as rows: V0 (0.6.4-0.8) and V1 from 0.8.0 to 0.33.

Each V1 row is the previous one plus the rules its release introduced (``changes``: the rule and the file:line
of the release that first has it, paths relative to the installed ``vllm/`` package), read by diffing the
extracted wheels of adjacent releases. Minor releases map to the row of their ``.0`` release except where a
patch release changed a rule kvplan follows: "0.8" is 0.8.5 (0.8.0 has its own row: tiers by device name,
1024 sequences on every GPU, "GB" in its refusal), "0.9" is 0.9.2 (0.9.0 has its own row: it still sizes the
budget the 0.8 way and has no hybrid KV cache manager), "0.10" is 0.10.1.1. Patch releases in between (0.8.1-0.8.4,
0.9.1, 0.10.0, 0.10.2, 0.x.y) take their minor's row; what kvplan does not model is said in ``changes``.
"""

from __future__ import annotations

from typing import Any

from kvplan.engines.version import Version
from kvplan.engines.vllm.row import GIB, Change, MoeBackendRule, Mxfp4Rule, SchedulerTier, VllmRelease
from kvplan.engines.vllm.rows_accepts import (
    BLOCKS_012,
    BLOCKS_08,
    BLOCKS_09,
    E4,
    KV_010,
    KV_011,
    KV_012,
    LORA_012,
    LORA_08,
    MTP_010,
    MTP_011,
    MTP_016,
    MTP_09,
)

# Bytes per logit at the sampler's peak. Sort: bf16 logits 2 + fp32 copy 4 + sorted values 4 + int64
# indices 8 + radix-sort scratch: 38.0 measured on an H100 (torch 2.11); V0's sampler (same sort, plus
# softmax and log-softmax copies) 38.7, the mean of four sampler-bound V0 logs (38.45-39.17). FlashInfer
# top-k/top-p: bf16 2 + fp32 4 + mask and probabilities, 14-16 measured.
FLASHINFER_BYTES_PER_LOGIT = 15.0
SORT_V1, SORT_V0 = 38.0, 38.7

_SMALL = SchedulerTier(min_memory_bytes=0, excludes_a100=False, serve=(2048, 256), llm=(8192, 256))
_V0 = (SchedulerTier(min_memory_bytes=0, excludes_a100=False, serve=(2048, 256), llm=(2048, 256)),)
_V1_080 = (SchedulerTier(min_memory_bytes=0, excludes_a100=False, serve=(8192, 1024), llm=(16384, 1024),
                         names=("h100", "h200")),
           SchedulerTier(min_memory_bytes=0, excludes_a100=False, serve=(2048, 1024), llm=(8192, 1024)))
_V1_08 = (SchedulerTier(min_memory_bytes=70 * GIB, excludes_a100=False, serve=(8192, 1024), llm=(16384, 1024)),
          _SMALL)
_V1 = (SchedulerTier(min_memory_bytes=70 * GIB, excludes_a100=True, serve=(8192, 1024), llm=(16384, 1024)), _SMALL)
_V028 = (SchedulerTier(min_memory_bytes=160 * GIB, excludes_a100=False, serve=(16384, 1024), llm=(16384, 1024)),
         *_V1)
_SPEC = ("eagle", "eagle3", "mtp", "ngram")
# Architectures whose class declares SupportsMambaPrefixCaching (0.12.0-0.27.0 model_executor/models/*.py; Bamba
# until 0.23, its model file gone in 0.24), with the registry's aliases of those classes (0.22.0 model_executor/models/registry.py:110, 181): under
# prefix caching they cache states per block: 0.12-0.14 with mamba_block_size = block_size (0.12.0
# model_executor/models/config.py:292-303), 0.15-0.27 as mamba_cache_mode "all" (0.15.0 models/config.py:332-337).
MAMBA_ALL_MODE = frozenset({"BambaForCausalLM", "FalconH1ForCausalLM", "FalconMambaForCausalLM",
                            "GraniteMoeHybridForCausalLM", "JambaForCausalLM", "Mamba2ForCausalLM", "MambaForCausalLM",
                            "NemotronHForCausalLM", "NemotronHPuzzleForCausalLM", "Zamba2ForCausalLM"})

# MXFP4 MoE backends by compute capability, in each release's priority order. Marlin runs from sm80 (Mxfp4Config
# min capability 80); triton_kernels on sm90 up to sm10x; FlashInfer's TRT-LLM MoE on sm100 (0.10-0.14: 10.0
# exactly, then the 10.x family); DeepGEMM's FP4 grouped GEMM for DeepSeek-V4 on sm10x (and sm12x from 0.24).
_ANY, _SM90_UP = ((8, 0), (99, 0)), ((9, 0), (99, 0))
_MARLIN = MoeBackendRule(backend="marlin", low=_ANY[0], high=_ANY[1])
_FI_100 = MoeBackendRule(backend="flashinfer_trtllm", low=(10, 0), high=(10, 1), optional="flashinfer")
_FI_10X = MoeBackendRule(backend="flashinfer_trtllm", low=(10, 0), high=(11, 0), optional="flashinfer")
_TRITON = MoeBackendRule(backend="triton", low=(9, 0), high=(11, 0))
MXFP4_010 = Mxfp4Rule(
    gpt_oss=(_FI_100, MoeBackendRule(backend="triton", low=_SM90_UP[0], high=_SM90_UP[1], optional="triton_kernels",
                                     assumed_present=False), _MARLIN), triton_keeps_scales=True,
    source="0.10.1.1 model_executor/layers/quantization/mxfp4.py:35-61, 123-135, 154-186 (triton_kernels is an "
           "optional package: without it every GPU but sm100 runs Marlin; 0.11.0 mxfp4.py:59-107 the same), "
           ":387-420 (the triton layout keeps the original scales)")
MXFP4_012 = Mxfp4Rule(gpt_oss=(_FI_100, _TRITON, _MARLIN), triton_keeps_scales=True,
                      source="0.12.0 model_executor/layers/quantization/mxfp4.py:107-174 (triton_kernels bundled: "
                             "utils/import_utils.py:431-438), :747-785 (the original scales are kept)")
MXFP4_015 = Mxfp4Rule(gpt_oss=(_FI_10X, _TRITON, _MARLIN), triton_keeps_scales=True,
                      source="0.15.0 model_executor/layers/quantization/mxfp4.py:106-173 (the sm10x family)")
MXFP4_021 = Mxfp4Rule(
    gpt_oss=MXFP4_015.gpt_oss, triton_keeps_scales=True,
    deepseek_v4=(MoeBackendRule(backend="flashinfer_trtllm", low=(10, 0), high=(11, 0), optional="flashinfer"),
                 MoeBackendRule(backend="deepgemm", low=(10, 0), high=(11, 0)), _MARLIN),
    source="0.21.0 model_executor/layers/fused_moe/oracle/mxfp4.py:253-271 (DeepSeek-V4: TRT-LLM MXFP8, DeepGEMM "
           "FP4 on sm10x, Marlin)")
MXFP4_024 = Mxfp4Rule(
    gpt_oss=MXFP4_015.gpt_oss, triton_keeps_scales=True,
    deepseek_v4=(*MXFP4_021.deepseek_v4[:1], MoeBackendRule(backend="deepgemm", low=(10, 0), high=(11, 0)),
                 MoeBackendRule(backend="deepgemm", low=(12, 0), high=(13, 0)), _MARLIN),
    source="0.24.0 model_executor/layers/fused_moe/experts/deep_gemm_moe.py:423-429 (DeepGEMM FP4 on sm12x too)")
MXFP4_025 = Mxfp4Rule(gpt_oss=MXFP4_015.gpt_oss, deepseek_v4=MXFP4_024.deepseek_v4,
                      source="0.25.0 model_executor/layers/fused_moe/oracle/mxfp4.py:304-346, 439-661 (gpt-oss: "
                             "TRT-LLM, triton, Marlin; DeepSeek-V4: TRT-LLM MXFP8, DeepGEMM, Marlin; the triton "
                             "layout frees the original scales: :1150-1156)")


def _derived(prev: VllmRelease, **fields: Any) -> VllmRelease:
    """`dataclasses.replace(prev, **fields)` without re-running ``__init__`` over the row's ~100 fields (a row has no
    ``__post_init__``, so the copy is the same row): 60-70 µs a row, the start-up cost of the ~35 rows."""
    if not fields.keys() <= prev.__dataclass_fields__.keys():  # the few given, not the row's ~100, looked up
        unknown = fields.keys() - prev.__dataclass_fields__.keys()
        raise TypeError(f"VllmRelease has no field {sorted(unknown)[0]!r}")
    values = prev.__dict__.copy()  # a dict's copy clones its table; updating an instance's dict key by key is 3x slower
    values.update(fields)
    row = object.__new__(type(prev))
    object.__setattr__(row, "__dict__", values)  # the row is frozen: its dict is set as __init__ sets a field
    return row


V0_065 = VllmRelease(
    key="0.7", label="vLLM 0.7 (V0 engine)", generation="V0", gpu_memory_utilization=0.9, usable_rounding="floor",
    absolute_peak=False, persistent_sampler_buffers=False, compiled=False, rows_capped=False,
    full_hidden_at_sampler=True, sampled_row_copies=0, sampler="sort", sampler_paths=("sort", "flashinfer"),
    sort_bytes_per_logit=SORT_V0, scheduler=_V0, chunked_prefill_always=False, async_scheduling=False,
    legacy_token_log=True, concurrency_from_tokens=True, hybrid_kv_cache_manager=False, refusal="v0",
    mxfp4_backend=None, mla_absorbed_weights=True, v0_blocks_label="CUDA",
    source="worker/worker.py determine_num_available_blocks (snapshot before distributed init: "
           "KV = total × u − weights − torch peak growth − non-torch growth); model_runner.py profile_run "
           "(max_num_seqs prompts over max_num_batched_tokens, eager); MLA weights absorbed at load (0.7.1)")
V0_ROWS = (
    _derived(V0_065, key="0.6.4", label="vLLM 0.6.4 (V0 engine)", absolute_peak=True, mla_absorbed_weights=False,
            v0_blocks_label="GPU",
            source="worker/worker.py 0.6.4 (KV = total × u − absolute torch peak − (used − reserved) after the "
                   "profile: the CUDA context counts)"),
    _derived(V0_065, key="0.6.5", label="vLLM 0.6.5 (V0 engine)", mla_absorbed_weights=False, v0_blocks_label="GPU"),
    _derived(V0_065, key="0.6.6", label="vLLM 0.6.6 (V0 engine)", mla_absorbed_weights=False, v0_blocks_label="GPU"),
    V0_065,
    _derived(V0_065, key="0.8-v0", label="vLLM 0.8 (V0 engine)", mla_absorbed_weights=False, v0_blocks_label="cuda",
            kv_dtypes=E4, lora_ranks=LORA_08, block_sizes=BLOCKS_08, data_parallel=True),
)

# Where each release's budget and profile run are (v1/worker/gpu_worker.py determine_available_memory,
# v1/worker/gpu_model_runner.py profile_run and _dummy_sampler_run), the row's `source`.
_SITES = {
    "0.8.0": ("139-186", "1321-1409"), "0.8.5": ("164-212", "1584-1659"), "0.9.0": ("167-214", "1827-1905"),
    "0.9.2": ("187-236", "2202-2285"), "0.10.1.1": ("221-280", "2566-2633"), "0.11.0": ("221-302", "3325-3403"),
    "0.12.0": ("281-366", "4284-4370"), "0.13.0": ("297-382", "4424-4487"), "0.14.0": ("282-365", "4693-4756"),
    "0.15.0": ("283-362", "4924-4987"), "0.16.0": ("300-379", "5108-5181"), "0.17.0": ("351-430", "5222-5295"),
    "0.18.0": ("349-502", "5456-5529"), "0.19.0": ("331-482", "5721-5795"), "0.20.0": ("331-484", "5788-5861"),
    "0.21.0": ("353-506", "5888-5961"), "0.22.0": ("357-510", "6104-6177"), "0.23.0": ("371-524", "6168-6241"),
    "0.24.0": ("399-552", "6239-6312"), "0.25.0": ("429-584", "6290-6363"), "0.26.0": ("447-606", "6364-6437"),
    "0.27.0": ("459-611", "6433-6506"), "0.28.0": ("474-626", "6558-6631"), "0.29.0": ("512-673", "6514-6587"),
    "0.30.0": ("527-688", "6464-6537"), "0.31.0": ("570-740", "6409-6482"), "0.32.0": ("633-807", "6133-6206"),
    "0.33.0": ("640-820", "6072-6145"),
}


def _names_release(source: str) -> bool:
    """`source` starts with a release ("0.10.2 v1/core/..."): digits, a dot, a digit, as the regex ``\\d+\\.\\d+``
    matches them (Unicode decimals), without re's call overhead on each of the rows' ~100 changes."""
    major, dot, rest = source.partition(".")
    return bool(dot) and major.isdecimal() and rest[:1].isdecimal()


def _after(prev: VllmRelease, key: str, release: str, changes: tuple[tuple[str, str], ...],
           **fields: Any) -> VllmRelease:
    """The row of `release`: the previous row with the rules `release` introduced."""
    budget, profile = _SITES[release]
    return _derived(prev, key=key, label=f"vLLM {key}", release=release,
                   changes=tuple(Change(rule=r, source=s if _names_release(s) else f"{release} {s}")
                                 for r, s in changes),
                   source=f"{release} v1/worker/gpu_worker.py determine_available_memory:{budget}; "
                          f"v1/worker/gpu_model_runner.py profile_run:{profile}", **fields)


V1_080 = _after(
    _derived(V0_065, mla_absorbed_weights=False, v0_blocks_label="GPU"), "0.8.0", "0.8.0", (
        ("V1 engine; KV = int(total × u − absolute torch peak of the profile − (used − torch allocated) after it): "
         "context, cuBLAS, NCCL and other processes all subtracted", "v1/worker/gpu_worker.py:138-186"),
        ("profile run compiled (torch.compile) over max_num_batched_tokens, then the sampler on "
         "min(max_num_seqs, tokens) gathered rows (sort: FlashInfer top-k/top-p switched off)",
         "v1/worker/gpu_model_runner.py:1215-1319; v1/sample/ops/topk_topp_sampler.py:23-69"),
        ("scheduler tier by device name (h100/h200: 8192 serve / 16384 LLM tokens), 1024 sequences on every GPU",
         "engine/arg_utils.py:1662-1720"),
        ("no sliding-window spec: every layer is full attention; concurrency = tokens / max_model_len",
         "v1/worker/gpu_model_runner.py:1473-1510; v1/core/kv_cache_utils.py:535-540"),
        ("refusal in \"GB\" with no length estimate; PP: min budget × the heaviest stage (not modelled: kvplan "
         "pairs each stage's budget with its own layers)", "v1/core/kv_cache_utils.py:451-484, 556-588"),
    ),
    generation="V1", absolute_peak=True, compiled=True, rows_capped=True, full_hidden_at_sampler=False, sampled_row_copies=1,
    sampler_paths=("sort",), sort_bytes_per_logit=SORT_V1, scheduler=_V1_080, chunked_prefill_always=True,
    refusal="v1-0.8.0", mla_block_forced=64, mla_block_multiples=False,
    kv_dtypes=E4, lora_ranks=LORA_08, block_sizes=BLOCKS_08, expert_parallel=True)
V1_08 = _after(V1_080, "0.8", "0.8.5", (
    ("scheduler tier by torch total memory (>= 70 GiB: 8192 / 16384 tokens, 1024 sequences; else 2048 / 8192, 256)",
     "engine/arg_utils.py:1596-1624"),
    ("SlidingWindowSpec exists but full and sliding layers together are unified to full, without a warning; one "
     "token and concurrency line per worker before the min (kvplan prints the min's)",
     "v1/core/kv_cache_utils.py:657-708; v1/engine/core.py:120-161"),
    ("refusal in GiB; the length estimate is computed but dropped from the message", "v1/core/kv_cache_utils.py:462-552"),
), scheduler=_V1_08, refusal="v1-0.8",
    data_parallel=True)
V1_090 = _after(V1_08, "0.9.0", "0.9.0", (
    ("an A100 never reaches the >= 70 GiB scheduler tier", "engine/arg_utils.py:1495-1501"),
    ("FlashInfer top-k/top-p when the flashinfer package is importable (not a dependency: sort otherwise)",
     "v1/sample/ops/topk_topp_sampler.py:29-66"),
    ("the sampler hidden rows are replaced by torch.rand_like (a second copy)", "v1/worker/gpu_model_runner.py:1758"),
), scheduler=_V1, sampler_paths=("sort", "flashinfer"), sampled_row_copies=2,
    spec_methods=_SPEC, lookahead_methods=("eagle", "eagle3", "mtp"), encoder_items_rule="cdiv",
    block_sizes=BLOCKS_09, mtp_drafters=MTP_09)
V1_09 = _after(V1_090, "0.9", "0.9.2", (
    ("KV = int(total × u − weights − torch peak growth − non-torch growth) from a snapshot taken before the "
     "distributed init (every NCCL and custom all-reduce byte is growth); 'Available KV cache memory' logged",
     "v1/worker/gpu_worker.py:140, 158, 187-236; utils/__init__.py:2334-2480"),
    ("the full T × hidden output stays alive through the sampler", "v1/worker/gpu_model_runner.py:2082-2083, 2273-2283"),
    ("hybrid KV cache manager: sliding layers keep their window, groups of min(count per type) layers split "
     "contiguously, 'Add N padding layers'; concurrency = blocks / blocks one request reserves",
     "v1/core/kv_cache_utils.py:626-641, 740-879"),
    ("refusal with the estimated maximum model length (%.2f GiB)", "v1/core/kv_cache_utils.py:538-579"),
), absolute_peak=False, full_hidden_at_sampler=True, concurrency_from_tokens=False, hybrid_kv_cache_manager=True,
    group_size_ratio=None, hybrid_groups_strided=False, refusal="v1")
V1_010 = _after(V1_09, "0.10", "0.10.1.1", (
    ("max_num_seqs capped at max_num_batched_tokens", "engine/arg_utils.py:1711"),
    ("MXFP4 (gpt-oss) experts on Hopper through Marlin: intermediate padded to 128, hidden to 256",
     "model_executor/layers/quantization/mxfp4.py:123-135, 157-165"),
    ("multimodal profile items by get_max_items (floor)", "v1/worker/utils.py:82"),
    ("0.10.2 (not a row): GPU KV cache size multiplied by the DCP size", "0.10.2 v1/core/kv_cache_utils.py:855-868"),
), seqs_capped=True, mxfp4_backend="marlin", mxfp4=MXFP4_010, encoder_items_rule="floor",
    kv_dtypes=KV_010, mtp_drafters=MTP_010)
V1_011 = _after(V1_010, "0.11", "0.11.0", (
    ("snapshot after the distributed init: init-time NCCL, custom all-reduce and symm-mem buffers are not "
     "subtracted; the TP group's torch NCCL communicator is created lazily by the profile's logits all-gather, "
     "so its memory is (2.06-2.21 GiB per GPU on NVSwitch Hopper logs); NCCL_CUMEM_ENABLE no longer forced to 0",
     "v1/worker/gpu_worker.py:169, 182; 0.19.0 distributed/device_communicators/base_device_communicator.py:182-205"),
    ("--decode-context-parallel-size; hybrid groups computed for the whole model and split strided",
     "v1/core/kv_cache_utils.py:894-1001, 1211-1291"),
    ("multimodal dummy outputs expanded to the encoder budget's rows", "v1/worker/gpu_model_runner.py:3370-3384"),
    ("--kv-cache-memory-bytes bypasses the profile (not modelled)", "v1/worker/gpu_worker.py:235-252"),
    ("speculative decoding: a Gated-DeltaNet layer's conv state keeps kernel − 1 + K rows",
     "model_executor/layers/mamba/mamba_utils.py:166-186; model_executor/models/qwen3_next.py:197, 231"),
), tp_comm="lazy", tp_comm_measured_on="0.11", decode_context_parallel=True, encoder_padded_to_budget=True,
    hybrid_groups_strided=True, spec_conv_mixers=frozenset({"gdn"}),
    kv_dtypes=KV_011, mtp_drafters=MTP_011)
V1_012 = _after(V1_011, "0.12", "0.12.0", (
    ("FlashInfer is a dependency but its top-k/top-p sampler is opt-in (VLLM_USE_FLASHINFER_SAMPLER): sort",
     "v1/sample/ops/topk_topp_sampler.py:26-90"),
    ("MXFP4 experts on Hopper through the bundled triton_kernels (no hidden padding)",
     "model_executor/layers/quantization/mxfp4.py:152-166; utils/import_utils.py:431-438"),
    ("hybrid group size = the largest count if it is under 1.25 × the smallest, else the smallest; pages unified "
     "by raising block sizes", "v1/core/kv_cache_utils.py:885-922, 1014-1024"),
    ("one token line after the min over workers; Hopper MLA blocks forced to 64 only when not a multiple",
     "v1/core/kv_cache_utils.py:1254-1296; platforms/cuda.py:150-252"),
    ("no extra LoRA vocabulary; --kv-offloading-size; Model Runner V2 exists (opt-in)",
     "config/lora.py (0.11.0 :47 removed); config/cache.py:139; envs.py:1550-1552"),
    ("prefix caching on: models with Mamba prefix-caching support (SupportsMambaPrefixCaching) cache states per "
     "block (the later 'all' mode, not modelled: refused), for the others vLLM turns prefix caching off",
     "model_executor/models/config.py:292-312; model_executor/models/interfaces.py"),
), mla_block_multiples=True, mxfp4_backend="triton", mxfp4=MXFP4_012, group_size_ratio=1.25, lora_extra_vocab=0, kv_offloading=True,
    mamba_all_mode_architectures=MAMBA_ALL_MODE,
    kv_dtypes=KV_012, lora_ranks=LORA_012, lora_ranks_literal=True, block_sizes=BLOCKS_012)
V1_013 = _after(V1_012, "0.13", "0.13.0", (
    ("refusals end with the conserving_memory docs link", "v1/core/kv_cache_utils.py:688-720"),
    ("multimodal dummy outputs no longer expanded to the encoder budget", "v1/worker/gpu_model_runner.py:4424-4487"),
    ("workspace manager created after the snapshot (lazy buffers)", "v1/worker/gpu_worker.py:240, 261"),
), refusal="v1-0.13", encoder_padded_to_budget=False)
V1_014 = _after(V1_013, "0.14", "0.14.0", (
    ("requested memory = ceil(total × u)", "v1/worker/utils.py:253-272"),
    ("async scheduling on by default (not with pp > 1)", "config/vllm.py:588-628"),
    ("GiB printed as round(x, 2); the estimate glued to 'Try'", "v1/core/kv_cache_utils.py:609-643"),
    ("the start-up check and its length estimate count the whole model's padded groups (group width × page × the "
     "FIRST group's blocks: a hybrid's other groups are left out; the scheduler still reserves them) against "
     "min(budgets)", "v1/core/kv_cache_utils.py:1318-1351, 1354-1390, 1514-1523"),
), usable_rounding="ceil", async_scheduling=True, async_with_pp=False, refusal="v1-0.14",
    start_check="model_first_group",
    v_padded_to_k=frozenset({"MiMoV2FlashForCausalLM"}), fp8_merged_relaxed=True)
V1_015 = _after(V1_014, "0.15", "0.15.0", (
    ("async scheduling with pp > 1 too", "config/vllm.py:589-622"),
    ("draft-model speculative decoding in V1 (0.14 refused it); Mamba reserves one block per speculative token",
     "v1/kv_cache_interface.py:293-300; 0.14.0 engine/arg_utils.py:1794 removed"),
    ("MistralForCausalLM has its own class without embedding LoRA", "model_executor/models/mistral.py:238-240"),
    ("every modality limited to 0 (--limit-mm-per-prompt): the multimodal models' towers are not built "
     "(SupportsMultiModal._mark_tower_model; Kimi-K2.5 from 0.19)", "model_executor/models/interfaces.py:217-262"),
    ("prefix caching on: mamba_cache_mode 'align' for a model without Mamba prefix-caching support (two state "
     "blocks per request, Mamba block = attention block), 'all' for the others",
     "model_executor/models/config.py:332-372; v1/kv_cache_interface.py:293-300"),
    ("MXFP4 experts on FlashInfer's TRT-LLM MoE on every sm10x GPU (10.0 only before)",
     "model_executor/layers/quantization/mxfp4.py:106-173"),
), async_with_pp=True, mamba_align_mode=True, mxfp4=MXFP4_015, spec_methods=("draft_model", *_SPEC),
    lookahead_methods=("draft_model", "eagle", "eagle3", "mtp"),
    spec_state_blocks=True, lora_embedding_families=frozenset({"llama", "mixtral"}), text_only_skips_towers=True)
V1_016 = _after(V1_015, "0.16", "0.16.0", (
    ("Qwen3 and Qwen3-MoE get embedding LoRA", "model_executor/models/qwen3.py:274"),
    ("an MTP module's shared_head.head is replaced by the target's lm_head after loading (DeepSeek, GLM-4.5: "
     "before, the checkpoint's own copy stays loaded)", "v1/spec_decode/eagle.py:1457-1521"),
), lora_embedding_families=frozenset({"llama", "mixtral", "qwen3", "qwen3_moe"}), mtp_head_shared=True,
    mtp_drafters=MTP_016)


def v0_rows(at: tuple[int, ...] | None, version: str | None) -> tuple[tuple[str, ...], bool]:
    """The V0 rows a V0 start-up log of release `at` (printing `version`) is planned with, in order of preference,
    and whether the release is named as V0: 0.8 and later run the V0 engine as 0.8 does (a "-v0" row of its own
    minor first); 0.6.x its own row, else 0.6.5's; 0.7 and a log that cannot be placed, 0.7's."""
    if at is not None and Version(at) >= Version((0, 8)):
        return (f"{at[0]}.{at[1]}-v0", "0.8-v0"), True
    if at is not None and at[:2] == (0, 6):
        return (version or ".".join(map(str, at)), "0.6.5"), False
    return (version or "0.7", "0.7"), True
