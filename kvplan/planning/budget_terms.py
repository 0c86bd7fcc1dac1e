"""The terms one GPU of a PP stage subtracts before the KV cache (``kvplan.planning.budget`` assembles them into the
budget): the checkpoint's weights and what the load adds, what shares the GPU beside them, the profile run's
activation peak and persistent buffers, non-torch memory (measured or logged sizes, NCCL buffers per process group)
and CUDA graphs; each exact or an estimate that says why (``provenance.audited``). The user's figures replace the
estimates in ``overridden``.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

from kvplan.engines import BudgetRules, BudgetTerm, Request
from kvplan.formulas.sharding import pp_layer_counts
from kvplan.memo import IdentityCache
from kvplan.planning.after_kv import CUDA_GRAPH_BYTES
from kvplan.planning.extras import encoder_phase, extra_terms
from kvplan.planning.profile_run import activation_term, persistent_term
from kvplan.planning.provenance import audited
from kvplan.planning.weights import weights_source
from kvplan.planning.weights.loaded import loaded_extras
from kvplan.units import GIB, MIB, format_gib

if TYPE_CHECKING:
    from kvplan.config.model import ModelConfig
    from kvplan.engines.rules import ProfileRun
    from kvplan.planning.request import Memory

# Non-torch memory an engine may subtract: (bytes, source). Measured or read off logs; never fitted.
NON_TORCH: dict[str, tuple[str, int, str]] = {
    "cuda_context": ("CUDA context", 552_402_944,
                     "measured after torch.cuda.init() on an H100 (driver 580, torch 2.11, CUDA 13)"),
    "cublas_handles": ("cuBLAS handles", 165_675_008, "measured outside torch on the same H100"),
    "context_cublas_absolute": ("CUDA context + cuBLAS (non-torch, absolute)", int(0.35 * GIB),
                                "vLLM 0.6.4 log non_torch_memory=0.35GiB on an RTX 3090, torch 2.5 / CUDA 12 "
                                "(vllm-project/vllm#10517)"),
    "non_torch_growth": ("non-torch growth after the snapshot", int(0.05 * GIB),
                         "0.01-0.16 GiB at tp 1 in eight vLLM V0/V1 logs (T4, RTX 2060, A100, H100)"),
}
NCCL_BYTES_PER_GROUP = 256 * MIB  # estimate; a tp-8 A100 V0 log shows 2.10 GiB with custom all-reduce



def non_torch_terms(rules: BudgetRules) -> list[BudgetTerm]:
    return list(_non_torch_terms(rules.non_torch, rules.nccl_groups, rules.comm))


@lru_cache(maxsize=64)
def _non_torch_terms(non_torch: tuple[str, ...], nccl_groups: int, comm: Any) -> tuple[BudgetTerm, ...]:
    """The non-torch terms, once per release's keys and groups (fit asks them for every stage of every setup)."""
    out = [BudgetTerm(name=NON_TORCH[key][0], bytes=NON_TORCH[key][1], exact=False, source=NON_TORCH[key][2],
                      kind="non_torch") for key in non_torch]
    if nccl_groups:
        out.append(BudgetTerm(name=f"NCCL buffers ({nccl_groups} process group(s))",
                              bytes=nccl_groups * NCCL_BYTES_PER_GROUP, exact=False, kind="non_torch",
                              source="estimate: 256 MiB per TP/PP group"))
    if comm is not None:
        c = comm
        size = c.group_bytes
        name = ("TP communicator created in the profile run" if c.when == "profile" else
                f"NCCL buffers ({c.tp_groups + c.pp_groups} process group(s))")
        measured = f" {c.measured_on}" if c.when == "profile" else ""
        out.append(BudgetTerm(
            name=name, bytes=c.tp_groups * size
            + c.pp_groups * c.pp_group_bytes, exact=False, kind="non_torch",
            source=f"estimate from vLLM{measured} logs: {format_gib(size)} GiB per TP group "
                   f"({'NVSwitch GPU' if c.nvls else 'no NVLink SHARP'}), {format_gib(c.pp_group_bytes)}"
                   " per PP group"))
    return tuple(out)


def stage_terms(request: Request, rules: BudgetRules, weights: int, stage: int,
                weights_dtype: str | None = None, what_if: bool = False) -> tuple[BudgetTerm, ...]:
    """Everything subtracted on one GPU of `stage`, in the order the engine meets it; a term whose inputs are not all
    exact is an estimate that says why (``provenance.audited``). `what_if`: `weights_dtype` is the user's what-if
    format, not the checkpoint's or the engine's online quantization."""
    counts = pp_layer_counts(request.model.num_layers, request.pp)
    exact, source = weights_source(request.model, weights_dtype)
    terms = [BudgetTerm(name="weights (checkpoint)", bytes=weights, exact=exact, kind="weights", source=source),
             *loaded_extras(request.model, rules, request.tp, counts[stage], first=sum(counts[:stage])),
             *extra_terms(request, rules, stage, weights_dtype)]
    if rules.profile is not None:
        phase = encoder_phase(request.model, rules.encoder, request.max_model_len, request.tp) \
            if rules.encoder is not None and stage == 0 else None
        terms.append(_activation(request.model, request.tp, rules.profile, stage == request.pp - 1, phase))
        run = rules.profile
        terms += [t for t in (_PERSISTENT.get(request.model, run, lambda: persistent_term(request.model, run)),) if t]
    terms += non_torch_terms(rules)
    if rules.cuda_graphs:
        terms.append(_cuda_graph_term())
    return audited(tuple(terms), request, rules, weights_dtype, what_if)


_ACTIVATION: IdentityCache[BudgetTerm] = IdentityCache(maxsize=256)
_PERSISTENT: IdentityCache[BudgetTerm | None] = IdentityCache(maxsize=64)  # per model and profile run


@lru_cache(maxsize=1)
def _cuda_graph_term() -> BudgetTerm:
    """The CUDA graphs estimate: one term, built once."""
    return BudgetTerm(name="CUDA graphs", bytes=CUDA_GRAPH_BYTES, exact=False, kind="cuda_graphs",
                      source="estimate: vLLM 0.19-0.26 logs estimate 0.13-0.78 GiB (median 0.39); 0 with enforce_eager")


def _activation(model: ModelConfig, tp: int, run: ProfileRun, last_stage: bool,
                encoder: tuple[int, str] | None) -> BudgetTerm:
    """activation_term, once per model, TP, profile run and last-stage flag (fit asks it for every stage of every
    setup); a multimodal encoder's phase is asked as it is."""
    if encoder is not None:
        return activation_term(model, tp, run, last_stage=last_stage, encoder=encoder)
    return _ACTIVATION.get(model, (tp, run, last_stage), lambda: activation_term(model, tp, run, last_stage=last_stage))


def overridden(terms: tuple[BudgetTerm, ...], memory: Memory) -> tuple[BudgetTerm, ...]:
    """The terms with the user's figures in place of estimates."""
    if memory.overhead_bytes is not None:
        keep = tuple(t for t in terms if t.kind in ("weights", "draft_weights"))
        return (*keep, BudgetTerm(name="overhead (given)", bytes=memory.overhead_bytes, exact=True, kind="given",
                                  source="overhead_bytes"))
    if memory.non_torch_bytes is not None:
        keep = tuple(t for t in terms if t.kind != "non_torch")
        return (*keep, BudgetTerm(name="non-torch (given)", bytes=memory.non_torch_bytes, exact=True,
                                  kind="non_torch", source="non_torch_bytes"))
    return terms
