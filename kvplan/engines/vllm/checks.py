"""The checks vLLM makes on the settings before it plans, as each release row says (what a release accepts:
``VllmRelease.kv_dtypes`` ..., the values and their sources in ``rows_accepts.py``): each refusal is vLLM's own
message with its numbers (an ``InputError``: the engine would not start, exit 2).

- KV cache dtype names: the release's ``CacheDType`` choices (argparse before 0.33; 0.33's validator,
  ``config/cache.py:468-476``). kvplan's names map to vLLM's (bf16 -> bfloat16).
- Block sizes: argparse choices up to 0.17 (``vllm serve`` only: the ``LLM`` class skips the validation,
  ``SkipValidation[BlockSize]``); from 0.18 the attention backends decide (``backend_checks.py``).
- Scheduler limits (``config/scheduler.py`` ``_verify_args``, the same wording in 0.8-0.33): max_num_batched_tokens
  below max_num_seqs, or below max_model_len without chunked prefill; from 0.10.1 an unset max_num_seqs defaults to
  min(its default, max_num_batched_tokens) (0.10.1.1 ``engine/arg_utils.py:1676-1679``, 0.33 ``:3232-3234``).
- nvfp4 KV on GPUs no backend of the release takes it on.
- Decode context parallel on GQA/MQA models (0.30+ ``config/model.py:1578-1606``, ``config/parallel.py:596-600``).
- LoRA ranks: ``LoRAConfig``'s check up to 0.11, the ``MaxLoRARanks`` literal's argparse choices from 0.12.
"""

from __future__ import annotations

from dataclasses import replace

from kvplan.dtypes import KvDtypeName
from kvplan.engines.base import Request
from kvplan.engines.vllm.releases import VllmRelease, scheduler_defaults
from kvplan.engines.vllm.spelling import KV_DTYPES as VLLM_NAMES
from kvplan.errors import InputError
from kvplan.specs import AttnSpec, ChunkedAttn, CrossAttn, FullAttn, LinearState, SlidingAttn, parts


def check_kv_dtype(rel: VllmRelease, typed: KvDtypeName, model_dtype: str) -> None:
    """The release's KV dtype names. The model's own dtype is let through: it is what auto gives, and a start-up log's
    resolved dtype (kvplan reconcile) names it so."""
    names = rel.kv_dtypes
    name = typed.spelled(VLLM_NAMES)
    if names is None or name in names or name == VLLM_NAMES.get(model_dtype, model_dtype):
        return
    if rel.kv_dtype_validator:
        raise InputError(f"Invalid kv_cache_dtype: {name!r}. Valid values are: {list(names)} ({rel.label}, "
                         "vllm/config/cache.py:468-476)")  # vLLM's words, verbatim
    choices = ", ".join(repr(n) for n in names)
    raise InputError(f"argument --kv-cache-dtype: invalid choice: {name!r} (choose from {choices}) ({rel.label}'s "
                     "argument parser, its CacheDType choices)")  # vLLM's words, verbatim


def check_nvfp4(rel: VllmRelease, req: Request) -> None:
    """nvfp4 KV where no backend of the release takes it on this GPU (H100 before 0.32), or FlashInfer's FA2 path
    refuses the model (head 64, sinks)."""
    capabilities = rel.nvfp4_capabilities
    if req.cache.kv_dtype != "nvfp4" or not capabilities:
        return
    cc = req.device.compute_capability if req.device and req.device.compute_capability else (9, 0)
    if cc[0] not in capabilities and cc not in capabilities:
        raise InputError(f"{rel.label}: no attention backend takes KV cache dtype nvfp4 on compute capability "
                         f"{cc[0]}.{cc[1]} ({req.gpu_name or 'H100'}): FLASHINFER, the only backend listing it, takes "
                         f"it on {', '.join(_cc_text(c) for c in capabilities)} (vLLM refuses with 'No valid attention "
                         "backend found ... kv_cache_dtype not supported')", arg="kv_dtype")
    if cc[0] != 10 and rel.nvfp4_fa2:
        from kvplan.engines.vllm.selector import SINK_TYPES  # nvfp4 KV only

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
    block, choices = req.cache.block_size, rel.block_sizes
    if block is None or choices is None or block in choices or req.settings.vllm.entry_point != "serve":
        return
    raise InputError(f"argument --block-size: invalid choice: {block} (choose from {', '.join(map(str, choices))}) "
                     f"({rel.label}'s argument parser)")  # vLLM's words, verbatim


def check_backend_block(rel: VllmRelease, req: Request) -> None:
    """Where the backends decide the block size (0.18 on) (selector.py); plain attention models only: MLA, DeepSeek-V4,
    MiniMax-M3 and K != V models take their own backends (backends.py, deepseek_v4.py)."""
    block = req.cache.block_size
    if not block or not rel.backend_block_sizes:
        return
    caches = [p for s in req.model.layer_specs for p in parts(s)]
    if not caches or any(not isinstance(p, (FullAttn, SlidingAttn, ChunkedAttn, LinearState, CrossAttn)) or
                         (isinstance(p, AttnSpec) and p.v_head_dim != p.head_dim) for p in caches):
        return
    from kvplan.engines.vllm.selector import block_refusal  # only where a block size is given (0.18 on)

    if (message := block_refusal(req, req.cache.kv_dtype_name.spelled(VLLM_NAMES), block)) is not None:
        raise InputError(f"{message} ({rel.label}, vllm/platforms/cuda.py:471-475)")  # vLLM's words, verbatim


def check_dcp(rel: VllmRelease, req: Request) -> None:
    """GQA/MQA decode context parallel: the KV heads must be replicated, dcp at most tp // heads, dividing q / kv."""
    tp, dcp, m = req.tp, req.dcp, req.model
    if dcp == 1 or m.is_mla or not rel.dcp_gqa_checked:
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
    rank, ranks = req.settings.max_lora_rank, rel.lora_ranks
    if rank is None or ranks is None or rank in ranks:
        return
    if rel.lora_ranks_literal:
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
    if s.max_num_batched_tokens is None or s.max_num_seqs is not None or not rel.seqs_capped:
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
