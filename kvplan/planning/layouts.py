"""The layouts `kvplan fit` tries for one replica, per engine, and why the winner beats the other family.

Every engine: TP a power of two inside a node (``gpus_per_node``), PP over the stage counts engines use. A model
with routed experts, on an engine that plans data parallel as it runs it, also gets the engine's DP attention with
expert parallelism (``Engine.data_parallel_layouts``: vLLM's D engines of TP × PP GPUs with EP = D × TP, SGLang's DP
attention inside its TP group; TensorRT-LLM and transformers: TP and PP only). A layout is a ``Parallel`` value; the
GPUs of its replica and how the launch command spreads it over nodes are the engine's (``replica_gpus``,
``multi_node``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kvplan.engines import Engine
from kvplan.errors import InputError
from kvplan.formulas.request import Parallel
from kvplan.planning.capacity import CapacityResult

TPS = (1, 2, 4, 8, 16, 32, 64)
PPS = (1, 2, 3, 4, 6, 8, 16)


def layouts(gpus_per_node: int, max_gpus: int) -> list[tuple[int, int]]:
    """(tp, pp) pairs: TP a power of two inside a node, PP the stage counts engines use, tp × pp ≤ max_gpus."""
    tps = [t for t in TPS if t <= gpus_per_node]
    pps = [p for p in PPS if p * tps[0] <= max_gpus]
    return [(t, p) for t in tps for p in pps if t * p <= max_gpus]


def gpus_allowed(max_gpus: int | None, nodes: int | None, gpus_per_node: int) -> int:
    """--max-gpus, within --nodes × --gpus-per-node; neither given: 8 nodes. A count below 1 is refused."""
    for name, value in (("nodes", 1 if nodes is None else nodes), ("gpus_per_node", gpus_per_node)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise InputError(f"{name} must be positive, got {value}", arg=name)
    if nodes is None:
        return 8 * gpus_per_node if max_gpus is None else max_gpus
    return nodes * gpus_per_node if max_gpus is None else min(max_gpus, nodes * gpus_per_node)


def shapes(profile: Engine, moe: bool, gpus_per_node: int, max_gpus: int) -> list[Parallel]:
    """Every layout fit tries: TP × PP, and for a model with experts the engine's DP attention + EP."""
    out = [Parallel(tp=t, pp=p) for t, p in layouts(gpus_per_node, max_gpus)]
    return out + list(profile.data_parallel_layouts(gpus_per_node, max_gpus)) if moe else out


def shape_label(shape: Parallel) -> str:
    """`DP 8 + EP 8 (TP 1)`, `TP 8 PP 2`."""
    if shape.dp > 1:
        ep = f" + EP {shape.ep}" if shape.ep > 1 else ""
        return f"DP {shape.dp}{ep} (TP {shape.tp}" + (f" PP {shape.pp})" if shape.pp > 1 else ")")
    return f"TP {shape.tp}" + (f" PP {shape.pp}" if shape.pp > 1 else "")


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
