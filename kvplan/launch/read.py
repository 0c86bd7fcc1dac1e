"""A launch command -> the parts of kvplan's capacity question (CacheRequest, Settings, Memory fields), merged
with the options given beside it (``question_of``: a conflict is exit 2, naming both values).

Each engine's spelling (``Engine.spelling.reads``, ``kvplan.engines.spelling``) maps a parser dest to (part, field,
conversion); a row is data, one per knob kvplan models. A flag of the release with no row is either "no effect on
memory" (its category is none or placement: ``memory_flags.json`` of the research, each dest classified from the
engine's own code) or "changes memory; kvplan does not model it" (any other category): both are named once in a
note, never silently dropped.

Layout knobs kvplan's request objects do not hold (TRT-LLM's --ep_size, SGLang's --dp-size without DP attention,
--nnodes) are carried in ``Launch.layout`` and written back out. SGLang's --dp-size is DP attention
(``CacheRequest.dp``) only with --enable-dp-attention; without it the router runs dp_size replicas (0.5.23
``srt/server_args.py``: dp_size × tp_size GPUs).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from kvplan.config.model import ModelConfig
from kvplan.dtypes import KvDtypeName, canonical_dtype
from kvplan.engines import get_engine
from kvplan.engines.spelling import Spelling
from kvplan.errors import InputError
from kvplan.launch.argv import label
from kvplan.launch.command import Command
from kvplan.planning.request import CapacityRequest
from kvplan.units import GIB

NO_EFFECT = ("none", "placement")


def _length(value: Any) -> int:
    if value is None or value < 1:
        raise InputError(f"max model length {value}: kvplan plans a given length ('auto' fits it to the GPU on "
                         "the GPU); give a number of tokens")
    return int(value)


def _dtype(value: Any) -> str:
    """A torch dtype name as kvplan's (float16 -> fp16); anything else (auto, fp8_e4m3) as it is."""
    return canonical_dtype(str(value)) or str(value)


def _gib(value: Any) -> int | None:
    return None if value is None else int(float(value) * GIB)


def _gb(value: Any) -> int | None:
    """SGLang --hicache-size: whole GB (10**9; 0.5.8 srt/mem_cache/memory_pool_host.py:152); 0 is none."""
    return int(float(value) * 10**9) if value else None


KV_ROLES = {"kv_producer": "prefill", "kv_consumer": "decode"}  # vLLM 0.25.0 config/kv_transfer.py:11-13


def _kv_role(value: Any) -> str | None:
    """vLLM --kv-transfer-config (JSON) -> the instance's role (kv_both: none)."""
    import json

    found = json.loads(value) if isinstance(value, str) else value
    kv_role = found.get("kv_role") if isinstance(found, dict) else getattr(found, "kv_role", None)
    return KV_ROLES.get(str(kv_role))


def _mode(value: Any) -> str | None:
    """SGLang --disaggregation-mode (null: none)."""
    return None if value in (None, "null") else str(value)


def _budget(value: Any) -> tuple[int, ...]:
    return (int(value),)


def _modules(value: Any) -> tuple[str, ...] | None:
    return None if value is None else tuple(value) if isinstance(value, list) else (str(value),)


def _not(value: Any) -> bool:
    return not value


def _same(value: Any) -> Any:
    return value


# The conversions an engine's spelling names for a flag's value (Spelling.reads: dest -> part, field, conversion):
# part = cache, settings, memory, model, layout (kept beside the question), lora, speculative, mm (combined below).
CONVERSIONS: dict[str, Callable[[Any], Any]] = {"same": _same, "length": _length, "dtype": _dtype, "gib": _gib,
                                                "gb": _gb, "kv_role": _kv_role, "mode": _mode, "budget": _budget, "modules": _modules, "not": _not, "bool": bool}
SKIP = ("model", "model_path", "model_tag")  # the model itself: Command.model


@dataclass(frozen=True, kw_only=True)
class Launch:
    """A launch command as kvplan's question: each part's fields, the layout beyond them, and the notes."""

    command: Command
    parts: dict[str, dict[str, Any]] = field(default_factory=dict)  # cache, settings, memory, model, layout
    typed: dict[str, str] = field(default_factory=dict)  # a field -> the flag that set it, as typed
    no_effect: tuple[str, ...] = ()  # flags as typed
    not_modelled: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def part(self, name: str) -> dict[str, Any]:
        return dict(self.parts.get(name, {}))


def read_launch(command: Command) -> Launch:
    """Every flag of the command either sets a field of the question or is named in a note."""
    spelling = get_engine(command.engine).spelling
    assert spelling is not None  # the command was read with its engine's spelling
    parts: dict[str, dict[str, Any]] = {}
    typed: dict[str, str] = {}
    no_effect: list[str] = []
    unmodelled: list[str] = []
    for given in command.given:
        row = spelling.reads.get(given.dest)
        if row is not None:
            part, name, convert = row
            parts.setdefault(part, {})[name] = CONVERSIONS[convert](given.value)
            typed[name] = given.typed
        elif given.dest not in SKIP:
            kind = command.table.category(given.dest)
            (no_effect if kind in NO_EFFECT else unmodelled).append(given.typed)
    _data_parallel(spelling, parts)
    _lora(parts)
    _speculative(parts)
    _multimodal(parts)
    return Launch(command=command, parts=parts, typed=typed, no_effect=tuple(dict.fromkeys(no_effect)),
                  not_modelled=tuple(dict.fromkeys(unmodelled)), notes=_notes(command, no_effect, unmodelled))


def _data_parallel(spelling: Spelling, parts: dict[str, dict[str, Any]]) -> None:
    """Data and expert parallelism the engine plans (CacheRequest.dp, .ep), as its spelling says them: vLLM's
    --data-parallel-size (dp engines of tp × pp GPUs) and --enable-expert-parallel (experts over EP = DP × TP);
    SGLang's --dp-size with --enable-dp-attention (attention split inside the TP group) and --ep-size."""
    layout, cache = parts.get("layout", {}), parts.setdefault("cache", {})
    if spelling.data_parallel == "engines":
        dp = int(layout.get("dp", 1) or 1)
        cache["dp"] = dp
        if spelling.expert_parallel == "switch" and layout.get("ep"):
            cache["ep"] = dp * int(cache.get("tp", 1) or 1)
    if spelling.data_parallel == "attention" and layout.pop("dp_attention", False):
        cache["dp"] = layout.get("dp", 1)
        layout["dp_attention"] = True
    if spelling.expert_parallel == "size" and int(layout.get("ep", 1) or 1) > 1:
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


# The flags a field combined from others is read from (the field's own flag is Launch.typed's)
DERIVED_FROM = {"max_lora_rank": ("enabled",), "speculative_model": ("config", "model"), "speculative_method": ("config",),
                "num_speculative_tokens": ("config", "num_speculative_tokens"), "limit_mm_per_prompt": ("limits", "text_only")}


def question_of(launch: Launch, question: CapacityRequest,
                explicit: Mapping[str, tuple[str, Any]] | None = None) -> CapacityRequest:
    """The question with the command's values merged in, each part built once. `explicit`: the question's values
    given as options (field -> (option, value)); one the command gives otherwise is a conflict (exit 2, naming
    both); the same value on both sides is one value. The command's values fill every other field."""
    from kvplan.engines.settings import settings_from

    explicit = explicit or {}
    parts = {name: launch.part(name) for name in ("cache", "settings", "memory")}
    for part in parts.values():
        for name, value in list(part.items()):
            if name in explicit:
                _agree(launch, name, value, explicit[name])
                del part[name]  # the same value: the question's
    cache, settings, memory = parts["cache"], parts["settings"], parts["memory"]
    return replace(question, cache=replace(question.cache, **cache) if cache else question.cache,
                   settings=settings_from(settings, base=question.settings) if settings else question.settings,
                   memory=replace(question.memory, **memory) if memory else question.memory)


def _agree(launch: Launch, name: str, command: Any, given: tuple[str, Any]) -> None:
    """An option and the command's flag for one field: the same value, or exit 2 naming both."""
    option, value = given
    same = KvDtypeName(command) == KvDtypeName(value) if name == "kv_dtype" else command == value
    if not same:
        flag = launch.typed.get(name) or next((launch.typed[k] for k in DERIVED_FROM.get(name, ()) if k in launch.typed),
                                              name)
        raise InputError(f"{option} {_shown(value)} (before --) and the command's {flag} {_shown(command)} disagree: "
                         "give one value, or the same on both sides", arg=option)


def _shown(value: Any) -> str:
    if isinstance(value, tuple):
        return ",".join(map(str, value))
    return str(value)


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
