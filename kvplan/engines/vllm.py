"""vLLM profile: vLLM 0.33 (V1 engine) on an NVIDIA H100 unless told otherwise.

Budget: ``ceil(total × gpu_memory_utilization) − weights − overhead`` ("Available KV cache memory").
Blocks: ``num_blocks = budget // (group width × page)`` per worker, min over PP stages; the null
block is one of them. Logs: ``max_concurrency = num_blocks / Σ_groups blocks per request`` and
``GPU KV cache size = int(max_concurrency × max_model_len)`` tokens (vllm-0.33-behaviour.md).
"""

from __future__ import annotations

import math

from kvplan.engines.base import BudgetSteps, EnginePlan, GroupRow, Request, Settings
from kvplan.engines.vllm_groups import (
    DEFAULT_MAMBA_CHUNK_TOKENS,
    VGroup,
    VSpec,
    align_mamba,
    blocks_needed,
    kv_cache_groups,
    layer_vspec,
    mamba_block_size,
    stage_block_bytes,
)
from kvplan.errors import CapacityError, InputError, ShardingError
from kvplan.formulas.dtypes import KvDtype, resolve_kv_dtype
from kvplan.formulas.sharding import check_parallel, pp_layer_counts, shard_spec
from kvplan.formulas.sizing import kv_cache
from kvplan.specs import ChunkedAttn, FullAttn, LayerSpec, MLAAttn, SlidingAttn, layer_specs
from kvplan.units import GIB

VERSION = "vLLM 0.33"
GPU_MEMORY_UTILIZATION = 0.92  # vllm/config/cache.py as read for engines.md (0.9 before)
DEFAULT_BLOCK_SIZE = 16  # CacheConfig.DEFAULT_BLOCK_SIZE
MAX_NUM_BATCHED_TOKENS = 8192  # vLLM 0.33 `vllm serve` default on an H100
HOPPER = ("H100", "H200", "H800", "H20", "GH200")

# MLA backends in vLLM 0.33's priority on Hopper: (name, KV dtypes, block multiple, forced block).
# FLASH_ATTN_MLA has no fp8 cache; FLASHMLA kernels take blocks of 64; TRITON_MLA takes anything.
MLA_BACKENDS_SM90 = (("FLASH_ATTN_MLA", ("bf16", "fp16"), 16, DEFAULT_BLOCK_SIZE),
                     ("FLASHMLA", ("bf16", "fp16", "fp8", "fp8_e4m3"), 64, 64),
                     ("TRITON_MLA", None, 1, DEFAULT_BLOCK_SIZE))
MLA_BACKENDS_OTHER = (("TRITON_MLA", None, 1, DEFAULT_BLOCK_SIZE),)
# vLLM model files that split KV heads by tp without replicating them (tp > KV heads -> 0 heads).
KV_HEADS_NOT_REPLICATED = {"gpt_oss": "vllm/model_executor/models/gpt_oss.py"}


def mla_backend(dtype: KvDtype, block_size: int | None, gpu_name: str | None) -> tuple[str, int]:
    """The MLA backend vLLM picks and the block size it ends with."""
    if dtype.scale == "ds_mla":
        return "FLASHMLA_SPARSE", 64
    hopper = gpu_name is None or any(h in gpu_name.upper() for h in HOPPER)
    for name, dtypes, multiple, forced in MLA_BACKENDS_SM90 if hopper else MLA_BACKENDS_OTHER:
        if dtypes is not None and dtype.name not in dtypes:
            continue
        if block_size is None:
            return name, forced
        if block_size % multiple == 0:
            return name, block_size
    raise InputError(f"no vLLM MLA backend takes KV dtype {dtype.name} with block size {block_size}")


class VllmEngine:
    name = "vllm"
    version = VERSION

    def kv_budget(self, gpu_memory_bytes: int, weights_bytes: int, overhead_bytes: int,
                  settings: Settings, tp: int) -> BudgetSteps:
        util = settings.gpu_memory_utilization or GPU_MEMORY_UTILIZATION
        requested = math.ceil(gpu_memory_bytes * util)
        budget = requested - weights_bytes - overhead_bytes
        return BudgetSteps(kv_budget_bytes=budget, lines=(
            f"requested = ceil({gpu_memory_bytes:,} × gpu_memory_utilization {util}) = {requested:,} B",
            f"available KV = requested − weights {weights_bytes:,} − overhead {overhead_bytes:,} = {budget:,} B"))

    def plan(self, request: Request, budgets_per_stage: tuple[int, ...]) -> EnginePlan:
        return _Planner(request, budgets_per_stage).run()


class _Planner:
    def __init__(self, request: Request, budgets: tuple[int, ...]) -> None:
        self.req, self.s, self.m = request, request.settings, request.model
        self.budgets = budgets if len(budgets) == request.pp else budgets * request.pp
        self.notes: list[str] = []
        self.lines: list[str] = []

    def run(self) -> EnginePlan:
        req, m = self.req, self.m
        if m.max_model_len and req.max_model_len > m.max_model_len:
            raise InputError(f"vLLM refuses --max-model-len {req.max_model_len:,}: the model's maximum is "
                             f"{m.max_model_len:,} (set VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 to override)")
        specs = layer_specs(m, req.overrides)
        check_parallel(specs, m.num_attention_heads, req.tp, req.pp, req.dcp)
        self._check_kv_split(specs)
        vspecs = self._vspecs(specs)
        groups, uniform_type = kv_cache_groups(vspecs)
        return self._blocks(specs, vspecs, groups, uniform_type)

    def _check_kv_split(self, specs: tuple[LayerSpec, ...]) -> None:
        source = KV_HEADS_NOT_REPLICATED.get(self.m.model_type or "")
        heads = next((s.num_kv_heads for s in specs if isinstance(s, (FullAttn, SlidingAttn, ChunkedAttn))), 0)
        if source and heads and self.req.tp > heads:
            raise ShardingError(f"vLLM's {self.m.model_type} model ({source}) splits its {heads} KV heads over tp "
                                f"without replicating them: tp {self.req.tp} leaves 0 heads per rank "
                                f"(vLLM crashes); use tp <= {heads}")

    def _vspecs(self, specs: tuple[LayerSpec, ...]) -> tuple[VSpec | None, ...]:
        req, s = self.req, self.s
        dtype = resolve_kv_dtype(req.kv_dtype, self.m.dtype)
        state_dtype = resolve_kv_dtype("auto", self.m.dtype)
        self.dtype = dtype
        if any(isinstance(x, MLAAttn) for x in specs):
            backend, bs = mla_backend(dtype, s.block_size, req.gpu_name)
            if req.gpu_name and not any(h in req.gpu_name.upper() for h in HOPPER):
                self.notes.append(f"MLA backend table is vLLM's Hopper one; on {req.gpu_name} assumed TRITON_MLA")
        else:
            backend, bs = "FLASH_ATTN", s.block_size or DEFAULT_BLOCK_SIZE
        self.lines.append(f"attention backend {backend} (vLLM 0.33 on {req.gpu_name or 'H100'}), block size {bs}")
        per_rank = tuple(shard_spec(x, req.tp) for x in specs)
        vspecs = tuple(layer_vspec(x, dtype, state_dtype, bs, s.hybrid_kv_cache_manager) for x in per_rank)
        chunk = int(self.m.raw.get("mamba_chunk_size") or self.m.raw.get("chunk_size") or DEFAULT_MAMBA_CHUNK_TOKENS)
        mbs = mamba_block_size(vspecs, chunk, s.prefix_caching)
        if mbs is not None:
            vspecs = align_mamba(vspecs, mbs)
            self.notes.append(f"attention block size set to {mbs} tokens so one page holds a Mamba/linear state "
                              f"(chunk {chunk}, any --block-size is overridden)")
            self.lines.append(f"Mamba alignment: block = lcm({chunk}, 16) · cdiv(state page, lcm · page per token) "
                              f"= {mbs}")
        return vspecs

    def _blocks(self, specs: tuple[LayerSpec, ...], vspecs: tuple[VSpec | None, ...],
                groups: tuple[VGroup, ...], uniform_type: bool) -> EnginePlan:
        req, s = self.req, self.s
        stages, start = [], 0
        for count in pp_layer_counts(len(specs), req.pp):
            stages.append(range(start, start + count))
            start += count
        block_bytes = [stage_block_bytes(groups, vspecs, st, uniform_type) for st in stages]
        if 0 in block_bytes:
            raise InputError(f"PP stage {block_bytes.index(0)} holds no KV-cache layer; use a smaller --pp")
        batched = s.max_num_batched_tokens or MAX_NUM_BATCHED_TOKENS
        in_flight = batched * (req.pp + (1 if s.async_scheduling else 0))
        need = [blocks_needed(g.spec, req.max_model_len, in_flight, req.dcp, s.prefix_caching) for g in groups]
        for k, st in enumerate(stages):
            self._check_fits(k, st, vspecs, block_bytes[k], in_flight)
        num_blocks = min(b // bb for b, bb in zip(self.budgets, block_bytes, strict=True))
        concurrency = num_blocks / sum(need)
        if s.legacy_token_log:
            tokens = num_blocks // len(groups) * min(g.spec.block_size for g in groups if g.spec.kind != "mamba") * req.dcp
        else:
            tokens = int(concurrency * req.max_model_len)
        self._explain(groups, block_bytes, need, num_blocks, concurrency, tokens, in_flight)
        if req.dcp > 1:
            self.notes.append(f"DCP {req.dcp}: each rank stores cdiv(len, {req.dcp}) tokens of a request; the token "
                              "log is int(concurrency × max_model_len), i.e. multiplied by dcp (not in the sample)")
        block = min((g.spec.block_size for g in groups if g.spec.kind != "mamba"), default=1)
        steady = kv_cache(self.m, tp=req.tp, pp=req.pp, dcp=req.dcp, seq_len=req.max_model_len,
                          kv_dtype=req.kv_dtype, block_size=block, overrides=req.overrides)
        return EnginePlan(
            engine="vllm", version=VERSION, kv_dtype=self.dtype.name, block_size=block,
            page_bytes=max(block_bytes), num_blocks=num_blocks, kv_tokens=tokens, max_concurrency=concurrency,
            requests_at_max_len=concurrency, reserve_bytes_per_request=sum(need) * max(block_bytes),
            steady_bytes_per_request=steady.bytes_per_sequence_paged_per_gpu,
            groups=_rows(groups, need, stages, block_bytes), notes=tuple(self.notes), explain=tuple(self.lines))

    def _check_fits(self, k: int, stage: range, vspecs: tuple[VSpec | None, ...], block_bytes: int,
                    in_flight: int) -> None:
        """vLLM refuses when one max_model_len request does not fit beside the null block."""
        req = self.req
        available = self.budgets[k] - block_bytes

        def needed(length: int) -> int:
            return sum(blocks_needed(v, length, in_flight, req.dcp, self.s.prefix_caching) * v.page_bytes
                       for i, v in enumerate(vspecs) if v is not None and i in stage)
        if self.budgets[k] < block_bytes:
            raise CapacityError(f"vLLM refuses: no memory for KV cache blocks on PP stage {k} "
                                f"({self.budgets[k] / GIB:.2f} GiB < one block); raise --gpu-memory-utilization")
        if needed(req.max_model_len) <= available:
            return
        lo, hi = 0, req.max_model_len
        while lo < hi:  # largest length whose reservation fits (vLLM binary-searches the same)
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if needed(mid) <= available else (lo, mid - 1)
        where = f" on PP stage {k}" if req.pp > 1 else ""
        need = needed(req.max_model_len)
        raise CapacityError(f"vLLM refuses: one {req.max_model_len:,}-token request needs {need / GIB:.1f} GiB "
                            f"({need:,} B) of KV cache, more than the {self.budgets[k] / GIB:.1f} GiB available{where}"
                            f" ({available:,} B after the null block); estimated maximum model length is {lo} "
                            f"(use --max-model-len {lo} or more memory)")

    def _explain(self, groups: tuple[VGroup, ...], block_bytes: list[int], need: list[int], num_blocks: int,
                 concurrency: float, tokens: int, in_flight: int) -> None:
        widths = {len(g.layers) for g in groups}
        padding = (len(groups) * max(widths) - sum(len(g.layers) for g in groups)) if len(groups) > 1 else 0
        if padding:
            self.notes.append(f"hybrid groups padded with {padding} layers: up to "
                              f"{100 * padding / (len(groups) * max(widths)):.2f}% of the KV memory is never used")
        self.lines.append(f"{len(groups)} KV cache group(s) of {sorted(widths)} layers sharing one pool of block ids")
        for k, (budget, bb) in enumerate(zip(self.budgets, block_bytes, strict=True)):
            self.lines.append(f"stage {k}: one block = {bb:,} B; {budget:,} // {bb:,} = {budget // bb:,} blocks")
        self.lines.append(f"num_blocks = min over stages = {num_blocks:,} (includes the null block)")
        self.lines.append(f"in-flight tokens = max_num_batched_tokens × (pp + async) = {in_flight:,}")
        detail = " + ".join(f"{n}" for n in need)
        self.lines.append(f"blocks per max-length request = {detail} = {sum(need):,}")
        self.lines.append(f"max concurrency = {num_blocks:,} / {sum(need):,} = {concurrency:.2f}x")
        self.lines.append(f"GPU KV cache size = int({concurrency:.6f} × {self.req.max_model_len:,}) = {tokens:,} "
                          "tokens" if not self.s.legacy_token_log else
                          f"GPU KV cache size (legacy) = num_blocks // groups × block × dcp = {tokens:,} tokens")


def _rows(groups: tuple[VGroup, ...], need: list[int], stages: list[range], block_bytes: list[int]) -> tuple[
        GroupRow, ...]:
    heavy = stages[block_bytes.index(max(block_bytes))]
    rows: dict[str, GroupRow] = {}
    for g, n in zip(groups, need, strict=True):
        spec = g.spec
        prev = rows.get(spec.kind)
        layers = len(g.layers) + (prev.num_layers if prev else 0)
        on_gpu = sum(1 for i in g.layers if i in heavy) + (prev.num_layers_per_gpu if prev else 0)
        rows[spec.kind] = GroupRow(
            kind=spec.kind, num_layers=layers, num_layers_per_gpu=on_gpu,
            engine_groups=(prev.engine_groups if prev else 0) + 1, block_size=spec.block_size,
            page_bytes_per_layer=spec.page_bytes, blocks_per_request=n,
            tokens_reserved_per_request=0 if spec.kind == "mamba" else n * spec.block_size)
    return tuple(rows.values())
