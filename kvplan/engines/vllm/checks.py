"""The checks vLLM makes on the settings before it plans, release by release, as data: each refusal is vLLM's own
message with its numbers (an ``InputError``: the engine would not start, exit 2).

- KV cache dtype names (``KV_DTYPES``): the ``CacheDType`` literal of each release's ``config/cache.py`` (0.8.0:
  ``engine/arg_utils.py:367-370``), turned into argparse choices before 0.33; 0.33 takes any string and its
  validator refuses the unknown (``config/cache.py:468-476``). kvplan's names map to vLLM's (bf16 -> bfloat16).
- Block sizes (``BLOCK_CHOICES``): argparse choices up to 0.17 (``vllm serve`` only: the ``LLM`` class skips the
  validation, ``SkipValidation[BlockSize]``); from 0.18 the attention backends decide (``backend_checks.py``).
- Scheduler limits (``config/scheduler.py`` ``_verify_args``, the same wording in 0.8-0.33): max_num_batched_tokens
  below max_num_seqs, or below max_model_len without chunked prefill; from 0.10.1 an unset max_num_seqs defaults to
  min(its default, max_num_batched_tokens) (0.10.1.1 ``engine/arg_utils.py:1676-1679``, 0.33 ``:3232-3234``).
- nvfp4 KV on GPUs no backend of the release takes it on (``NVFP4_CAPABILITIES``).
- Decode context parallel on GQA/MQA models (0.30+ ``config/model.py:1578-1606``, ``config/parallel.py:596-600``).
- LoRA ranks (``LORA_RANKS``): 8-512 checked by ``LoRAConfig`` up to 0.11 (0.8.0 ``config.py:2326-2330``, 0.11.0
  ``config/lora.py:104-109``); from 0.12 the ``MaxLoRARanks`` literal, rank 1 added, as argparse choices
  (0.12.0 ``config/lora.py``, ``engine/arg_utils.py:981``; 0.33 ``config/lora.py:27``).
"""

from __future__ import annotations

from dataclasses import replace

from kvplan.dtypes import KvDtypeName
from kvplan.engines.base import Request
from kvplan.engines.version import at_least
from kvplan.engines.vllm.releases import VllmRelease, scheduler_defaults
from kvplan.engines.vllm.selector import SINK_TYPES, block_refusal
from kvplan.engines.vllm.spelling import KV_DTYPES as VLLM_NAMES
from kvplan.errors import InputError
from kvplan.specs import AttnSpec, ChunkedAttn, CrossAttn, FullAttn, LinearState, SlidingAttn, parts

_E4 = ("auto", "fp8", "fp8_e4m3", "fp8_e5m2")
_V12 = ("auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla")
_V18 = ("auto", "float16", *_V12[1:])
_TQ = ("turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_3bit_nc")
_V20 = (*_V18, *_TQ, "int8_per_token_head", "fp8_per_token_head", "nvfp4")
_V25 = (*_V18, *_TQ, "int4_per_token_head", "int8_per_token_head", "fp8_per_token_head", "nvfp4")
_V28 = (*_V25, "nvfp4_4over6")
_V30 = (*_V18, "nvfp4_ds_mla", *_V28[len(_V18):])
_V32 = (*_V30[:13], "ultraquant_4bit", *_V30[13:])
_V33 = (*_V30[:13], "octave_k3v4", "octave_k3v3", "octave_k3v3_compact", "ultraquant_4bit", *_V30[13:])
# (first release, the names it accepts), newest first; bisected over every extracted release's config/cache.py.
KV_DTYPES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("0.33", _V33), ("0.32", _V32), ("0.30", _V30), ("0.28", _V28), ("0.25", _V25), ("0.20", _V20), ("0.18", _V18),
    ("0.12", _V12), ("0.11", _V12[:6]), ("0.10", (*_E4, "fp8_inc")), ("0.8", _E4),
)
# (first release, the LoRA ranks it accepts), newest first; the same tuple in every release of each span
LORA_RANKS: tuple[tuple[str, tuple[int, ...]], ...] = (
    ("0.12", (1, 8, 16, 32, 64, 128, 256, 320, 512)), ("0.8", (8, 16, 32, 64, 128, 256, 320, 512)))
LORA_LITERAL_FROM = "0.12"
VALIDATED_FROM = "0.33"  # a pydantic validator instead of argparse choices
# (first release, --block-size choices; None: any size, the backends decide), newest first.
BLOCK_CHOICES: tuple[tuple[str, tuple[int, ...] | None], ...] = (
    ("0.18", None), ("0.12", (1, 8, 16, 32, 64, 128, 256)), ("0.9", (1, 8, 16, 32, 64, 128)), ("0.8", (8, 16, 32, 64, 128)),
)
# nvfp4 KV by release: the compute capabilities a backend takes it on (FLASHINFER only), newest first. 0.20-0.31:
# cc 10.x with trtllm attention (0.31 v1/attention/backends/flashinfer.py:499-506); 0.32 on, also 8.0, 9.0 and 12.0
# through FlashInfer's FA2 path, not at head_size 64 nor with attention sinks (0.33 flashinfer.py:652-686).
NVFP4_CAPABILITIES: tuple[tuple[str, tuple[tuple[int, int] | int, ...]], ...] = (
    ("0.32", (10, (8, 0), (9, 0), (12, 0))), ("0.20", (10,)))
NVFP4_FA2_FROM = "0.32"
CLAMPED_SEQS_FROM = "0.10.1"
DCP_GQA_FROM = "0.30"


def _row(table: tuple[tuple[str, object], ...], rel: VllmRelease) -> object:
    return next((value for first, value in table if at_least(rel.key, first)), None)


def check_kv_dtype(rel: VllmRelease, typed: KvDtypeName, model_dtype: str) -> None:
    """The release's KV dtype names. The model's own dtype is let through: it is what auto gives, and a start-up log's
    resolved dtype (kvplan reconcile) names it so."""
    names = _row(KV_DTYPES, rel)
    name = typed.spelled(VLLM_NAMES)
    if not isinstance(names, tuple) or name in names or name == VLLM_NAMES.get(model_dtype, model_dtype):
        return
    if at_least(rel.key, VALIDATED_FROM):
        raise InputError(f"Invalid kv_cache_dtype: {name!r}. Valid values are: {list(names)} ({rel.label}, "
                         "vllm/config/cache.py:468-476)")  # vLLM's words, verbatim
    choices = ", ".join(repr(n) for n in names)
    raise InputError(f"argument --kv-cache-dtype: invalid choice: {name!r} (choose from {choices}) ({rel.label}'s "
                     "argument parser, its CacheDType choices)")  # vLLM's words, verbatim


def check_nvfp4(rel: VllmRelease, req: Request) -> None:
    """nvfp4 KV where no backend of the release takes it on this GPU (H100 before 0.32), or FlashInfer's FA2 path
    refuses the model (head 64, sinks)."""
    capabilities = _row(NVFP4_CAPABILITIES, rel)
    if req.cache.kv_dtype != "nvfp4" or not isinstance(capabilities, tuple):
        return
    cc = req.device.compute_capability if req.device and req.device.compute_capability else (9, 0)
    if cc[0] not in capabilities and cc not in capabilities:
        raise InputError(f"{rel.label}: no attention backend takes KV cache dtype nvfp4 on compute capability "
                         f"{cc[0]}.{cc[1]} ({req.gpu_name or 'H100'}): FLASHINFER, the only backend listing it, takes "
                         f"it on {', '.join(_cc_text(c) for c in capabilities)} (vLLM refuses with 'No valid attention "
                         "backend found ... kv_cache_dtype not supported')", arg="kv_dtype")
    if cc[0] != 10 and at_least(rel.key, NVFP4_FA2_FROM):
        heads = {p.head_dim for s in req.model.layer_specs for p in parts(s) if isinstance(p, AttnSpec)}
        why = ("fa2 prefill misreads an NVFP4 KV cache at head_size 64" if 64 in heads else
               "the sink prefill wrapper cannot read an NVFP4 KV cache" if req.model.model_type in SINK_TYPES else None)
        if why:
            raise InputError(f"{rel.label} on compute capability {cc[0]}.{cc[1]}: {why} (vllm/v1/attention/backends/"
                             "flashinfer.py:677-686)", arg="kv_dtype")


def _cc_text(cc: tuple[int, int] | int) -> str:
    return f"{cc}.x" if isinstance(cc, int) else f"{cc[0]}.{cc[1]}"


def check_block_size(rel: VllmRelease, req: Request) -> None:
    """The argparse choices of the releases that had them (`vllm serve`; the LLM class skips the validation)."""
    block, choices = req.cache.block_size, _row(BLOCK_CHOICES, rel)
    if block is None or not isinstance(choices, tuple) or block in choices or req.settings.vllm.entry_point != "serve":
        return
    raise InputError(f"argument --block-size: invalid choice: {block} (choose from {', '.join(map(str, choices))}) "
                     f"({rel.label}'s argument parser)")  # vLLM's words, verbatim


def check_backend_block(rel: VllmRelease, req: Request) -> None:
    """From 0.18 the backends decide the block size (selector.py); plain attention models only: MLA, DeepSeek-V4,
    MiniMax-M3 and K != V models take their own backends (backends.py, deepseek_v4.py)."""
    block = req.cache.block_size
    if not block or _row(BLOCK_CHOICES, rel) is not None or not at_least(rel.key, "0.18"):
        return
    caches = [p for s in req.model.layer_specs for p in parts(s)]
    if not caches or any(not isinstance(p, (FullAttn, SlidingAttn, ChunkedAttn, LinearState, CrossAttn)) or
                         (isinstance(p, AttnSpec) and p.v_head_dim != p.head_dim) for p in caches):
        return
    if (message := block_refusal(req, req.cache.kv_dtype_name.spelled(VLLM_NAMES), block)) is not None:
        raise InputError(f"{message} ({rel.label}, vllm/platforms/cuda.py:471-475)")  # vLLM's words, verbatim


def check_dcp(rel: VllmRelease, req: Request) -> None:
    """GQA/MQA decode context parallel: the KV heads must be replicated, dcp at most tp // heads, dividing q / kv."""
    tp, dcp, m = req.tp, req.dcp, req.model
    if dcp == 1 or m.is_mla or not at_least(rel.key, DCP_GQA_FROM):
        return
    if tp % dcp:
        raise InputError(f"tp_size={tp} must be divisible by dcp_size={dcp}. ({rel.label})")  # vLLM's words, verbatim
    kv, heads = m.num_kv_heads, m.num_attention_heads
    if tp <= kv:
        raise InputError(f"Decode context parallelism for GQA/MQA requires `--tensor-parallel-size` ({tp}) to be greater "
                         f"than the model's total number of KV heads ({kv}). Increase `--tensor-parallel-size` or set "
                         "`--decode-context-parallel-size 1`.")  # vLLM's words, verbatim
    if dcp > tp // kv:
        raise InputError(f"`--decode-context-parallel-size` ({dcp}) exceeds the maximum supported value ({tp // kv}) for "
                         f"`--tensor-parallel-size` ({tp}) and {kv} model KV heads.")  # vLLM's words, verbatim
    if (heads // kv) % dcp:
        raise InputError(f"The model's number of query heads per KV head ({heads // kv}) must be divisible by "
                         f"`--decode-context-parallel-size` ({dcp}) for GQA/MQA.")  # vLLM's words, verbatim


def check_lora_rank(rel: VllmRelease, req: Request) -> None:
    """--max-lora-rank outside the release's ranks: vLLM refuses it before it loads anything."""
    rank, ranks = req.settings.max_lora_rank, _row(LORA_RANKS, rel)
    if rank is None or not isinstance(ranks, tuple) or rank in ranks:
        return
    if at_least(rel.key, LORA_LITERAL_FROM):
        raise InputError(f"argument --max-lora-rank: invalid choice: {rank} (choose from "
                         f"{', '.join(map(str, ranks))}) ({rel.label}, vllm/config/lora.py MaxLoRARanks)",
                         arg="max_lora_rank")  # argparse's words, verbatim
    raise InputError(f"max_lora_rank ({rank}) must be one of {ranks}. ({rel.label}, LoRAConfig)",
                     arg="max_lora_rank")  # vLLM's words, verbatim


def before_defaults(rel: VllmRelease, req: Request) -> Request:
    """The checks on what the user typed, and the max_num_seqs clamp of 0.10.1 on (a given max_num_batched_tokens
    caps the default max_num_seqs)."""
    check_kv_dtype(rel, req.cache.kv_dtype_name, req.model.dtype)
    check_nvfp4(rel, req)
    check_block_size(rel, req)
    check_backend_block(rel, req)
    check_dcp(rel, req)
    check_lora_rank(rel, req)
    s = req.settings
    if s.max_num_batched_tokens is None or s.max_num_seqs is not None or not at_least(rel.key, CLAMPED_SEQS_FROM):
        return req
    _, seqs = scheduler_defaults(rel, req)
    return replace(req, settings=replace(s, max_num_seqs=min(seqs, s.max_num_batched_tokens)))


def check_scheduler(rel: VllmRelease, req: Request, chunked: bool) -> None:
    """SchedulerConfig._verify_args on the resolved knobs."""
    s = req.settings
    assert s.max_num_batched_tokens is not None and s.max_num_seqs is not None
    tokens, seqs = s.max_num_batched_tokens, s.max_num_seqs
    if tokens < req.max_model_len and not chunked:
        raise InputError(f"max_num_batched_tokens ({tokens}) is smaller than max_model_len ({req.max_model_len}). "
                         "This effectively limits the maximum sequence length to max_num_batched_tokens and makes vLLM "
                         "reject longer sequences. Please increase max_num_batched_tokens or decrease max_model_len. "
                         f"({rel.label})")  # vLLM's words, verbatim
    if tokens < seqs:
        raise InputError(f"max_num_batched_tokens ({tokens}) must be greater than or equal to max_num_seqs ({seqs}). "
                         f"({rel.label})")  # vLLM's words, verbatim


def size_notes(req: Request, rel: VllmRelease) -> tuple[str, ...]:
    """What `kvplan size` (engine-neutral) says about settings this vLLM release would not start with."""
    try:
        before_defaults(rel, req)
    except InputError as exc:
        return (f"note: {rel.label} would not start with these settings: {exc}",)
    return ()
