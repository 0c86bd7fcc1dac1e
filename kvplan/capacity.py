"""Capacity planning: GPU memory -> KV budget per GPU -> an engine's blocks, tokens and concurrency.

``capacity()`` is the library entry point. The budget is the engine's fraction applied as that
engine applies it, minus weights (``kvplan.weights``) and an *estimated* overhead
(``estimate_overhead``, documented below and overridable); ``kv_budget_bytes`` bypasses all of it
and is what the engine logs as its KV memory (vLLM "Available KV cache memory", one value per PP
stage if they differ).

The overhead estimate (per GPU) is a model, not a measurement:
- non-torch: CUDA context + cuBLAS workspaces 512 MiB, + 512 MiB of NCCL buffers when tp·pp > 1;
- activations (profile-run peak): ``tokens × (4·hidden + 2·intermediate / tp) × 2 B`` for one
  batch of ``tokens`` = max_num_batched_tokens (8192), plus fp32 logits of ``min(tokens,
  max_num_seqs)`` rows × vocab;
- CUDA graphs: 512 MiB (vLLM, TRT-LLM capture decode graphs).
SGLang takes activations and graphs out of its ``1 − mem_fraction_static`` reserve, so only the
non-torch part is subtracted there; transformers runs eagerly (no graphs).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from fractions import Fraction

from kvplan.config.model import ModelConfig
from kvplan.engines import ENGINE_NAMES, EnginePlan, Request, Settings, get_engine
from kvplan.errors import CapacityError, InputError, KvplanError
from kvplan.formulas.sizing import build_layout
from kvplan.specs import Overrides
from kvplan.units import GIB, parse_bytes

MIB = 1024**2
CUDA_CONTEXT_BYTES = 512 * MIB
NCCL_BYTES = 512 * MIB
CUDA_GRAPH_BYTES = 512 * MIB
ACTIVATION_TOKENS = 8192
DEFAULT_GPU = "H100"


@dataclass(frozen=True, kw_only=True)
class Overhead:
    non_torch_bytes: int
    activation_bytes: int
    cuda_graph_bytes: int
    source: str = "estimate"

    @property
    def total_bytes(self) -> int:
        return self.non_torch_bytes + self.activation_bytes + self.cuda_graph_bytes


@dataclass(frozen=True, kw_only=True)
class CapacityResult:
    engine: str
    model: ModelConfig
    gpu: str | None
    gpu_memory_bytes: int | None
    tp: int
    pp: int
    dcp: int
    max_model_len: int
    weights_bytes_per_gpu: int | None
    overhead: Overhead | None
    kv_budget_bytes_per_gpu: tuple[int, ...]  # one per PP stage
    plan: EnginePlan
    budget_lines: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    error: str | None = None


def estimate_overhead(model: ModelConfig, engine: str, tp: int, pp: int, settings: Settings) -> Overhead:
    """The documented overhead model above, per GPU."""
    non_torch = CUDA_CONTEXT_BYTES + (NCCL_BYTES if tp * pp > 1 else 0)
    if engine == "sglang":
        return Overhead(non_torch_bytes=non_torch, activation_bytes=0, cuda_graph_bytes=0)
    tokens = settings.max_num_batched_tokens or ACTIVATION_TOKENS
    hidden = model.hidden_size
    intermediate = int(model.raw.get("intermediate_size") or 4 * hidden)
    vocab = int(model.raw.get("vocab_size") or 0)
    activations = tokens * (4 * hidden + 2 * intermediate // tp) * 2 + min(tokens, settings.max_num_seqs) * vocab * 4
    graphs = 0 if engine == "hf" else CUDA_GRAPH_BYTES
    return Overhead(non_torch_bytes=non_torch, activation_bytes=activations, cuda_graph_bytes=graphs)


def parse_budget(text: str) -> tuple[int, ...]:
    """'20GiB' or '12.13GiB,11GiB' (one per PP stage) -> bytes, rounded down to whole bytes."""
    out = []
    for part in text.split(","):
        match = re.match(r"^\s*(\d{1,30}(?:\.\d{1,30})?)\s*([a-zA-Z]*)\s*$", part, re.ASCII)
        if not match:
            raise InputError(f"invalid --kv-budget {part!r}: expected a size like 20GiB or 12.13GiB,11GiB")
        try:
            unit = parse_bytes("1" + match.group(2))
        except InputError:
            raise InputError(f"invalid --kv-budget {part.strip()!r}: unknown unit; use B, KiB, MiB, GiB, GB, ...") from None
        out.append(int(Fraction(match.group(1)) * unit))  # floor
    return tuple(out)


def _weights(model: ModelConfig, tp: int, pp: int, weights_dtype: str | None, needed: bool) -> int | None:
    try:
        from kvplan.weights import weight_bytes_per_gpu
    except ImportError:
        if needed:
            raise CapacityError("the weights model (kvplan.weights) is not available; pass --kv-budget") from None
        return None
    try:
        return weight_bytes_per_gpu(model, tp=tp, pp=pp, weights_dtype=weights_dtype)
    except KvplanError:
        if needed:
            raise
        return None  # --kv-budget given: the weights are informative only


def _gpu(gpu: str | None, gpu_memory_bytes: int | None, needed: bool) -> tuple[str | None, int | None, str]:
    if gpu is None and gpu_memory_bytes is None and not needed:
        return None, None, ""
    from kvplan.gpus import lookup_gpu

    if gpu_memory_bytes is not None and gpu_memory_bytes <= 0:
        raise InputError(f"--gpu-mem must be positive, got {gpu_memory_bytes} bytes")
    found = lookup_gpu(gpu or DEFAULT_GPU)
    memory = found.memory_bytes if gpu_memory_bytes is None else gpu_memory_bytes
    source = found.source if gpu_memory_bytes is None else "--gpu-mem"
    return found.name, memory, source


def capacity(model: ModelConfig | str, *, engine: str = "vllm", gpu: str | None = None,
             gpu_memory_bytes: int | None = None, tp: int = 1, pp: int = 1, dcp: int = 1, kv_dtype: str = "auto",
             max_model_len: int | None = None, kv_budget_bytes: tuple[int, ...] | None = None,
             overhead_bytes: int | None = None, weights_dtype: str | None = None,
             settings: Settings | None = None, overrides: Overrides | None = None) -> CapacityResult:
    """KV capacity of `model` under `engine` on one GPU type (per GPU; PP stages take the min)."""
    from kvplan.config import as_model

    model = as_model(model)
    settings = settings or Settings()
    prof = get_engine(engine)
    if kv_budget_bytes is not None and len(kv_budget_bytes) not in (1, pp):
        raise InputError(f"--kv-budget has {len(kv_budget_bytes)} values; give 1 or one per PP stage ({pp})")
    need_memory = kv_budget_bytes is None
    gpu_name, memory, gpu_source = _gpu(gpu, gpu_memory_bytes, need_memory)
    weights = _weights(model, tp, pp, weights_dtype, need_memory)
    length = max_model_len or model.max_model_len or 2048
    notes: list[str] = [] if gpu is not None or not need_memory else [f"no --gpu given: assumed {DEFAULT_GPU}"]
    overhead = None
    if kv_budget_bytes is None:
        assert memory is not None and weights is not None
        overhead = estimate_overhead(model, prof.name, tp, pp, settings)
        if overhead_bytes is not None:
            overhead = Overhead(non_torch_bytes=overhead_bytes, activation_bytes=0, cuda_graph_bytes=0,
                                source="--overhead")
        steps = prof.kv_budget(memory, weights, overhead.total_bytes, settings, tp)
        budgets: tuple[int, ...] = (steps.kv_budget_bytes,)
        lines: tuple[str, ...] = (
            f"GPU memory {memory:,} B ({gpu_source}); weights {weights:,} B per GPU (heaviest rank)",
            f"overhead ({overhead.source}) = non-torch {overhead.non_torch_bytes:,} + activations "
            f"{overhead.activation_bytes:,} + CUDA graphs {overhead.cuda_graph_bytes:,} = {overhead.total_bytes:,} B",
            *steps.lines)
        if overhead.source == "estimate":
            notes.append(f"overhead is an estimate ({overhead.total_bytes / GIB:.2f} GiB); pass --kv-budget with the "
                         "engine's logged KV memory for exact numbers")
        if pp > 1:
            notes.append("weights of the heaviest PP rank are subtracted on every stage")
    else:
        budgets, lines = kv_budget_bytes, (f"KV budget given: {', '.join(f'{b:,}' for b in kv_budget_bytes)} B",)
    request = Request(model=model, tp=tp, pp=pp, dcp=dcp, kv_dtype=kv_dtype, max_model_len=length,
                      gpu_name=gpu_name, settings=settings, overrides=overrides)
    base = CapacityResult(engine=prof.name, model=model, gpu=gpu_name, gpu_memory_bytes=memory, tp=tp, pp=pp,
                          dcp=dcp, max_model_len=length, weights_bytes_per_gpu=weights, overhead=overhead,
                          kv_budget_bytes_per_gpu=budgets, budget_lines=lines,
                          plan=_empty_plan(prof.name, prof.version, settings))
    if min(budgets) <= 0:
        build_layout(model, tp=tp, pp=pp, dcp=dcp, kv_dtype=kv_dtype, overrides=overrides)  # bad input still fails
        notes.append(_no_budget_warning(model, engine, budgets, memory, weights, overhead, tp, pp, settings))
        return replace(base, notes=tuple(notes))
    plan = prof.plan(request, budgets)
    if plan.requests_at_max_len < 1:
        notes.append(f"warning: one {length:,}-token request does not fit under {prof.name}; "
                     f"the cache holds {plan.kv_tokens:,} tokens")
    return replace(base, plan=plan, notes=tuple(notes) + model.notes)


def _empty_plan(engine: str, version: str, settings: Settings) -> EnginePlan:
    return EnginePlan(engine=engine, version=version, kv_dtype="-", block_size=settings.block_size or 0,
                      page_bytes=0, num_blocks=0, kv_tokens=0, max_concurrency=0.0 if engine == "vllm" else None,
                      requests_at_max_len=0.0, reserve_bytes_per_request=0, steady_bytes_per_request=0, groups=())


def _no_budget_warning(model: ModelConfig, engine: str, budgets: tuple[int, ...], memory: int | None,
                       weights: int | None, overhead: Overhead | None, tp: int, pp: int, settings: Settings) -> str:
    head = (f"warning: KV budget is {min(budgets) / GIB:.2f} GiB per GPU (≤ 0): GPU {(memory or 0) / GIB:.2f} GiB, "
            f"weights {(weights or 0) / GIB:.2f} GiB, overhead {(overhead.total_bytes if overhead else 0) / GIB:.2f}"
            f" GiB; no max-model-len fits at tp {tp} pp {pp}")
    if memory is None or weights is None:
        return head
    prof = get_engine(engine)
    for bigger in (2, 4, 8, 16, 32, 64):
        if bigger <= tp or model.num_attention_heads % bigger:
            continue
        try:
            w = _weights(model, bigger, pp, None, True) or 0
        except KvplanError:
            continue
        o = estimate_overhead(model, engine, bigger, pp, settings).total_bytes
        if prof.kv_budget(memory, w, o, settings, bigger).kv_budget_bytes > 0:
            return head + f"; smallest TP with a positive budget: {bigger}"
    return head + "; no TP up to 64 leaves memory for the KV cache"


def capacity_all(model: ModelConfig | str, *, tp: int = 1, pp: int = 1, dcp: int = 1,
                 max_model_len: int | None = None, settings: Settings | None = None,
                 **kwargs: object) -> list[CapacityResult]:
    """Every engine side by side; an engine that refuses reports its error instead of failing all."""
    from kvplan.config import as_model

    model = as_model(model)
    settings = settings or Settings()
    out = []
    for name in ENGINE_NAMES:
        try:
            out.append(capacity(model, engine=name, tp=tp, pp=pp, dcp=dcp, max_model_len=max_model_len,
                                settings=settings, **kwargs))  # type: ignore[arg-type]
        except KvplanError as exc:
            prof = get_engine(name)
            out.append(CapacityResult(
                engine=name, model=model, gpu=None, gpu_memory_bytes=None, tp=tp, pp=pp, dcp=dcp,
                max_model_len=max_model_len or model.max_model_len or 2048, weights_bytes_per_gpu=None,
                overhead=None, kv_budget_bytes_per_gpu=(0,), plan=_empty_plan(name, prof.version, settings),
                notes=(f"error: {exc}",), error=str(exc)))
    return out
