"""The worker side: build the model of one pipeline stage on the meta device,
as TP rank 0 of that stage, and collect its per-layer KV cache specs.

Mirrors, for one rank, vLLM 0.33.0's
  v1/executor/multiproc_executor.py:780-802 (init_device, load_model,
  update_block_size_for_backend) and
  v1/worker/gpu/attn_utils.py:138 get_kv_cache_spec (model runner V2; the V1
  runner's GPUModelRunner.get_kv_cache_spec, gpu_model_runner.py:7081, is the
  same loop).
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._device import _device_constructors
from vllm.config import VllmConfig, set_current_vllm_config
from vllm.distributed import parallel_state
from vllm.distributed.kv_transfer.kv_connector.utils import get_current_attn_backends
from vllm.model_executor.model_loader.utils import initialize_model
from vllm.platforms import current_platform
from vllm.utils.torch_utils import set_default_torch_dtype
from vllm.v1.attention.backends.utils import get_supported_kv_cache_layouts
from vllm.v1.kv_cache_interface import KVCacheSpec
from vllm.v1.worker.gpu.attn_utils import get_kv_cache_spec
from vllm.v1.worker.workspace import init_workspace_manager

from .records import settings_dict

# Tensors made from Python values stay on the CPU, so that a constructor can
# read a scalar back with .item() (as it would from the GPU).
_FROM_DATA = {torch.tensor, torch.as_tensor, torch.scalar_tensor, torch.asarray}
_FACTORIES = _device_constructors() - _FROM_DATA


class MetaDeviceMode(TorchFunctionMode):
    """Like `with torch.device("meta")`, but also for tensors a constructor
    places explicitly on "cuda" / current_device(), and `.to(device)` moves."""

    def __torch_function__(self, func, types, args=(), kwargs=None):  # type: ignore[override]
        kwargs = dict(kwargs or {})
        if func in _FACTORIES:
            kwargs["device"] = "meta"
        elif func in _FROM_DATA:
            kwargs["device"] = "cpu"
        elif func is torch.Tensor.cuda:
            return args[0]
        elif func is torch.Tensor.to:
            kwargs.pop("device", None)
            args = (args[0], *(a for a in args[1:] if not isinstance(a, (str, int, torch.device))))
            if len(args) == 1 and not kwargs:
                return args[0]
        return func(*args, **kwargs)


class _FakeProcessGroup:
    def __init__(self, ranks: list[int], rank: int) -> None:
        self._ranks, self._rank = ranks, rank

    def size(self) -> int:
        return len(self._ranks)

    def rank(self) -> int:
        return self._ranks.index(self._rank)


def _fake_group(ranks: list[int], rank: int, name: str) -> Any:
    """A GroupCoordinator with only the attributes layer constructors read."""
    group = parallel_state.GroupCoordinator.__new__(parallel_state.GroupCoordinator)
    process_group = _FakeProcessGroup(ranks, rank)
    group.__dict__.update(
        rank=rank, ranks=list(ranks), world_size=len(ranks),
        rank_in_group=ranks.index(rank), local_rank=rank % 8, unique_name=name,
        device_group=process_group, cpu_group=process_group,
        device_communicator=None, mq_broadcaster=None,
        use_device_communicator=False, use_custom_op_call=False,
    )
    return group


@contextlib.contextmanager
def fake_parallel_state(tp: int, pp: int, pp_rank: int) -> Iterator[None]:
    """Be global rank `pp_rank * tp` (TP rank 0 of stage `pp_rank`), with the
    rank layout of parallel_state.initialize_model_parallel (dp = pcp = dcp = 1)."""
    rank = pp_rank * tp
    tp_ranks = [pp_rank * tp + i for i in range(tp)]
    groups = dict(
        _WORLD=_fake_group(list(range(tp * pp)), rank, "world"),
        _TP=_fake_group(tp_ranks, rank, "tp"),
        _PP=_fake_group([p * tp for p in range(pp)], rank, "pp"),
        _DP=_fake_group([rank], rank, "dp"),
        _DCP=_fake_group([rank], rank, "dcp"),
        _PCP=_fake_group([rank], rank, "pcp"),
        _EP=_fake_group(tp_ranks, rank, "ep"),
    )
    groups.update(_ETP=groups["_TP"], _INNER_DP_WORLD=groups["_WORLD"], _NODE_COUNT=1)
    saved = {name: getattr(parallel_state, name) for name in groups}
    for name, value in groups.items():
        setattr(parallel_state, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(parallel_state, name, value)


@dataclass
class StageResult:
    pp_rank: int
    specs: dict[str, KVCacheSpec]
    backends: list[str]
    layouts: list[str]
    settings: dict[str, Any]  # the worker's config after its block-size update


def build_stage(engine_config: VllmConfig, pp_rank: int) -> StageResult:
    """Load one stage's model (no weights) and read its KV cache specs."""
    parallel = engine_config.parallel_config
    tp, pp = parallel.tensor_parallel_size, parallel.pipeline_parallel_size
    # UniProcExecutor shares the engine's config object; multiproc workers
    # get a pickled copy (so their block-size updates stay in the worker).
    config = engine_config if tp * pp == 1 else copy.deepcopy(engine_config)
    init_workspace_manager(torch.device("meta"))  # gpu_worker.py:558 does this
    with fake_parallel_state(tp, pp, pp_rank), set_current_vllm_config(config):
        with set_default_torch_dtype(config.model_config.dtype), MetaDeviceMode():
            initialize_model(vllm_config=config)
        current_platform.update_block_size_for_backend(config)
        specs = get_kv_cache_spec(config)
        backends = get_current_attn_backends(config)
    layouts = [layout.name for layout in get_supported_kv_cache_layouts(backends)]
    names = list(dict.fromkeys(b.get_name() for b in backends))
    return StageResult(pp_rank, specs, names, layouts,
                       settings_dict(config))
