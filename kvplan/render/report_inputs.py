"""`kvplan report`'s ``inputs``: the config fields that decide the answer, the request, the engine releases
applied, and every default the answer rests on that the user did not set."""

from __future__ import annotations

from dataclasses import dataclass, field

from kvplan.engines import DEFAULT_ENGINE, Settings, get_engine
from kvplan.planning.budget import DEFAULT_GPU
from kvplan.render.payload import INLINE
from kvplan.render.size import Parallel
from kvplan.workflows.report import Report


@dataclass(frozen=True, slots=True, kw_only=True)
class LinearStatePayload:
    conv_kernel: int
    conv_channels: int
    num_state_heads: int
    state_rows: int
    state_cols: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelFields:
    """The config fields that decide the answer."""

    model_type: str | None
    architectures: tuple[str, ...] | None
    model_dtype: str
    quantization: str | None
    num_layers: int
    layer_kinds: dict[str, int]  # layer kind -> layers (the kinds a model has: an open set)
    num_attention_heads: int
    num_kv_heads: int
    head_dim: int | None
    v_head_dim: int | None
    hidden_size: int
    kv_lora_rank: int | None
    qk_rope_head_dim: int | None
    qk_nope_head_dim: int | None
    mla_v_head_dim: int | None
    sliding_window: int | None
    attention_chunk_size: int | None
    max_position_embeddings: int | None
    linear_state: LinearStatePayload | None


@dataclass(frozen=True, slots=True)
class EngineRef:
    engine: str
    version: str


@dataclass(frozen=True, slots=True, kw_only=True)
class InputsPayload:
    model: str
    config: str
    config_path: str
    fields: ModelFields = field(metadata=INLINE)
    max_model_len: int
    kv_dtypes: tuple[str, ...]
    parallel: Parallel
    gpu: str | None
    gpu_memory_bytes: int | None
    kv_budget_bytes: tuple[int, ...] | None
    overhead_bytes: int | None
    weights_dtype: str | None
    block_size: int | None
    engines: tuple[EngineRef, ...]
    assumed: tuple[str, ...]
    model_notes: tuple[str, ...]


def _raw_text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _model_fields(report: Report) -> ModelFields:
    m = report.model
    kinds: dict[str, int] = {}
    for kind in m.layer_kinds:
        kinds[kind] = kinds.get(kind, 0) + 1
    quant, names, s = m.raw.get("quantization_config"), m.raw.get("architectures"), m.linear
    return ModelFields(
        model_type=m.model_type, architectures=tuple(map(str, names)) if isinstance(names, list) else None,
        model_dtype=m.dtype, quantization=_raw_text(quant.get("quant_method")) if isinstance(quant, dict) else None,
        num_layers=m.num_layers, layer_kinds=kinds, num_attention_heads=m.num_attention_heads,
        num_kv_heads=m.num_kv_heads, head_dim=None if m.is_mla else m.head_dim,
        v_head_dim=None if m.is_mla else m.v_head_dim, hidden_size=m.hidden_size, kv_lora_rank=m.kv_lora_rank,
        qk_rope_head_dim=m.qk_rope_head_dim, qk_nope_head_dim=m.qk_nope_head_dim, mla_v_head_dim=m.mla_v_head_dim,
        sliding_window=m.sliding_window, attention_chunk_size=m.attention_chunk_size,
        max_position_embeddings=m.max_model_len, linear_state=None if s is None else LinearStatePayload(
            conv_kernel=s.conv_kernel, conv_channels=s.conv_channels, num_state_heads=s.num_state_heads,
            state_rows=s.state_rows, state_cols=s.state_cols))


def _resolved(report: Report, engine: str) -> Settings:
    """The engine's knobs with its release's defaults filled in (what it planned with), else the user's."""
    name = get_engine(engine).name
    found = (c.settings for c in report.capacities if c.engine == name and c.settings is not None)
    return next(found, report.request.question.settings)


def _budget_defaults(report: Report) -> list[str]:
    memory, asked, out = report.request.question.memory, report.request.question.settings, []
    if memory.gpu is None and memory.gpu_memory_bytes is None:
        out.append(f"GPU: {DEFAULT_GPU} (no GPU given)")
    v = _resolved(report, DEFAULT_ENGINE)  # the profile-run tokens of the default engine's release
    if memory.overhead_bytes is None:
        out.append("overhead per GPU: kvplan's budget terms (section 3: CUDA context, NCCL, profile-run activations "
                   f"of {v.max_num_batched_tokens or 0:,} tokens, CUDA graphs; estimates are marked)")
    notes = (get_engine(name).default_note(asked, _resolved(report, name)) for name in report.engines)
    return out + [n for n in notes if n]


def assumed(report: Report) -> list[str]:
    """Every default the answer rests on that the user did not set."""
    q, m = report.request.question, report.model
    out = []
    if q.cache.max_model_len is None:
        out.append(f"max_model_len {report.max_model_len:,}: the config's" if m.max_model_len else
                   f"max_model_len {report.max_model_len:,}: the config names none (vLLM's default)")
    if q.memory.kv_budget_bytes is None:
        out += _budget_defaults(report)
    if q.memory.weights_dtype is None and q.memory.quantization is None:
        out.append(f"weights: the checkpoint's dtype and quantization_config ({m.dtype})")
    if q.cache.block_size is None:
        out.append("block size: each engine's own (section 4); the size section pages in blocks of 16")
    out += _state_defaults(report)
    v = _resolved(report, DEFAULT_ENGINE)  # the default engine's scheduler (vLLM's)
    out.append(f"one sequence of max_model_len tokens in the size section; vLLM max_num_seqs {v.max_num_seqs or '-'}, "
               f"async scheduling {'on' if v.vllm.async_scheduling else 'off'}, hybrid KV cache manager "
               f"{'on' if v.vllm.hybrid_kv_cache_manager else 'off'}")
    return out


def _state_defaults(report: Report) -> list[str]:
    """The state dtypes the sizes rest on, where the model has states and the user left them to it."""
    m, cache = report.model, report.request.question.cache
    if m.linear is None:
        return []
    out = [f"linear/Mamba conv state dtype: the model's ({m.dtype})"] if cache.state_dtype == "auto" else []
    if cache.ssm_state_dtype == "auto":
        out.append("recurrent state dtype: the config's (mamba_ssm_dtype and its aliases), else the conv state's")
    return out


def inputs_payload(report: Report) -> InputsPayload:
    q, m = report.request.question, report.model
    memory = q.memory
    return InputsPayload(
        model=m.model_id, config=report.config_origin, config_path=m.source, fields=_model_fields(report),
        max_model_len=report.max_model_len, kv_dtypes=tuple(s.layout.kv_dtype.name for s in report.sizes),
        parallel=Parallel(q.cache.tp, q.cache.pp, q.cache.dcp), gpu=memory.gpu,
        gpu_memory_bytes=memory.gpu_memory_bytes, kv_budget_bytes=memory.kv_budget_bytes,
        overhead_bytes=memory.overhead_bytes, weights_dtype=memory.weights_for(m), block_size=q.cache.block_size,
        engines=tuple(EngineRef(c.engine, c.plan.version) for c in report.capacities[:len(report.engines)]),
        assumed=tuple(assumed(report)), model_notes=m.notes)
