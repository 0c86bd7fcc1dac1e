"""Does the engine start once its KV cache is sized? What a vLLM release allocates after the cache must fit.

vLLM sizes the cache as ``usable − (weights + profile peak + non-torch growth [+ graph estimate])`` and frees
the profile run's activations before allocating it, so once the cache is allocated the GPU has

    free = (total − usable) − what was in use at the start-up snapshot (CUDA context; from 0.11 the NCCL
           communicators created at init) − persistent buffers no term counts (Model Runner V2's penalty state,
           0.22-0.26) + the profile's activation peak − what the profile left allocated (Triton sampler rows)

(each release's ``compile_or_warm_up_model``). Then it captures CUDA graphs (budgeted only where the release
subtracted an estimate) and warms the sampler up on the last PP stage: the V1 runner's ``_dummy_sampler_run`` over
min(max_num_seqs, max_num_batched_tokens) rows, after the graphs (0.8-0.33), or Model Runner V2's ``warmup_kernels``
with ``SamplingParams.for_sampler_warmup()`` (fp32 and FlashInfer top-k/top-p, which its profile did not run before
0.33). No release checks that these fit; an OOM surfaces in the capture or as "CUDA out of memory occurred when
warming up sampler with N dummy requests". kvplan answers it as a refusal with the numbers. Estimates: the graph
memory (``CUDA_GRAPH_BYTES``), the context, the bytes per logit of the warm-up.
"""

from __future__ import annotations

from kvplan.engines import BudgetRules, BudgetTerm, Refusal, Request
from kvplan.engines.base import term_bytes
from kvplan.planning.profile_run import dims, penalty_state_bytes, sampler_peak
from kvplan.records import Record
from kvplan.units import MIB, format_gib

CUDA_CONTEXT_BYTES = 552_402_944  # measured after torch.cuda.init() on an H100 (driver 580, torch 2.11, CUDA 13)
CUDA_GRAPH_BYTES = 512 * MIB  # estimate; vLLM 0.18-0.26 logs estimate 0.13-0.78 GiB (kvplan.planning.budget)
INIT_COMM_BYTES = 256 * MIB  # NCCL/custom all-reduce buffers of a group created before the snapshot (estimate)


class AfterKvCheck(Record):
    """Free memory once the cache is allocated, what the release then allocates, and its verdict."""

    free_bytes: int
    graph_bytes: int
    warmup_bytes: int
    lines: tuple[str, ...]
    refusal: Refusal | None = None


def _before_snapshot(request: Request, rules: BudgetRules) -> tuple[int, str]:
    """Memory in use at the snapshot that no term subtracts: none where the budget is absolute (0.8, 0.9.0)."""
    if "context_cublas_absolute" in rules.non_torch:
        return 0, "none (the absolute budget subtracts the context)"
    init = rules.comm is not None and rules.comm.when == "init"  # 0.8-0.10: the budget already counts them
    groups = 0 if init else int(request.tp > 1) + int(request.pp > 1)
    comm = f" + {groups} NCCL group(s) created at init {format_gib(groups * INIT_COMM_BYTES)} GiB" if groups else ""
    return CUDA_CONTEXT_BYTES + groups * INIT_COMM_BYTES, f"CUDA context {format_gib(CUDA_CONTEXT_BYTES)} GiB{comm}"


def snapshot_bytes(request: Request, rules: BudgetRules) -> int:
    """What the GPU holds from the start-up snapshot on that no term subtracts: the CUDA context (NCCL created at
    init) and the persistent buffers no term counts."""
    after = rules.after_kv
    uncounted = penalty_state_bytes(request.model, after.uncounted_rows) if after and after.uncounted_rows else 0
    return _before_snapshot(request, rules)[0] + uncounted


def check(request: Request, rules: BudgetRules, terms: tuple[BudgetTerm, ...], usable: int,
          last_stage: bool) -> AfterKvCheck | None:
    """The start after the cache on one GPU of a stage (None: the release is not checked, or no GPU)."""
    after, profile = rules.after_kv, rules.profile
    if after is None or profile is None or request.device is None:
        return None
    total, d = request.device.memory_bytes, dims(request.model)
    kept = profile.sampler_buffer_bytes if last_stage else 0
    freed = term_bytes(terms, ("activation",)) - kept
    snapshot, snapshot_text = _before_snapshot(request, rules)
    uncounted = penalty_state_bytes(request.model, after.uncounted_rows) if after.uncounted_rows else 0
    free = total - usable - snapshot - uncounted + freed
    graphs = CUDA_GRAPH_BYTES if after.graphs_unbudgeted else 0
    run = after.warmup
    warmup = sampler_peak(d, run) - run.sampler_buffer_bytes if run is not None and last_stage else 0
    lines = (f"after the KV cache: free = total − usable {format_gib(total - usable)} GiB − in use at the snapshot "
             f"({snapshot_text}) − uncounted persistent buffers {format_gib(uncounted)} GiB + profile peak freed "
             f"{format_gib(freed)} GiB = {format_gib(free)} GiB",
             f"then CUDA graphs {format_gib(graphs)} GiB ({'not budgeted, estimate' if graphs else 'budgeted or none'})"
             f" and the sampler warm-up {format_gib(warmup)} GiB ({run.sampler_rows if run else 0:,} rows, "
             f"{run.sampler_path if run else '-'}): {'fits' if graphs + warmup <= free else 'does not fit'}")
    if graphs + warmup <= free:
        return AfterKvCheck(free_bytes=free, graph_bytes=graphs, warmup_bytes=warmup, lines=lines)
    head = ("CUDA out of memory while capturing CUDA graphs" if graphs > free else
            after.message.format(rows=run.sampler_rows if run else 0))
    message = (f"{head} (kvplan: after the KV cache {format_gib(free)} GiB are free; graphs need "
               f"{format_gib(graphs)} GiB, then the sampler warm-up {format_gib(warmup)} GiB; {after.source})")
    return AfterKvCheck(free_bytes=free, graph_bytes=graphs, warmup_bytes=warmup, lines=lines,
                        refusal=Refusal(message=message, stage=request.pp - 1 if warmup and graphs <= free else None))
