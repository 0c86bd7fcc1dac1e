"""vLLM's data and expert parallelism, as each release runs them (read from the releases' code).

- ``--data-parallel-size D`` (first in 0.8.5, ``engine/arg_utils.py``) is outside tensor parallelism: a replica is
  D engines of ``tp × pp`` GPUs each (``world_size_across_dp = world_size × D``, 0.33 ``config/parallel.py:627-629``,
  ``:964-968``). Every DP rank is an engine core of its own (``DPEngineCoreProc``, 0.33 ``v1/engine/core.py:1545-1549``;
  a dense model's ranks are plain independent engines from 0.14, ``:1551-1555``) that profiles its memory, plans its
  own KV pool at TP ``tp`` (``get_kv_cache_configs`` takes the min over one engine's workers only, 0.33
  ``v1/core/kv_cache_planning.py:1580-1594``) and logs its own "GPU KV cache size". ``--max-num-seqs`` applies per
  DP rank (0.33 ``config/scheduler.py:99-103``, ``v1/core/sched/scheduler.py:131``).
- Attention and the dense layers are cut by ``tp`` inside a DP rank, whole across DP ranks; the MoE layers are
  flattened over DP: MoE TP = D × tp, or with ``--enable-expert-parallel`` EP = D × tp, each GPU holding whole
  experts (0.33 ``model_executor/layers/fused_moe/config.py:1198-1230``; 0.8.5 ``fused_moe/layer.py:424-465``).
  ``--enable-expert-parallel`` is first in 0.8.0 (``engine/arg_utils.py:118``); on a model without experts vLLM
  refuses it (0.8.5 ``config.py:885-887``, 0.33 ``config/model.py:1498-1503``).
Which releases have the flags is the rows' ``data_parallel`` and ``expert_parallel``.
"""

from __future__ import annotations

from kvplan.engines.base import Request, WeightSplit
from kvplan.engines.vllm.releases import VllmRelease
from kvplan.engines.vllm.rows_late import first_with
from kvplan.errors import InputError


def check(rel: VllmRelease, req: Request) -> None:
    """The release has the flags, ep is what --enable-expert-parallel makes (dp × tp), and the model has experts."""
    dp, ep, tp = req.dp, req.ep, req.tp
    if dp > 1 and not rel.data_parallel:
        raise InputError(f"{rel.label} has no --data-parallel-size (first in vLLM {first_with('data_parallel')})",
                         arg="dp")
    if ep == 1:
        return
    if not rel.expert_parallel:
        raise InputError(f"{rel.label} has no --enable-expert-parallel (first in vLLM 0.8.0's V1 engine)", arg="ep")
    if ep != req.parallel.dp_tp:
        raise InputError(f"ep {ep}: vLLM's expert parallel (--enable-expert-parallel) spans the data-parallel group, "
                         f"EP = DP {dp} × TP {tp} = {req.parallel.dp_tp} "
                         "(vllm/model_executor/layers/fused_moe/config.py:1198-1230)",
                         arg="ep")
    if not req.model.field("num_experts"):
        raise InputError("Number of experts in the model must be greater than 0 when expert parallelism is enabled. "
                         f"({rel.label}, vllm/config/model.py:1498-1503)", arg="ep")  # vLLM's words, verbatim


def weight_split(req: Request) -> WeightSplit:
    """Attention and dense layers by tp; the MoE at TP dp × tp, or over EP dp × tp ranks with whole experts."""
    return WeightSplit(tp=req.tp, ep=req.ep, expert_tp=req.parallel.dp_tp)


def notes(req: Request, kv_tokens: int) -> tuple[str, ...]:
    """What data parallel means for the numbers: per DP rank, and the replica's D pools."""
    dp, tp, pp = req.dp, req.tp, req.pp
    out = []
    if dp > 1:
        out.append(f"data parallel {dp}: {dp} engines of TP {tp} × PP {pp} ({req.parallel.dp_gpus} GPUs), each planning and "
                   f"logging its own pool of {kv_tokens:,} tokens (vllm/v1/engine/core.py DPEngineCoreProc): "
                   f"{dp * kv_tokens:,} tokens in the replica; --max-num-seqs "
                   f"{req.settings.max_num_seqs or 'default'} applies per DP rank (vllm/config/scheduler.py:99-103)")
    if req.model.field("num_experts") and (dp > 1 or req.ep > 1):
        moe = (f"expert parallel {req.ep}: whole experts, about 1/{req.ep} of them per GPU" if req.ep > 1 else
               f"MoE TP {req.parallel.dp_tp}: every expert on every GPU, cut {req.parallel.dp_tp} ways")
        out.append(f"weights: attention and dense layers cut by TP {tp}" + (" (whole in every DP rank)" if dp > 1 else "")
                   + f"; {moe} (vllm/model_executor/layers/fused_moe/config.py)")
    return tuple(out)
