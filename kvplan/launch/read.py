"""A launch command -> the parts of kvplan's capacity question (CacheRequest, Settings, Memory fields).

Each engine's rows map a parser dest to (part, field, conversion); a row is data, one per knob kvplan models.
A flag of the release with no row is either "no effect on memory" (its category is none or placement:
``memory_flags.json`` of the research, each dest classified from the engine's own code) or "changes memory;
kvplan does not model it" (any other category): both are named once in a note, never silently dropped.

Layout knobs kvplan's request objects do not hold yet (vLLM's --data-parallel-size and expert parallelism,
SGLang's --ep-size, TRT-LLM's --ep_size, --nnodes) are carried in ``Launch.layout`` and written back out.
SGLang's --dp-size is DP attention (``CacheRequest.dp``) only with --enable-dp-attention; without it the
router runs dp_size replicas (0.5.23 ``srt/server_args.py``: dp_size × tp_size GPUs).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from kvplan.config.model import ModelConfig
from kvplan.errors import InputError
from kvplan.launch.argv import label
from kvplan.launch.command import Command
from kvplan.planning.request import CapacityRequest
from kvplan.units import GIB

NO_EFFECT = ("none", "placement")
_TORCH_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "half": "fp16", "float": "fp32"}


def _length(value: Any) -> int:
    if value is None or value < 1:
        raise InputError(f"max model length {value}: kvplan plans a given length ('auto' fits it to the GPU on "
                         "the GPU); give a number of tokens")
    return int(value)


def _dtype(value: Any) -> str:
    return _TORCH_DTYPES.get(str(value), str(value))


def _gib(value: Any) -> int | None:
    return None if value is None else int(float(value) * GIB)


def _budget(value: Any) -> tuple[int, ...]:
    return (int(value),)


def _modules(value: Any) -> tuple[str, ...] | None:
    return None if value is None else tuple(value) if isinstance(value, list) else (str(value),)


def _not(value: Any) -> bool:
    return not value


def _same(value: Any) -> Any:
    return value


Row = tuple[str, str, Callable[[Any], Any]]  # (part, field, conversion): part = cache, settings, memory, model, layout
TP, PP = ("cache", "tp", _same), ("cache", "pp", _same)
ROWS: dict[str, dict[str, Row]] = {
    "vllm": {
        "tensor_parallel_size": TP, "pipeline_parallel_size": PP, "decode_context_parallel_size": ("cache", "dcp", _same),
        "max_model_len": ("cache", "max_model_len", _length), "kv_cache_dtype": ("cache", "kv_dtype", _same),
        "block_size": ("cache", "block_size", _same), "mamba_cache_dtype": ("cache", "state_dtype", _dtype),
        "mamba_ssm_cache_dtype": ("cache", "ssm_state_dtype", _dtype),
        "gpu_memory_utilization": ("settings", "gpu_memory_utilization", _same),
        "max_num_seqs": ("settings", "max_num_seqs", _same),
        "max_num_batched_tokens": ("settings", "max_num_batched_tokens", _same),
        "enforce_eager": ("settings", "enforce_eager", bool), "enable_prefix_caching": ("settings", "prefix_caching", _same),
        "disable_hybrid_kv_cache_manager": ("settings", "hybrid_kv_cache_manager", _not),
        "async_scheduling": ("settings", "async_scheduling", _same),
        "cpu_offload_gb": ("settings", "cpu_offload_bytes", _gib), "kv_offloading_size": ("settings", "kv_offloading_bytes", _gib),
        "max_lora_rank": ("lora", "max_lora_rank", _same), "max_loras": ("lora", "max_loras", _same),
        "max_cpu_loras": ("lora", "max_cpu_loras", _same), "enable_lora": ("lora", "enabled", bool),
        "lora_target_modules": ("lora", "lora_target_modules", _modules),
        "speculative_config": ("speculative", "config", _same), "speculative_model": ("speculative", "model", _same),
        "num_speculative_tokens": ("speculative", "num_speculative_tokens", _same),
        "kv_cache_memory_bytes": ("memory", "kv_budget_bytes", _budget), "quantization": ("memory", "quantization", _same),
        "dtype": ("model", "dtype", _dtype), "revision": ("model", "revision", _same),
        "limit_mm_per_prompt": ("mm", "limits", _same), "language_model_only": ("mm", "text_only", bool),
        "data_parallel_size": ("layout", "dp", _same), "enable_expert_parallel": ("layout", "ep", bool),
        "nnodes": ("layout", "nodes", _same), "data_parallel_size_local": ("layout", "dp_local", _same),
    },
    "sglang": {
        "tp_size": TP, "tensor_parallel_size": TP, "pp_size": PP, "pipeline_parallel_size": PP,
        "dp_size": ("layout", "dp", _same), "data_parallel_size": ("layout", "dp", _same),
        "enable_dp_attention": ("layout", "dp_attention", bool), "ep_size": ("layout", "ep", _same),
        "expert_parallel_size": ("layout", "ep", _same), "nnodes": ("layout", "nodes", _same),
        "context_length": ("cache", "max_model_len", _length), "kv_cache_dtype": ("cache", "kv_dtype", _dtype),
        "page_size": ("cache", "block_size", _same), "mamba_ssm_dtype": ("cache", "ssm_state_dtype", _dtype),
        "mem_fraction_static": ("settings", "mem_fraction_static", _same),
        "max_running_requests": ("settings", "max_num_seqs", _same),
        "chunked_prefill_size": ("settings", "chunked_prefill_size", _same),
        "disable_cuda_graph": ("settings", "enforce_eager", bool),
        "swa_full_tokens_ratio": ("settings", "swa_full_tokens_ratio", _same),
        "hicache_ratio": ("settings", "hicache_ratio", _same), "quantization": ("memory", "quantization", _same),
        "dtype": ("model", "dtype", _dtype), "revision": ("model", "revision", _same),
    },
    "trtllm": {
        "tp_size": TP, "tensor_parallel_size": TP, "pp_size": PP, "pipeline_parallel_size": PP,
        "moe_expert_parallel_size": ("layout", "ep", _same), "gpus_per_node": ("layout", "gpus_per_node", _same),
        "max_seq_len": ("cache", "max_model_len", _length), "max_batch_size": ("settings", "max_num_seqs", _same),
        "max_num_tokens": ("settings", "max_num_batched_tokens", _same),
        "kv_cache_free_gpu_memory_fraction": ("settings", "free_gpu_memory_fraction", _same),
        "free_gpu_memory_fraction": ("settings", "free_gpu_memory_fraction", _same),
    },
}
SKIP = ("model", "model_path", "model_tag")  # the model itself: Command.model


@dataclass(frozen=True, kw_only=True)
class Launch:
    """A launch command as kvplan's question: each part's fields, the layout beyond them, and the notes."""

    command: Command
    parts: dict[str, dict[str, Any]] = field(default_factory=dict)  # cache, settings, memory, model, layout
    no_effect: tuple[str, ...] = ()  # flags as typed
    not_modelled: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def part(self, name: str) -> dict[str, Any]:
        return dict(self.parts.get(name, {}))


def read_launch(command: Command) -> Launch:
    """Every flag of the command either sets a field of the question or is named in a note."""
    rows = ROWS[command.engine]
    parts: dict[str, dict[str, Any]] = {}
    no_effect: list[str] = []
    unmodelled: list[str] = []
    for given in command.given:
        row = rows.get(given.dest)
        if row is not None:
            part, name, convert = row
            parts.setdefault(part, {})[name] = convert(given.value)
        elif given.dest not in SKIP:
            kind = command.table.category(given.dest)
            (no_effect if kind in NO_EFFECT else unmodelled).append(given.typed)
    _dp_attention(command, parts)
    _lora(parts)
    _speculative(parts)
    _multimodal(parts)
    return Launch(command=command, parts=parts, no_effect=tuple(dict.fromkeys(no_effect)),
                  not_modelled=tuple(dict.fromkeys(unmodelled)), notes=_notes(command, no_effect, unmodelled))


def _dp_attention(command: Command, parts: dict[str, dict[str, Any]]) -> None:
    """Data and expert parallelism the engine plans (CacheRequest.dp, .ep): vLLM's --data-parallel-size (dp
    engines of tp × pp GPUs) and --enable-expert-parallel (experts over EP = DP × TP); SGLang's --dp-size with
    --enable-dp-attention (attention split inside the TP group) and --ep-size."""
    layout, cache = parts.get("layout", {}), parts.setdefault("cache", {})
    if command.engine == "vllm":
        dp = int(layout.get("dp", 1) or 1)
        cache["dp"] = dp
        if layout.get("ep"):
            cache["ep"] = dp * int(cache.get("tp", 1) or 1)
    if command.engine == "sglang" and layout.pop("dp_attention", False):
        cache["dp"] = layout.get("dp", 1)
        layout["dp_attention"] = True
    if command.engine == "sglang" and int(layout.get("ep", 1) or 1) > 1:
        cache["ep"] = int(layout["ep"])
    if not cache:
        parts.pop("cache")


def _lora(parts: dict[str, dict[str, Any]]) -> None:
    """vLLM's LoRA knobs count only with --enable-lora (0.33 ``config/lora.py``: no LoRAConfig without it); alone
    it allocates max_loras 1 of rank 16, its parser defaults."""
    lora = parts.pop("lora", {})
    if lora.pop("enabled", False):
        lora = {"max_lora_rank": 16, **lora} if "max_loras" not in lora else lora
        parts.setdefault("settings", {}).update(lora)


def _speculative(parts: dict[str, dict[str, Any]]) -> None:
    """--speculative-config JSON (0.8.5 on; also its dotted keys) or 0.8.0's --speculative-model and
    --num-speculative-tokens -> the draft knobs."""
    spec = parts.pop("speculative", {})
    config = dict(spec.pop("config", None) or {})
    config = {"model": spec.get("model"), "num_speculative_tokens": spec.get("num_speculative_tokens"), **config}
    settings = {"speculative_model": config.get("model"), "speculative_method": config.get("method"),
                "num_speculative_tokens": config.get("num_speculative_tokens")}
    if settings["num_speculative_tokens"] is not None:
        settings["num_speculative_tokens"] = int(settings["num_speculative_tokens"])
    if any(v is not None for v in settings.values()):
        parts.setdefault("settings", {}).update({k: v for k, v in settings.items() if v is not None})


def _mm_counts(limits: Any) -> dict[str, int]:
    """--limit-mm-per-prompt as {modality: count}: JSON ({"image": 2} or {"image": {"count": 2, ...}}), or 0.8's
    "image=2,video=0"."""
    if isinstance(limits, str):
        limits = dict(kv.split("=", 1) for kv in limits.split(",") if "=" in kv)
    if not isinstance(limits, dict):
        return {}
    counts = {str(k): (v.get("count", 999) if isinstance(v, dict) else v) for k, v in limits.items()}
    return {k: int(v) for k, v in counts.items() if isinstance(v, (int, str)) and str(v).strip().isdigit()}


def _multimodal(parts: dict[str, dict[str, Any]]) -> None:
    """vLLM's images per prompt (kvplan's limit_mm_per_prompt: the image modality's, which the profile run encodes);
    every modality at 0, or --language-model-only (0.17 config/multimodal.py:304-307), is text-only mode: 0."""
    mm = parts.pop("mm", {})
    counts = _mm_counts(mm.get("limits"))
    if mm.get("text_only") or ("image" in counts and not any(counts.values())):
        parts.setdefault("settings", {})["limit_mm_per_prompt"] = 0
    elif "image" in counts:  # a modality left out keeps vLLM's 999 (kvplan profiles the image modality only)
        parts.setdefault("settings", {})["limit_mm_per_prompt"] = counts["image"]


def _notes(command: Command, no_effect: list[str], unmodelled: list[str]) -> tuple[str, ...]:
    where = label(command.table)
    notes = list(command.notes)
    if no_effect:
        notes.append(f"no effect on memory ({where}): {', '.join(dict.fromkeys(no_effect))}")
    if unmodelled:
        notes.append(f"warning: changes memory, not modelled by kvplan ({where}): {', '.join(dict.fromkeys(unmodelled))}")
    return tuple(notes)


def question_of(launch: Launch, question: CapacityRequest) -> CapacityRequest:
    """The question with the command's values in place of the options' (the command's flags win)."""
    from kvplan.engines.settings import settings_from

    cache = replace(question.cache, **launch.part("cache"))
    settings = settings_from(launch.part("settings"), base=question.settings)
    memory = replace(question.memory, **launch.part("memory"))
    return replace(question, cache=cache, settings=settings, memory=memory)


def model_notes(launch: Launch, model: ModelConfig) -> tuple[str, ...]:
    """The notes for this model: vLLM's --enable-prefix-caching has no effect where the model has no Mamba or
    linear-attention layer (its only memory effect is the align-mode state blocks of those, planning.md §3;
    attention blocks are one pool either way); a replica layout kvplan does not plan per rank yet is said."""
    prefix = [g.typed for g in launch.command.given if g.dest == "enable_prefix_caching"]
    notes = list(launch.notes)
    if prefix and "linear" not in model.layer_kinds:
        head = f"no effect on memory ({label(launch.command.table)}): "
        notes = [n for n in notes if not n.startswith(head)]
        notes.insert(0, head + ", ".join(dict.fromkeys((*launch.no_effect, *prefix))))
    return (*notes, *_layout_notes(launch, bool(model.field("num_experts"))))


def _layout_notes(launch: Launch, moe: bool) -> list[str]:
    """DP replicas and expert parallelism as read: carried into the command written, not yet planned per rank."""
    layout, cache = launch.part("layout"), launch.part("cache")
    out = []
    dp, ep = int(layout.get("dp", 1) or 1), layout.get("ep")
    if dp > 1 and "dp" not in cache:
        out.append(f"{dp} data-parallel ranks: each plans its own KV cache as this answer (per GPU)" +
                   ("; warning: their MoE layers span DP × TP ranks, kvplan splits the experts by TP only" if moe
                    else ""))
    if "ep" not in cache and (ep is True or (not isinstance(ep, bool) and isinstance(ep, int) and ep > 1)):
        out.append("warning: expert parallelism is carried into the command but not planned: the weights per GPU "
                   "are kvplan's TP split")
    return out
