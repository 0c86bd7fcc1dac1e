"""What a log is recomputed from: the model, parallelism, dtypes and engine settings it states,
filled in from the user's flags, and kvplan's plan for a given KV budget.

The model a log names (a path, a hub id, an HF-cache snapshot, a fine-tune) resolves through kvplan's loader,
then without its checkpoint suffix (``-FP8``, ``-2507``). ``--model`` wins; when it names another model than
the log, it stands in for the KV geometry only and the weights are not compared. Every other flag fills in what
the log does not print, and is refused where it says otherwise (``given.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from kvplan.config.model import SERVED_DTYPES, ModelConfig, with_dtype
from kvplan.dtypes import canonical_dtype, check_dtype_name
from kvplan.engines import EnginePlan, Settings, get_engine, settings_from
from kvplan.engines.base import BudgetTerm, Device, Request
from kvplan.engines.vllm.rows import v0_rows
from kvplan.errors import CapacityError, InputError, KvplanError
from kvplan.formulas.request import CacheRequest
from kvplan.planning.capacity import CapacityResult, plan_capacity
from kvplan.planning.gpus import lookup_gpu
from kvplan.planning.request import CapacityRequest, Memory
from kvplan.planning.weights import WEIGHT_DTYPE_NAMES
from kvplan.reconcile.formats import FORMATS
from kvplan.reconcile.given import agreed, asked_knobs, merged_settings, with_release
from kvplan.reconcile.models import resolve_model, uncounted_of, weights_dtype_of
from kvplan.reconcile.parse import StartupLog
from kvplan.reconcile.rules import assumed, is_v0, placed, release
from kvplan.reconcile.stated import (
    attention_dp,
    int_of,
    kv_dtype_of,
    logged_gpu,
    logged_max_model_len,
    stated_settings,
)

UNLIMITED_BYTES = 1 << 50  # a budget no request exceeds: for page sizes and reservations
SPECULATIVE = ("speculative_method", "num_speculative_tokens", "speculative_model")


@dataclass(frozen=True, kw_only=True)
class Options:
    """The user's flags, as `kvplan capacity` takes them; None: take it from the log. A flag fills in what the
    log does not print; one that disagrees with the log is refused (``given.py``)."""

    model: str | None = None
    engine: str | None = None  # vllm, or a release (vllm@0.25): its rules where the log prints no version
    tp: int | None = None
    pp: int | None = None
    dcp: int | None = None
    dp: int | None = None
    ep: int | None = None
    max_model_len: int | None = None
    kv_dtype: str | None = None
    block_size: int | None = None
    cache: CacheRequest | None = None  # the knobs no log prints: quant group, state dtypes, overrides (its other
    # fields are the ones above, which a log may state)
    gpu: str | None = None
    settings: Settings | None = None  # engine knobs: those away from Settings()'s defaults are the ones given
    memory: Memory | None = None  # the GPU, its memory, the weights' format, a KV budget (vLLM logs printing none)

    def __post_init__(self) -> None:
        for name in ("tp", "pp", "dcp", "dp", "ep", "max_model_len"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise InputError(f"{name} must be positive, got {value}", arg=name)
        if self.kv_dtype is not None:
            check_dtype_name(self.kv_dtype, "kv_dtype")
        if self.gpu is not None and self.memory is not None and self.memory.gpu not in (None, self.gpu):
            raise InputError(f"gpu {self.gpu!r} and memory.gpu {self.memory.gpu!r}: give the GPU once", arg="gpu")

    def flags_memory(self) -> Memory:
        return replace(self.memory or Memory(), gpu=self.gpu or (self.memory.gpu if self.memory else None))


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
    keys, v0 = v0_rows(at, log.version)
    return first_known("vllm", [f"vllm@{key}" for key in keys], f"{said} (V0)" if v0 else said)


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


def _served_dtype(log: StartupLog, model: ModelConfig) -> ModelConfig:
    """The dtype the engine served the model in, where the log states one the config does not give (a bf16 config on
    a T4 runs as float16: vLLM casts it, and its KV dtype auto follows): what the release's checks see."""
    served = canonical_dtype(log.setting("dtype") or "")
    return with_dtype(model, served) if served in SERVED_DTYPES and served != model.dtype else model


def _cache(log: StartupLog, options: Options, model: ModelConfig) -> CacheRequest:
    """The cache the log states (block size: vLLM's; page size: SGLang's; tokens per block: TRT-LLM's; DP attention),
    the flags filling in the rest; the length resolved."""
    o = options
    kv = agreed("kv_dtype", o.kv_dtype, kv_dtype_of(log), same=lambda given, stated: stated == "auto" or stated == (
        canonical_dtype(model.dtype if given == "auto" else given) or given))
    cache = replace(
        o.cache or CacheRequest(), tp=agreed("tp", o.tp, int_of(log, "tp")) or 1,
        pp=agreed("pp", o.pp, int_of(log, "pp")) or 1, dcp=agreed("dcp", o.dcp, int_of(log, "dcp")) or 1,
        dp=agreed("dp", o.dp, attention_dp(log)) or 1, ep=o.ep or 1, kv_dtype=kv or "auto",
        block_size=agreed("block_size", o.block_size, int_of(log, "block_size") or int_of(log, "page_size")),
        max_model_len=agreed("max_model_len", o.max_model_len, logged_max_model_len(log)))
    return replace(cache, max_model_len=cache.length(model))


def _memory(log: StartupLog, options: Options, implied: str | None) -> Memory:
    """The GPU the log names (else the flag's), the weights' format it states (else the flag's, else the one the
    checkpoint's name implies), the flags' memory figures."""
    flags = options.flags_memory()
    if flags.kv_budget_bytes is not None and not get_engine(log.engine).takes_kv_budget:
        raise InputError(f"kv_budget_bytes: reconcile takes a KV budget for vLLM logs that print none; a {log.label} "
                         "log prints the memory its pool is sized from", arg="kv_budget_bytes")
    gpu = agreed("gpu", flags.gpu, logged_gpu(log), same=lambda a, b: lookup_gpu(a).name == b)
    said = (log.setting("quantization") or "").lower()
    if flags.quantization is not None:
        agreed("quantization", flags.quantization, said or None, same=lambda a, b: a.lower().replace("-", "_") ==
               b.replace("-", "_"))
        if said:  # the log's own, read as before
            return replace(flags, gpu=gpu, quantization=None, weights_dtype=weights_dtype_of(log, implied))
        return replace(flags, gpu=gpu)
    stated = said if said in WEIGHT_DTYPE_NAMES else None
    return replace(flags, gpu=gpu, weights_dtype=agreed("weights_dtype", flags.weights_dtype, stated) or implied)


def build_inputs(log: StartupLog, options: Options) -> Inputs:
    log = with_release(log, options.engine)[0]  # its rows where the log prints no version (reconcile notes it)
    model, stand_in, implied = resolve_model(log, options.model)
    model = _served_dtype(log, model)
    profile, note = vllm_profile(log) if FORMATS[log.engine].dated_by_sites else profile_name(log.engine, log.version)
    notes = [f"{model.model_id} stands in for {log.setting('model')}: KV geometry only, weights not compared"] \
        if stand_in else []
    inputs = Inputs(model=model, named=log.setting("model"), stand_in=stand_in, cache=_cache(log, options, model),
                    profile=profile, settings=merged_settings(stated_settings(log), options.settings),
                    memory=_memory(log, options, implied), notes=tuple([*notes, *([note] if note else [])]),
                    uncounted=uncounted_of(log, implied))
    return _planned(inputs, options)


def _planned(inputs: Inputs, options: Options) -> Inputs:
    """The inputs, without the log's speculative decoding where kvplan cannot plan it and can plan the rest (said
    in a note); one the flags ask for is planned or refused."""
    if inputs.settings.speculative_method is None or "speculative_method" in asked_knobs(options.settings):
        return inputs
    try:
        reference(inputs)
        return inputs
    except KvplanError as exc:
        why = str(exc)
    bare = replace(inputs, settings=settings_from(dict.fromkeys(SPECULATIVE), inputs.settings), notes=(
        *inputs.notes, f"kvplan cannot plan the log's {inputs.settings.speculative_method} speculative decoding "
        f"({why}): planned without it; its drafter's weights and KV layers are not counted"))
    reference(bare)  # the rest plans, else its own error
    return bare


def logged_budget(inputs: Inputs, memory_bytes: int, weights_bytes: int, other_bytes: int = 0) -> int:
    """The engine release's own budget rule applied to logged numbers: the GPU memory it measured, the
    weights and everything else it subtracted, given as two terms (kvplan's estimates are not used)."""
    profile = get_engine(inputs.profile)
    request = profile.resolve(Request(model=inputs.model, cache=inputs.cache, settings=inputs.settings,
                                      device=Device(name=None, memory_bytes=memory_bytes)))
    terms = (BudgetTerm(name="weights (logged)", bytes=weights_bytes, exact=False, source="the log", kind="weights"),
             BudgetTerm(name="the rest (logged)", bytes=other_bytes, exact=False, source="the log", kind="given"))
    return profile.kv_budget(request, terms).kv_budget_bytes
