"""The KV budget per GPU: GPU memory minus what the engine subtracts first, term by term.

Either given (``kv_budget_bytes``: what the engine logs as its KV memory, e.g. vLLM's "Available
KV cache memory", one value or one per PP stage) or built from the model's dimensions and the
engine release's rules (``Engine.budget_rules``), one named ``BudgetTerm`` at a time (``budget_terms``), each marked
exact (derived from the config and the engine's code) or an estimate:

- weights as loaded: the checkpoint (``kvplan.planning.weights``, per PP stage) plus what the load adds
  (``weights.loaded``: rotary caches, the MXFP4 experts' kernel layout, V0 MLA absorbed matrices);
- what shares the GPU beside them (``kvplan.planning.extras``): a draft's weights, LoRA slots, the profile
  run's encoder outputs, and weights kept in host memory instead (a negative term);
- the profile run's activation peak (``profile_run``: forward, or the sampler on the last stage);
- persistent buffers counted by the release (vLLM 0.33's penalty state);
- non-torch memory the release subtracts: measured or logged sizes below (CUDA context, cuBLAS
  handles, non-torch growth after vLLM's snapshot) and NCCL buffers per process group (an estimate);
- CUDA graphs, where the release budgets them before the KV cache (vLLM 0.33, TRT-LLM; an estimate).
The engine then applies its own rule (``Engine.kv_budget``: a fraction of total memory, of free
memory at start, of memory free after the profile). ``overhead_bytes`` replaces every term but the
weights; ``non_torch_bytes`` replaces the non-torch terms.
"""

from __future__ import annotations

import re
from dataclasses import replace
from fractions import Fraction
from functools import partial

from kvplan.engines import BudgetRules, BudgetTerm, Device, Engine, Refusal, Request, Resolved
from kvplan.engines.base import WeightSplit, term_bytes
from kvplan.errors import InputError, KvplanError
from kvplan.formulas.sharding import pp_layer_counts
from kvplan.memo import IdentityCache
from kvplan.planning.after_kv import AfterKvCheck
from kvplan.planning.after_kv import check as after_kv_check
from kvplan.planning.budget_terms import overridden, stage_terms
from kvplan.planning.extras import unmodelled_tower_note
from kvplan.planning.gpus import lookup_gpu
from kvplan.planning.request import Memory
from kvplan.planning.weights import weight_bytes_per_stage
from kvplan.planning.weights.loaded import reads_first_layer
from kvplan.records import Record
from kvplan.units import format_gib, parse_bytes

DEFAULT_GPU = "H100"


class Overhead(Record):
    """Everything subtracted besides the checkpoint's weights, summed by kind (JSON ``overhead``)."""

    non_torch_bytes: int
    activation_bytes: int  # the profile run's peak plus persistent buffers
    cuda_graph_bytes: int
    weights_extra_bytes: int = 0  # allocated with the weights: rotary caches, kernel padding
    draft_weights_bytes: int = 0  # a speculative draft's weights
    lora_bytes: int = 0  # LoRA adapter slots
    encoder_cache_bytes: int = 0  # the profile run's multimodal encoder outputs
    source: str = "estimate"

    @property
    def total_bytes(self) -> int:
        return (self.non_torch_bytes + self.activation_bytes + self.cuda_graph_bytes + self.weights_extra_bytes
                + self.draft_weights_bytes + self.lora_bytes + self.encoder_cache_bytes)


class Budget(Record):
    """KV memory per GPU of each PP stage, and what it was derived from."""

    per_stage: tuple[int, ...]
    gpu: str | None = None
    gpu_memory_bytes: int | None = None
    weights_bytes_per_gpu: int | None = None
    overhead: Overhead | None = None
    terms: tuple[BudgetTerm, ...] = ()  # of the stage with the smallest budget (the one that decides)
    rule: tuple[str, ...] = ()  # the engine's arithmetic on those terms
    lines: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    after_kv: AfterKvCheck | None = None  # the start after the cache is sized (a stage that does not fit, else the last)
    refusal: Refusal | None = None  # a given budget the GPU cannot hold beside the weights (given_budget)
    held: tuple[int, int] | None = None  # a given budget's stage closest to its GPU's memory: (the bytes left beside
    # it, negative when over; what of the resident bytes is estimated) (given_budget; None: no budget, no GPU)


def parse_budget(text: str) -> tuple[int, ...]:
    """'20GiB' or '12.13GiB,11GiB' (one per PP stage) -> bytes, rounded down to whole bytes."""
    out = []
    for part in text.split(","):
        match = re.match(r"^\s*(\d{1,30}(?:\.\d{1,30})?)\s*([a-zA-Z]*)\s*$", part, re.ASCII)
        if not match:
            raise InputError(f"invalid kv_budget_bytes {part!r}: expected a size like 20GiB or 12.13GiB,11GiB",
                             arg="kv_budget_bytes")
        try:
            unit = parse_bytes("1" + match.group(2))
        except InputError:
            raise InputError(f"invalid kv_budget_bytes {part.strip()!r}: unknown unit; use B, KiB, MiB, GiB, GB, ...",
                             arg="kv_budget_bytes") from None
        out.append(int(Fraction(match.group(1)) * unit))  # floor
    return tuple(out)


def device(memory: Memory, needed: bool) -> tuple[Device | None, str]:
    """The GPU (catalog row, or just its memory) and where its figure comes from; None when not needed."""
    if memory.gpu is None and memory.gpu_memory_bytes is None and not needed:
        return None, ""
    if memory.gpu_memory_bytes is not None and memory.gpu_memory_bytes <= 0:
        raise InputError(f"gpu_memory_bytes must be positive, got {memory.gpu_memory_bytes} bytes",
                         arg="gpu_memory_bytes")
    found, assumed = lookup_gpu(memory.gpu or DEFAULT_GPU), memory.gpu is None
    if memory.gpu_memory_bytes is None:
        return Device(name=found.name, memory_bytes=found.memory_bytes, smi_memory_mib=found.smi_memory_mib,
                      compute_capability=found.compute_capability, assumed=assumed), found.source
    return (Device(name=found.name, memory_bytes=memory.gpu_memory_bytes, compute_capability=found.compute_capability,
                   assumed=assumed), "gpu_memory_bytes")


def unified_memory_note(memory: Memory) -> str | None:
    """A unified-memory machine (DGX Spark): vLLM 0.33 budgets total × utilization but reads the memory free at start
    from the OS (psutil, utils/mem_utils.py:143-151) and refuses to start below it (v1/worker/utils.py:761-770)."""
    if memory.gpu is None or not lookup_gpu(memory.gpu).unified_memory:
        return None
    return (f"{lookup_gpu(memory.gpu).name} shares its memory with the CPU: vLLM budgets total × "
            "gpu_memory_utilization but starts only if the OS reports that much available (the page cache, the "
            "weights read through host memory and other processes take their share), else it refuses with 'Free "
            "memory on device ... is less than desired GPU memory utilization'; this budget assumes it is available")


def overhead(terms: tuple[BudgetTerm, ...], memory: Memory) -> Overhead:
    source = "overhead_bytes" if memory.overhead_bytes is not None else "estimate"
    by_kind: dict[str, int] = {}
    for t in terms:  # one pass over the terms, each kind's sum read below
        by_kind[t.kind] = by_kind.get(t.kind, 0) + t.bytes

    def of(*kinds: str) -> int:
        return sum(by_kind.get(k, 0) for k in kinds)
    return Overhead(non_torch_bytes=of("non_torch", "given"), activation_bytes=of("activation", "persistent"),
                    cuda_graph_bytes=of("cuda_graphs"), weights_extra_bytes=of("weights_extra"),
                    draft_weights_bytes=of("draft_weights"), lora_bytes=of("lora"),
                    encoder_cache_bytes=of("encoder_cache"), source=source)


Stage = tuple[int, tuple[BudgetTerm, ...], tuple[str, ...], AfterKvCheck | None]


def stage_budgets(profile: Engine, request: Resolved, memory: Memory) -> list[Stage]:
    """(KV bytes, terms, the engine's arithmetic, the start after the cache) of each PP stage."""
    from kvplan.engines.protocol import rules_of  # once per request: the notes and the summaries read them too

    rules = rules_of(profile, request)
    weights_dtype = memory.weights_for(request.model)
    weights = weights_per_stage(request, profile.weight_split(request), weights_dtype)
    counts, alike = pp_layer_counts(request.model.num_layers, request.pp), _stages_alike(request, rules)
    seen: dict[tuple[int, int, bool, bool], Stage] = {}
    out = []
    for stage, w in enumerate(weights):
        # the middle stages of a deep PP hold the same weights and layers: where nothing else reads the stage's
        # index, one of them stands for the others
        key = (w, counts[stage], stage == 0, stage == request.pp - 1)
        if alike and key in seen:
            out.append(seen[key])
            continue
        terms = overridden(stage_terms(request, rules, w, stage, weights_dtype, memory.weights_dtype is not None),
                           memory)
        steps = profile.kv_budget(request, terms)
        after = after_kv_check(request, rules, terms, steps.kv_budget_bytes + term_bytes(terms),
                               stage == request.pp - 1) if memory.overhead_bytes is None else None
        out.append(seen.setdefault(key, (steps.kv_budget_bytes, terms, steps.lines, after)))
    return out


def _stages_alike(request: Request, rules: BudgetRules) -> bool:
    """Whether a stage's terms follow from its weights, its layer count and whether it is the first or the last
    (stage_terms): no CPU offload or LoRA (extra_terms read the stage's own layers), no AWQ zero points (they read
    the stage's first layer)."""
    return not rules.cpu_offload_bytes and rules.lora is None and not reads_first_layer(request.model, rules)


def kv_budget(profile: Engine, request: Resolved, memory: Memory) -> Budget:
    """The budget per PP stage: given, or built from the terms the engine release subtracts."""
    given, pp = memory.kv_budget_bytes, request.pp
    if given is not None and len(given) not in (1, pp):
        raise InputError(f"kv_budget_bytes has {len(given)} values; give 1 or one per PP stage ({pp})", arg="kv_budget_bytes")
    if given is not None:
        weights = _informative_weights(profile, request, memory)
        return Budget(per_stage=given if len(given) == pp else given * pp,
                      gpu=request.device.name if request.device else None,
                      gpu_memory_bytes=request.device.memory_bytes if request.device else None,
                      weights_bytes_per_gpu=weights, lines=(f"KV budget given: {', '.join(f'{b:,}' for b in given)} B",))
    return _estimated(profile, request, memory)


def weights_per_stage(request: Request, split: WeightSplit, weights_dtype: str | None) -> tuple[int, ...]:
    """One GPU's weights per PP stage, cut as the engine cuts them."""
    return weight_bytes_per_stage(request.model, tp=split.tp, pp=request.pp, weights_dtype=weights_dtype, ep=split.ep,
                                  expert_tp=split.expert_tp, attention_tp=split.attention_tp, towers=split.towers)


def _informative_weights(profile: Engine, request: Request, memory: Memory) -> int | None:
    try:
        return max(weights_per_stage(request, profile.weight_split(request), memory.weights_for(request.model)))
    except KvplanError:
        return None  # a budget was given: the weights are informative only


def _estimated(profile: Engine, request: Resolved, memory: Memory) -> Budget:
    assert request.device is not None
    from kvplan.engines.protocol import rules_of

    stages = stage_budgets(profile, request, memory)
    binding = min(range(len(stages)), key=lambda k: stages[k][0])
    _, terms, steps, _ = stages[binding]
    weights = max(term_bytes(t, ("weights",)) for _, t, _, _ in stages)
    checks = [c for *_, c in stages if c is not None]
    after = next((c for c in checks if c.refusal), checks[-1] if checks else None)
    notes = [] if memory.gpu is not None else [f"no GPU given: assumed {DEFAULT_GPU}"]
    notes += [n for n in (unified_memory_note(memory), unmodelled_tower_note(request, rules_of(profile, request)))
              if n]
    estimated = [t.name for t in terms if not t.exact]
    if estimated:
        notes += [f"budget terms estimated: {', '.join(estimated)}",
                  *(f"{t.name} is an estimate: {'; '.join(t.estimated_because)}" for t in terms if t.estimated_because),
                  "for exact numbers give the KV memory the engine logs (kv_budget_bytes; --kv-budget on the command line)"]
    lines = (f"GPU memory {request.device.memory_bytes:,} B; terms of PP stage {binding} (the smallest budget):",
             *(_TERM_LINES.get(t, None, partial(_term_line, t)) for t in terms), *steps,
             *(after.lines if after else ()))
    return Budget(per_stage=tuple(s[0] for s in stages), gpu=request.device.name,
                  gpu_memory_bytes=request.device.memory_bytes, weights_bytes_per_gpu=weights,
                  overhead=overhead(terms, memory), terms=terms, rule=steps, lines=lines, notes=tuple(notes),
                  after_kv=after)


def _term_line(t: BudgetTerm) -> str:
    return (f"  {t.name}: {t.bytes:,} B ({format_gib(t.bytes)} GiB, {'exact' if t.exact else 'estimate'}; "
            f"{t.source}{''.join(f'; estimated: {b}' for b in t.estimated_because)})")


# a term's line, once per term: the terms fit's budgets share (non-torch, activation, CUDA graphs) are the same objects
_TERM_LINES: IdentityCache[str] = IdentityCache(maxsize=256)


def no_budget_warning(profile: Engine, request: Request, budget: Budget, memory: Memory) -> str:
    """Why the budget is ≤ 0, and the smallest TP that would leave memory for the KV cache."""
    head = (f"warning: KV budget is {format_gib(min(budget.per_stage))} GiB per GPU (≤ 0): GPU "
            f"{format_gib(budget.gpu_memory_bytes or 0)} GiB, weights {format_gib(budget.weights_bytes_per_gpu or 0)} "
            f"GiB, overhead {format_gib(budget.overhead.total_bytes if budget.overhead else 0)} GiB; no max-model-len "
            f"fits at tp {request.tp} pp {request.pp}")
    if budget.gpu_memory_bytes is None or budget.weights_bytes_per_gpu is None:
        return head
    for bigger in (2, 4, 8, 16, 32, 64):
        if bigger <= request.tp or request.model.num_attention_heads % bigger:
            continue
        try:
            stages = stage_budgets(profile, profile.resolve(replace(request, cache=replace(request.cache, tp=bigger))), memory)
        except KvplanError:
            continue
        if min(s[0] for s in stages) > 0:
            return head + f"; smallest TP with a positive budget: {bigger}"
    return head + "; no TP up to 64 leaves memory for the KV cache"
