"""The layouts `kvplan fit` tries for one replica, per engine, and why the winner beats the other family.

Every engine: every TP inside a node (``gpus_per_node``) that divides the heads as the engines require, every PP
from 1 up to the layers, and DCP where the engine offers it and the KV is replicated. A model with routed experts
also gets TP × PP with EP = TP where the engine runs EP alone, and, on an engine that plans data parallel as it runs
it, the engine's DP attention with expert parallelism (``Engine.data_parallel_layouts``: vLLM's D engines of TP × PP GPUs with EP = D × TP, SGLang's DP
attention inside its TP group; TensorRT-LLM and transformers: TP and PP only). A layout is a ``Parallel`` value; the
GPUs of its replica and how the launch command spreads it over nodes are the engine's (``replica_gpus``,
``multi_node``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from kvplan.config.model import ModelConfig
from kvplan.engines import Engine
from kvplan.errors import InputError, KvplanError
from kvplan.formulas.request import Parallel
from kvplan.formulas.sharding import check_parallel, kv_heads_per_rank
from kvplan.planning.capacity import CapacityResult


def tp_sizes(model: ModelConfig, gpus_per_node: int) -> list[int]:
    """Every TP inside one node that divides the attention heads (the rule every engine applies:
    kvplan.formulas.sharding.check_parallel) and the KV heads, or is a multiple of them (``kv_heads_per_rank``)."""
    out = []
    for tp in range(1, gpus_per_node + 1):
        try:
            check_parallel(model.layer_specs, model.num_attention_heads, tp, 1, 1)
            if model.num_kv_heads and not model.is_mla:
                kv_heads_per_rank(model.num_kv_heads, tp)
        except KvplanError:
            continue
        out.append(tp)
    return out


def dcp_sizes(profile: Engine, model: ModelConfig, tp: int) -> list[int]:
    """DCP sizes above 1 where the engine offers decode context parallel and it can save memory: the KV is
    replicated over the TP ranks (MLA's latent, or GQA with tp above the KV heads); dcp divides tp, and for GQA is at
    most tp // kv heads and divides the query heads per KV head (vLLM 0.33's checks: engines/vllm/checks.py)."""
    if not profile.supports_dcp or tp == 1:
        return []
    if model.is_mla:
        return [d for d in range(2, tp + 1) if tp % d == 0]
    kv, heads = model.num_kv_heads, model.num_attention_heads
    if not kv or tp <= kv:
        return []
    return [d for d in range(2, tp // kv + 1) if tp % d == 0 and (heads // kv) % d == 0]


def layouts(model: ModelConfig, gpus_per_node: int, max_gpus: int) -> list[tuple[int, int]]:
    """(tp, pp) pairs: every TP of ``tp_sizes``, every PP from 1 up to the layers, tp × pp ≤ max_gpus."""
    return [(t, p) for t in tp_sizes(model, gpus_per_node) for p in range(1, min(model.num_layers, max_gpus // t) + 1)]


def gpus_allowed(max_gpus: int | None, nodes: int | None, gpus_per_node: int) -> int:
    """--max-gpus, within --nodes × --gpus-per-node; neither given: 8 nodes. A count below 1 is refused."""
    for name, value in (("nodes", 1 if nodes is None else nodes), ("gpus_per_node", gpus_per_node)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise InputError(f"{name} must be positive, got {value}", arg=name)
    if nodes is None:
        return 8 * gpus_per_node if max_gpus is None else max_gpus
    return nodes * gpus_per_node if max_gpus is None else min(max_gpus, nodes * gpus_per_node)


def shapes(profile: Engine, model: ModelConfig, gpus_per_node: int, max_gpus: int) -> list[Parallel]:
    """Every layout fit tries: TP × PP (``layouts``), with each DCP the engine offers (``dcp_sizes``); for a model
    with routed experts also TP × PP with EP = TP (``expert_parallel_alone``) and the engine's DP attention + EP,
    with PP inside each DP rank where the engine takes it (``data_parallel_with_pp``)."""
    pairs = layouts(model, gpus_per_node, max_gpus)
    out = [Parallel(tp=t, pp=p, dcp=d) for t, p in pairs for d in (1, *dcp_sizes(profile, model, t))]
    if not model.field("num_experts"):
        return out
    if profile.expert_parallel_alone:
        out += [Parallel(tp=t, pp=p, ep=t) for t, p in pairs if t > 1]
    for dp in profile.data_parallel_layouts(gpus_per_node, max_gpus):
        stages = range(1, min(model.num_layers, max_gpus // dp.dp_gpus) + 1) if profile.data_parallel_with_pp else (1,)
        staged = [replace(dp, pp=p) for p in stages]
        out += [s for s in staged if profile.replica_gpus(s) <= max_gpus]
    return out


def shape_label(shape: Parallel) -> str:
    """`DP 8 + EP 8 (TP 1)`, `TP 8 PP 2`."""
    if shape.dp > 1:
        ep = f" + EP {shape.ep}" if shape.ep > 1 else ""
        return f"DP {shape.dp}{ep} (TP {shape.tp}" + (f" PP {shape.pp})" if shape.pp > 1 else ")")
    return (f"TP {shape.tp}" + (f" PP {shape.pp}" if shape.pp > 1 else "") + (f" DCP {shape.dcp}" if shape.dcp > 1 else "")
            + (f" + EP {shape.ep}" if shape.ep > 1 else ""))


@dataclass(frozen=True, slots=True)
class Planned:
    """What `why` compares: a layout tried, its GPUs per replica and the KV tokens of the whole replica."""

    shape: Parallel
    gpu: str
    kv_dtype: str
    gpus: int
    kv_tokens: int


def why(best: Planned, ranked: Sequence[Planned]) -> str | None:
    """The winner against the first-ranked layout of the other family (DP attention or not) on the same GPUs:
    the ratio of their KV tokens per replica, both as planned, and what decided the rank when it is not
    capacity. None when the other family was not planned there."""
    rivals = [p for p in ranked if p.gpu == best.gpu and p.kv_dtype == best.kv_dtype and p.gpus == best.gpus
              and (p.shape.dp > 1) != (best.shape.dp > 1) and p.kv_tokens > 0]
    if not rivals or best.kv_tokens <= 0:
        return None
    rival = rivals[0]
    fewer_pp = f"; ranked first for PP {best.shape.pp} against {rival.shape.pp}" \
        if best.kv_tokens < rival.kv_tokens and best.shape.pp < rival.shape.pp else ""
    one_stage = next((p for p in rivals if p.shape.pp == 1 and p.shape.dp == 1), None)  # plain TP on these GPUs
    plain_tp = f"; {best.kv_tokens / one_stage.kv_tokens:.2f}× {shape_label(one_stage.shape)}'s " \
        f"({one_stage.kv_tokens:,})" if one_stage is not None and one_stage != rival else ""
    return (f"{shape_label(best.shape)}: {best.kv_tokens / rival.kv_tokens:.2f}× the KV tokens of "
            f"{shape_label(rival.shape)} on the same {best.gpus:,} {best.gpu} GPUs ({best.kv_tokens:,} vs "
            f"{rival.kv_tokens:,} tokens per replica){plain_tp}{fewer_pp}")


def limiting_stage(result: CapacityResult) -> int | None:
    """The PP stage with the fewest tokens for its budget (budget / bytes per token of its own layers): the one
    every stage is cut to (vLLM 0.33 v1/core/kv_cache_planning.py:1561-1594, the min over workers; SGLang from
    0.5.2 the min over PP ranks). None with one stage or nothing cached."""
    budgets, layout = result.kv_budget_bytes_per_gpu, result.layout
    if layout is None or len(budgets) < 2 or len(layout.stages) != len(budgets):
        return None
    tokens = [(b / s.bytes_per_token(), k) for k, (b, s) in enumerate(zip(budgets, layout.stages, strict=True))
              if s.bytes_per_token() > 0]
    return min(tokens)[1] if tokens else None
