"""The layouts `kvplan fit` tries for one replica, per engine, and why the winner beats the other family.

Every engine: TP a power of two inside a node (``gpus_per_node``), PP over the stage counts engines use.
A model with routed experts, on an engine that plans data parallel as it runs it, also gets DP attention with
expert parallelism:

- vLLM (``--data-parallel-size D --enable-expert-parallel``, 0.8.5 on): D engines of TP × PP GPUs, each with
  its own KV pool; EP = D × TP (0.33 ``model_executor/layers/fused_moe/config.py:1198-1230``); the replica is
  D × TP × PP GPUs, the DP ranks may sit on different nodes (``--data-parallel-size-local``, 0.9.0 on), TP stays
  inside a node. Tried with TP 1 and 2 (a DP rank's attention whole or cut in two), PP 1.
- SGLang (``--tp-size T --dp-size T --enable-dp-attention --ep-size T``): the T GPUs of the TP group split into
  T attention groups of one GPU, each its own pool; experts over EP T (0.5.2 ``layers/dp_attention.py``,
  ``distributed/parallel_state.py:1461-1462``). The TP group may span nodes (``--nnodes``, 0.5.2
  ``managers/data_parallel_controller.py:209-245``); attention TP is 1, inside a node.
- TensorRT-LLM and transformers: TP and PP only (kvplan refuses TRT-LLM's attention DP and EP as not modelled).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kvplan.errors import InputError
from kvplan.planning.capacity import CapacityResult
from kvplan.units import cdiv

TPS = (1, 2, 4, 8, 16, 32, 64)
PPS = (1, 2, 3, 4, 6, 8, 16)
DPS = (2, 4, 8, 16, 32, 64)
VLLM_DP_TPS = (1, 2)  # TP inside one DP rank of a DP + EP layout (DeepSeek's recipes: 1; 2 halves the attention)


@dataclass(frozen=True, slots=True)
class Shape:
    """One replica's parallel sizes as kvplan's request takes them (CacheRequest.tp, pp, dp, ep)."""

    tp: int
    pp: int
    dp: int = 1
    ep: int = 1


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


def replica_gpus(engine: str, shape: Shape) -> int:
    """GPUs of one replica as the engine lays it out: vLLM dp × tp × pp; SGLang's DP attention is inside tp."""
    return shape.dp * shape.tp * shape.pp if engine == "vllm" else shape.tp * shape.pp


def shapes(engine: str, moe: bool, gpus_per_node: int, max_gpus: int) -> list[Shape]:
    """Every layout fit tries: TP × PP, and for a model with experts the engine's DP attention + EP."""
    out = [Shape(t, p) for t, p in layouts(gpus_per_node, max_gpus)]
    if not moe:
        return out
    if engine == "vllm":
        out += [Shape(t, 1, d, d * t) for t in VLLM_DP_TPS for d in DPS if t <= gpus_per_node and d * t <= max_gpus]
    elif engine == "sglang":
        out += [Shape(t, 1, t, t) for t in DPS if t <= max_gpus]
    return out


def launch_extra(engine: str, shape: Shape, gpus_per_node: int) -> dict[str, Any]:
    """The multi-node part of the launch command (kvplan.launch.write): one replica over ``nodes`` nodes.
    vLLM: DP ranks spread with --data-parallel-size-local (ranks per node), a DP rank itself over nodes with
    --nnodes; SGLang --nnodes; TensorRT-LLM --gpus_per_node."""
    gpus = replica_gpus(engine, shape)
    nodes = cdiv(gpus, gpus_per_node)
    if nodes == 1:
        return {}
    if engine == "vllm" and shape.dp > 1 and shape.tp * shape.pp <= gpus_per_node:
        return {"dp_local": cdiv(shape.dp, nodes), "nodes": nodes}
    if engine == "trtllm":
        return {"gpus_per_node": gpus_per_node}
    return {"nodes": nodes}


def shape_label(shape: Shape) -> str:
    """`DP 8 + EP 8 (TP 1)`, `TP 8 PP 2`."""
    if shape.dp > 1:
        ep = f" + EP {shape.ep}" if shape.ep > 1 else ""
        return f"DP {shape.dp}{ep} (TP {shape.tp}" + (f" PP {shape.pp})" if shape.pp > 1 else ")")
    return f"TP {shape.tp}" + (f" PP {shape.pp}" if shape.pp > 1 else "")


@dataclass(frozen=True, slots=True)
class Planned:
    """What `why` compares: a layout tried, its GPUs per replica and the KV tokens of the whole replica."""

    shape: Shape
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
