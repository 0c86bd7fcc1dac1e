"""What a log is recomputed from: the model, parallelism, dtypes and engine settings it states,
filled in from the user's flags, and kvplan's plan for a given KV budget.

The model a log names (a path, a hub id, a fine-tune) resolves through kvplan's loader, then
without its checkpoint suffix (``-FP8``, ``-2507``). ``--model`` wins; when it names another
model than the log, it stands in for the KV geometry only and the weights are not compared.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from kvplan.config.model import SERVED_DTYPES, ModelConfig, with_dtype
from kvplan.dtypes import canonical_dtype, check_dtype_name
from kvplan.engines import EnginePlan, Settings, get_engine, settings_from
from kvplan.engines.base import BudgetTerm, Device, Request
from kvplan.engines.settings import MOE_BACKENDS
from kvplan.errors import CapacityError, InputError
from kvplan.formulas.request import CacheRequest
from kvplan.planning.capacity import CapacityResult, plan_capacity
from kvplan.planning.gpus import lookup_gpu
from kvplan.planning.request import CapacityRequest, Memory
from kvplan.reconcile.models import resolve_model, uncounted_of, weights_dtype_of
from kvplan.reconcile.parse import StartupLog
from kvplan.reconcile.rules import assumed, is_v0, placed, release

UNLIMITED_BYTES = 1 << 50  # a budget no request exceeds: for page sizes and reservations


@dataclass(frozen=True, kw_only=True)
class Options:
    """The user's flags; None: take it from the log."""

    model: str | None = None
    tp: int | None = None
    pp: int | None = None
    max_model_len: int | None = None
    kv_dtype: str | None = None
    gpu: str | None = None

    def __post_init__(self) -> None:
        for name in ("tp", "pp", "max_model_len"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise InputError(f"{name} must be positive, got {value}", arg=name)
        if self.kv_dtype is not None:
            check_dtype_name(self.kv_dtype, "kv_dtype")


@dataclass(frozen=True, kw_only=True)
class Inputs:
    """The question the log answers: the model and its cache (length resolved), the engine knobs it states,
    the GPU and weights format."""

    model: ModelConfig
    named: str | None  # the model the log names
    stand_in: bool  # the model is the user's stand-in for another one the log names
    cache: CacheRequest  # tp, pp, KV dtype, max_model_len (set), block size, DP attention
    memory: Memory  # the GPU (a flag) and the weights format
    profile: str  # the kvplan engine planned with: "vllm@0.11" once the registry has it, else "vllm"
    settings: Settings
    notes: tuple[str, ...] = ()
    uncounted: str | None = None  # the log's weights are in a format kvplan does not count (bitsandbytes, gguf)

    @property
    def tp(self) -> int:
        return self.cache.tp

    @property
    def pp(self) -> int:
        return self.cache.pp

    @property
    def kv_dtype(self) -> str:
        return self.cache.kv_dtype

    @property
    def max_model_len(self) -> int:
        return self.cache.length(self.model)

    @property
    def weights_dtype(self) -> str | None:
        return self.memory.weights_dtype

    def question(self, budgets: tuple[int, ...], max_model_len: int | None = None) -> CapacityRequest:
        """The log's question with given KV budgets per GPU (one, or one per PP stage; and another length)."""
        cache = replace(self.cache, max_model_len=max_model_len) if max_model_len else self.cache
        return CapacityRequest(model=self.model, cache=cache, settings=self.settings,
                               memory=replace(self.memory, kv_budget_bytes=tuple(max(b, 0) for b in budgets)))


def profile_name(engine: str, version: str | None) -> tuple[str, str | None]:
    """The engine name to plan with: the registry's release for the logged version (its longest
    known prefix: 0.6.4.dev -> vllm@0.6.4, 0.10.2 -> vllm@0.10), else the engine's newest profile,
    with a note saying so."""
    if release(version) is None or version is None:
        return engine, None
    return first_known(engine, [f"{engine}@{version.strip().removeprefix('v')}"], version)


def first_known(engine: str, names: list[str], said: str) -> tuple[str, str | None]:
    """The first of `names` the registry has (no note for the first), else the engine's newest profile; a note
    names the row used where it is not the log's own."""
    for i, name in enumerate(names):
        try:
            used = get_engine(name)
        except InputError:
            continue
        return name, None if i == 0 else f"kvplan has no {engine} {said} profile; planned with {used.version}'s rules"
    return engine, f"kvplan has no {engine} {said} profile; blocks planned with {get_engine(engine).version}'s rules"


def vllm_profile(log: StartupLog) -> tuple[str, str | None]:
    """vLLM's release row for a log: its own release (vllm@0.19 for 0.19.1, placed by the print sites where no
    version is printed); V0 logs: vllm@0.6.x, vllm@0.7, vllm@0.8-v0 (the V0 engine of 0.8 and later)."""
    at, _ = placed(log) if is_v0(log) else assumed(log)
    said = log.version or (".".join(map(str, at)) if at else "unknown")
    if not is_v0(log):
        return first_known("vllm", [f"vllm@{log.version or said}"], said)
    if at is not None and at >= (0, 8):
        return first_known("vllm", [f"vllm@{at[0]}.{at[1]}-v0", "vllm@0.8-v0"], f"{said} (V0)")
    if at is not None and at[:2] == (0, 6):
        return first_known("vllm", [f"vllm@{log.version or said}", "vllm@0.6.5"], said)
    return first_known("vllm", [f"vllm@{log.version or '0.7'}", "vllm@0.7"], f"{said} (V0)")


@lru_cache(maxsize=4096)
def _capacity(inputs: Inputs, budgets: tuple[int, ...], max_model_len: int | None) -> CapacityResult | str:
    """kvplan's answer for KV budgets per GPU (one, or one per PP stage), or the text of its refusal (the plan's
    `refusal`, or a CapacityError where an engine still raises one)."""
    try:
        result = plan_capacity(inputs.question(budgets, max_model_len), get_engine(inputs.profile), hold_budget=False)
    except CapacityError as exc:
        return str(exc)
    refusal = getattr(result.plan, "refusal", None)
    return getattr(refusal, "message", str(refusal)) if refusal else result


def plan(inputs: Inputs, budget_bytes: int, max_model_len: int | None = None, stage: int | None = None) -> EnginePlan | str:
    """kvplan's plan for one KV budget per GPU, or the text of its refusal. With a `stage`, the budget is that
    PP stage's and every other stage is unlimited: the blocks of that stage's layers."""
    budgets = (budget_bytes,) if stage is None else tuple(
        budget_bytes if k == stage else UNLIMITED_BYTES for k in range(inputs.pp))
    found = _capacity(inputs, budgets, max_model_len)
    return found if isinstance(found, str) else found.plan


def reference(inputs: Inputs, max_model_len: int | None = None) -> CapacityResult:
    """kvplan's answer under an unlimited budget: the layout, page sizes, one request's reservation."""
    found = _capacity(inputs, (UNLIMITED_BYTES,), max_model_len)
    if isinstance(found, str):
        raise InputError(f"kvplan cannot plan this log's setup: {found}")
    return found


def reference_plan(inputs: Inputs, max_model_len: int | None = None) -> EnginePlan:
    return reference(inputs, max_model_len).plan


def _int(log: StartupLog, name: str) -> int | None:
    value = log.setting(name)
    return int(value) if value is not None else None


def _attention_dp(log: StartupLog) -> int:
    """SGLang's dp_size splits attention only with enable_dp_attention=True; without it the DP ranks are whole
    engines side by side, each planned as this log's (0.4-0.5 server_args: dp attention is the switch). A log
    that does not print the switch keeps dp_size."""
    dp = _int(log, "dp") or 1
    return 1 if log.engine == "sglang" and log.setting("dp_attention") == "False" else dp


def _float(log: StartupLog, name: str) -> float | None:
    value = log.setting(name)
    return float(value) if value is not None else None


def _bool(log: StartupLog, name: str) -> bool | None:
    value = log.setting(name)
    return value == "True" if value is not None else None


def kv_dtype_of(log: StartupLog, flag: str | None) -> str:
    """--kv-dtype, else the log's KV dtype ("auto" is the model dtype the log states), else auto."""
    if flag is not None:
        return flag
    kv, model = log.setting("kv_dtype"), log.setting("dtype")
    if kv is None or kv == "auto":
        kv = model
    return (canonical_dtype(kv) or "auto") if kv else "auto"


def settings_of(log: StartupLog) -> Settings:
    """The engine knobs the log states, and those its warnings imply: "Hybrid KV cache manager is disabled"
    (every layer counted as full), the Marlin FP4 MoE path (padded MXFP4 experts), prefix caching (which decides
    how a hybrid's Mamba states are paged)."""
    backend = (log.setting("moe_backend") or "").lower() or None
    lora = log.setting("enable_lora") == "True"
    return settings_from({"max_lora_rank": _int(log, "max_lora_rank") if lora else None,
                          "max_loras": (_int(log, "max_loras") or 1) if lora else None,"gpu_memory_utilization": _float(log, "gpu_memory_utilization"),
                          "mem_fraction_static": _float(log, "mem_fraction_static"),
                          "free_gpu_memory_fraction": _float(log, "free_gpu_memory_fraction"),
                          "max_num_batched_tokens": _int(log, "max_num_batched_tokens"),
                          "max_num_seqs": _int(log, "max_num_seqs"),
                          "chunked_prefill_size": _int(log, "chunked_prefill_size"),
                          "enforce_eager": log.setting("enforce_eager") == "True",
                          "prefix_caching": _bool(log, "prefix_caching"),
                          "hybrid_kv_cache_manager": log.setting("hybrid_kv_cache_manager") != "off",
                          "moe_backend": backend if backend in MOE_BACKENDS else None})


def logged_max_model_len(log: StartupLog) -> int | None:
    """max_model_len from the settings, else from a line that prints it (concurrency, refusal)."""
    stated = _int(log, "max_model_len")
    if stated is not None:
        return stated
    printed = log.numbers("max_model_len")
    return int(printed[0][1].value) if printed else None


def parallel(log: StartupLog, options: Options) -> tuple[int, int, list[str]]:
    """tp and pp: a flag wins, with a note where the log says otherwise."""
    notes, out = [], []
    for name, flag in (("tp", options.tp), ("pp", options.pp)):
        stated = _int(log, name)
        if flag is not None and stated is not None and flag != stated:
            notes.append(f"{name} {flag} (flag) replaces the log's {stated}")
        out.append(flag or stated or 1)
    return out[0], out[1], notes


def logged_gpu(log: StartupLog) -> str | None:
    """The GPU the log names (a MoE kernel's config lookup, a collect-env line), when the catalog knows it by
    that name alone: it picks the attention backends (FlashMLA's 64-token blocks are Hopper's)."""
    name = log.setting("gpu_name")
    if name is None:
        return None
    try:
        return lookup_gpu(name.replace("_", " ")).name
    except InputError:  # not in the catalog, or in several memory sizes (A100): the memory is not guessed
        return None


def _served_dtype(log: StartupLog, model: ModelConfig) -> ModelConfig:
    """The dtype the engine served the model in, where the log states one the config does not give (a bf16 config on
    a T4 runs as float16: vLLM casts it, and its KV dtype auto follows): what the release's checks see."""
    served = canonical_dtype(log.setting("dtype") or "")
    return with_dtype(model, served) if served in SERVED_DTYPES and served != model.dtype else model


def build_inputs(log: StartupLog, options: Options) -> Inputs:
    model, stand_in, implied = resolve_model(log, options.model)
    model = _served_dtype(log, model)
    tp, pp, notes = parallel(log, options)
    profile, note = vllm_profile(log) if log.engine == "vllm" else profile_name(log.engine, log.version)
    if stand_in:
        notes.append(f"{model.model_id} stands in for {log.setting('model')}: KV geometry only, weights not compared")
    # the block size (vLLM) / page size (SGLang) / tokens per block (TRT-LLM) and DP attention the log states
    cache = CacheRequest(tp=tp, pp=pp, kv_dtype=kv_dtype_of(log, options.kv_dtype), dp=_attention_dp(log),
                         block_size=_int(log, "block_size") or _int(log, "page_size"),
                         max_model_len=options.max_model_len or logged_max_model_len(log))
    return Inputs(model=model, named=log.setting("model"), stand_in=stand_in, cache=replace(
                  cache, max_model_len=cache.length(model)), profile=profile, settings=settings_of(log),
                  memory=Memory(gpu=options.gpu or logged_gpu(log), weights_dtype=weights_dtype_of(log, implied)),
                  notes=tuple([*notes, *([note] if note else [])]), uncounted=uncounted_of(log, implied))


def logged_budget(inputs: Inputs, memory_bytes: int, weights_bytes: int, other_bytes: int = 0) -> int:
    """The engine release's own budget rule applied to logged numbers: the GPU memory it measured, the
    weights and everything else it subtracted, given as two terms (kvplan's estimates are not used)."""
    request = Request(model=inputs.model, cache=inputs.cache, settings=inputs.settings,
                      device=Device(name=None, memory_bytes=memory_bytes))
    terms = (BudgetTerm(name="weights (logged)", bytes=weights_bytes, exact=False, source="the log", kind="weights"),
             BudgetTerm(name="the rest (logged)", bytes=other_bytes, exact=False, source="the log", kind="given"))
    return get_engine(inputs.profile).kv_budget(request, terms).kv_budget_bytes
