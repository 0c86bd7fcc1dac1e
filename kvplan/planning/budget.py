"""The KV budget per GPU: GPU memory, weights and overhead, turned into KV memory the engine's way.

Either given (``kv_budget_bytes``: what the engine logs as its KV memory, e.g. vLLM's "Available
KV cache memory", one value or one per PP stage) or estimated: the engine's memory fraction as
that engine applies it (``Engine.kv_budget``), minus the weights (``kvplan.planning.weights``) and
an *estimated* overhead (``estimate_overhead``, overridable with ``overhead_bytes``).

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
from dataclasses import dataclass
from fractions import Fraction

from kvplan.config.model import ModelConfig
from kvplan.engines import Engine, Settings
from kvplan.errors import InputError, KvplanError
from kvplan.planning.gpus import lookup_gpu
from kvplan.planning.weights import weight_bytes_per_gpu
from kvplan.units import format_gib, parse_bytes

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
class Budget:
    """KV memory per GPU of each PP stage, and what it was derived from."""

    per_stage: tuple[int, ...]
    gpu: str | None = None
    gpu_memory_bytes: int | None = None
    weights_bytes_per_gpu: int | None = None
    overhead: Overhead | None = None
    lines: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Memory:
    """What the budget is asked for: a GPU, weights, and the knobs that replace estimates."""

    gpu: str | None = None
    gpu_memory_bytes: int | None = None
    kv_budget_bytes: tuple[int, ...] | None = None
    overhead_bytes: int | None = None
    weights_dtype: str | None = None


def estimate_overhead(model: ModelConfig, engine: str, tp: int, pp: int, settings: Settings) -> Overhead:
    """The documented overhead model above, per GPU."""
    non_torch = CUDA_CONTEXT_BYTES + (NCCL_BYTES if tp * pp > 1 else 0)
    if engine == "sglang":
        return Overhead(non_torch_bytes=non_torch, activation_bytes=0, cuda_graph_bytes=0)
    tokens = settings.max_num_batched_tokens or ACTIVATION_TOKENS
    hidden = model.hidden_size
    intermediate = int(model.field("intermediate_size") or 4 * hidden)
    vocab = int(model.field("vocab_size") or 0)
    activations = tokens * (4 * hidden + 2 * intermediate // tp) * 2 + min(tokens, settings.max_num_seqs) * vocab * 4
    graphs = 0 if engine == "hf" else CUDA_GRAPH_BYTES
    return Overhead(non_torch_bytes=non_torch, activation_bytes=activations, cuda_graph_bytes=graphs)


def parse_budget(text: str) -> tuple[int, ...]:
    """'20GiB' or '12.13GiB,11GiB' (one per PP stage) -> bytes, rounded down to whole bytes."""
    out = []
    for part in text.split(","):
        match = re.match(r"^\s*(\d{1,30}(?:\.\d{1,30})?)\s*([a-zA-Z]*)\s*$", part, re.ASCII)
        if not match:
            raise InputError(f"invalid kv_budget {part!r}: expected a size like 20GiB or 12.13GiB,11GiB",
                             arg="kv_budget")
        try:
            unit = parse_bytes("1" + match.group(2))
        except InputError:
            raise InputError(f"invalid kv_budget {part.strip()!r}: unknown unit; use B, KiB, MiB, GiB, GB, ...",
                             arg="kv_budget") from None
        out.append(int(Fraction(match.group(1)) * unit))  # floor
    return tuple(out)


def _weights(model: ModelConfig, tp: int, pp: int, weights_dtype: str | None, needed: bool) -> int | None:
    try:
        return weight_bytes_per_gpu(model, tp=tp, pp=pp, weights_dtype=weights_dtype)
    except KvplanError:
        if needed:
            raise
        return None  # a budget was given: the weights are informative only


def _gpu(memory: Memory, needed: bool) -> tuple[str | None, int | None, str]:
    """(catalog name, memory bytes, where the figure comes from); nothing when it is not needed."""
    if memory.gpu is None and memory.gpu_memory_bytes is None and not needed:
        return None, None, ""
    if memory.gpu_memory_bytes is not None and memory.gpu_memory_bytes <= 0:
        raise InputError(f"gpu_memory_bytes must be positive, got {memory.gpu_memory_bytes} bytes",
                         arg="gpu_memory_bytes")
    found = lookup_gpu(memory.gpu or DEFAULT_GPU)
    if memory.gpu_memory_bytes is None:
        return found.name, found.memory_bytes, found.source
    return found.name, memory.gpu_memory_bytes, "gpu_memory_bytes"


def kv_budget(profile: Engine, model: ModelConfig, tp: int, pp: int, settings: Settings, memory: Memory) -> Budget:
    """The budget per PP stage: given, or estimated from the GPU, the weights and the overhead."""
    given = memory.kv_budget_bytes
    if given is not None and len(given) not in (1, pp):
        raise InputError(f"kv_budget has {len(given)} values; give 1 or one per PP stage ({pp})", arg="kv_budget")
    name, gpu_bytes, source = _gpu(memory, needed=given is None)
    weights = _weights(model, tp, pp, memory.weights_dtype, needed=given is None)
    if given is not None:
        return Budget(per_stage=given if len(given) == pp else given * pp, gpu=name, gpu_memory_bytes=gpu_bytes,
                      weights_bytes_per_gpu=weights, lines=(f"KV budget given: {', '.join(f'{b:,}' for b in given)} B",))
    assert gpu_bytes is not None and weights is not None
    return _estimated(profile, model, tp, pp, settings, memory, (name, gpu_bytes, source), weights)


def _estimated(profile: Engine, model: ModelConfig, tp: int, pp: int, settings: Settings, memory: Memory,
               gpu: tuple[str | None, int, str], weights: int) -> Budget:
    name, gpu_bytes, source = gpu
    overhead = estimate_overhead(model, profile.name, tp, pp, settings)
    if memory.overhead_bytes is not None:
        overhead = Overhead(non_torch_bytes=memory.overhead_bytes, activation_bytes=0, cuda_graph_bytes=0,
                            source="overhead_bytes")
    steps = profile.kv_budget(gpu_bytes, weights, overhead.total_bytes, settings, tp)
    notes = [] if memory.gpu is not None else [f"no GPU given: assumed {DEFAULT_GPU}"]
    if overhead.source == "estimate":
        notes.append(f"overhead is an estimate ({format_gib(overhead.total_bytes)} GiB); pass kv_budget with the "
                     "engine's logged KV memory for exact numbers")
    if pp > 1:
        notes.append("weights of the heaviest PP rank are subtracted on every stage")
    lines = (f"GPU memory {gpu_bytes:,} B ({source}); weights {weights:,} B per GPU (heaviest rank)",
             f"overhead ({overhead.source}) = non-torch {overhead.non_torch_bytes:,} + activations "
             f"{overhead.activation_bytes:,} + CUDA graphs {overhead.cuda_graph_bytes:,} = {overhead.total_bytes:,} B",
             *steps.lines)
    return Budget(per_stage=(steps.kv_budget_bytes,) * pp, gpu=name, gpu_memory_bytes=gpu_bytes,
                  weights_bytes_per_gpu=weights, overhead=overhead, lines=lines, notes=tuple(notes))


def no_budget_warning(profile: Engine, model: ModelConfig, budget: Budget, tp: int, pp: int,
                      settings: Settings) -> str:
    """Why the budget is ≤ 0, and the smallest TP that would leave memory for the KV cache."""
    overhead = budget.overhead.total_bytes if budget.overhead else 0
    head = (f"warning: KV budget is {format_gib(min(budget.per_stage))} GiB per GPU (≤ 0): GPU "
            f"{format_gib(budget.gpu_memory_bytes or 0)} GiB, weights {format_gib(budget.weights_bytes_per_gpu or 0)} "
            f"GiB, overhead {format_gib(overhead)} GiB; no max-model-len fits at tp {tp} pp {pp}")
    if budget.gpu_memory_bytes is None or budget.weights_bytes_per_gpu is None:
        return head
    for bigger in (2, 4, 8, 16, 32, 64):
        if bigger <= tp or model.num_attention_heads % bigger:
            continue
        weights = _weights(model, bigger, pp, None, needed=False)
        if weights is None:
            continue
        o = estimate_overhead(model, profile.name, bigger, pp, settings).total_bytes
        if profile.kv_budget(budget.gpu_memory_bytes, weights, o, settings, bigger).kv_budget_bytes > 0:
            return head + f"; smallest TP with a positive budget: {bigger}"
    return head + "; no TP up to 64 leaves memory for the KV cache"
