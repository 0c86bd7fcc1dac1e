"""The worker side: build the model of one pipeline stage on the meta device,
as TP rank 0 of that stage, and collect its per-layer KV cache specs.

Mirrors, for one rank, the installed release's worker start-up; in vLLM 0.33.0:
  v1/executor/multiproc_executor.py:780-802 (init_device, load_model,
  update_block_size_for_backend) and
  v1/worker/gpu/attn_utils.py:138 get_kv_cache_spec (model runner V2; the V1
  runner's GPUModelRunner.get_kv_cache_spec, gpu_model_runner.py:7081, is the
  same loop).
"""

from __future__ import annotations

import contextlib
import copy
import types
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._device import _device_constructors
from vllm.distributed import parallel_state
from vllm.platforms import current_platform

from . import compat
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
    saved = {name: getattr(parallel_state, name, None) for name in groups}
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
    specs: dict[str, Any]
    backends: list[str]
    layouts: list[str]
    settings: dict[str, Any]  # the worker's config after its block-size update


def _runner_view(config: Any) -> Any:
    """The attributes GPUModelRunner.get_kv_cache_spec reads (model runner V1), set as the
    release's GPUModelRunner.__init__ sets them; the runner itself allocates device buffers."""
    model_config, cache_config = config.model_config, config.cache_config
    dtype = model_config.dtype
    if cache_config.cache_dtype == "auto":
        kv_cache_dtype = dtype
    else:
        kv_cache_dtype = compat.require("STR_DTYPE_TO_TORCH_DTYPE")[cache_config.cache_dtype]
    return types.SimpleNamespace(
        vllm_config=config, model_config=model_config, cache_config=cache_config,
        scheduler_config=config.scheduler_config, parallel_config=config.parallel_config,
        speculative_config=config.speculative_config, dtype=dtype, kv_cache_dtype=kv_cache_dtype,
        attention_chunk_size=getattr(model_config, "attention_chunk_size", None),
        shared_kv_cache_layers={}, runner_only_attn_layers=set(), kv_sharing_fast_prefill_eligible_layers=set(),
    )


def kv_cache_specs(config: Any) -> dict[str, Any]:
    """The worker's per-layer specs, by the model runner the release uses: V2's get_kv_cache_spec
    (v1/worker/gpu/attn_utils.py) where the config selects it, else GPUModelRunner.get_kv_cache_spec."""
    v2 = compat.symbol("get_kv_cache_spec")
    if v2 is not None and getattr(config, "use_v2_model_runner", False):
        return dict(v2(config))
    return dict(compat.require("GPUModelRunner").get_kv_cache_spec(_runner_view(config)))


def attention_backends(config: Any) -> list[Any]:
    """The attention backend classes of the built layers (0.18 on: vLLM's own helper)."""
    helper = compat.symbol("get_current_attn_backends")
    if helper is not None:
        return list(helper(config))
    layers = compat.require("get_layers_from_vllm_config")(config, compat.require("AttentionLayerBase"))
    found = []
    for layer in layers.values():
        backend = getattr(layer, "attn_backend", None)
        if backend is None and hasattr(layer, "get_attn_backend"):
            backend = layer.get_attn_backend()
        if backend is not None and backend not in found:
            found.append(backend)
    return found


def _backend_name(backend: Any) -> str:
    try:
        return str(backend.get_name())
    except NotImplementedError:  # 0.11's Mamba backends name no backend; the class does
        return str(backend.__name__)


def _build_model(config: Any) -> None:
    initialize = compat.require("initialize_model")
    with compat.require("set_default_torch_dtype")(config.model_config.dtype), MetaDeviceMode():
        initialize(vllm_config=config)


def build_stage(engine_config: Any, pp_rank: int) -> StageResult:
    """Load one stage's model (no weights) and read its KV cache specs."""
    parallel = engine_config.parallel_config
    tp, pp = parallel.tensor_parallel_size, parallel.pipeline_parallel_size
    # UniProcExecutor shares the engine's config object; multiproc workers
    # get a pickled copy (so their block-size updates stay in the worker).
    config = engine_config if tp * pp == 1 else copy.deepcopy(engine_config)
    if (workspace := compat.symbol("init_workspace_manager")) is not None:
        workspace(torch.device("meta"))  # gpu_worker.py does this (0.13 on)
    with fake_parallel_state(tp, pp, pp_rank), compat.require("set_current_vllm_config")(config):
        _build_model(config)
        if callable(getattr(type(current_platform), "update_block_size_for_backend", None)):
            current_platform.update_block_size_for_backend(config)  # 0.18 on
        specs = kv_cache_specs(config)
        backends = attention_backends(config)
    layouts_of = compat.symbol("get_supported_kv_cache_layouts")
    layouts = [layout.name for layout in layouts_of(backends)] if layouts_of is not None else []
    names = list(dict.fromkeys(_backend_name(b) for b in backends))
    return StageResult(pp_rank, specs, names, layouts,
                       settings_dict(config))
