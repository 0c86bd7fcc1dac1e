"""What every engine profile shares: the question asked, the knobs, and the answer's shape.

An engine profile follows one release of its engine (``version``) and declares only how it differs:
- ``resolve(request)``: the release's defaults filled into the request's ``Settings`` (scheduler
  sizes by GPU memory class and entry point, sampler path, in-flight batches, token-log style);
- ``policy(request)``: how it lays the cache out (``LayoutPolicy``: head split, attention TP,
  MLA latent or decompressed, tokens a window layer keeps), and ``supports_dcp``;
- ``budget_rules(request)``: what its start-up profiling subtracts, as data (``BudgetRules``);
  ``kvplan.planning.budget`` turns that into named ``BudgetTerm``s from the model's dimensions;
- ``kv_budget(request, terms)``: how it turns GPU memory and those terms into KV memory per GPU;
- ``plan``: how it cuts that memory into blocks and tokens, on the layout it is handed, and whether
  it refuses (a ``Refusal`` is an answer: the plan is still returned with its numbers).
``kvplan.planning.capacity`` builds the layout once (``build_layout`` with the engine's policy)
and chains them; the CLI only renders the frozen ``EnginePlan``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal, Protocol

from kvplan.config.model import ModelConfig
from kvplan.config.mtp import MtpModules
from kvplan.engines.settings import Settings
from kvplan.errors import InputError
from kvplan.formulas.layout import Layout, LayoutPolicy
from kvplan.formulas.request import CacheRequest
from kvplan.specs import LayerSpec


@dataclass(frozen=True, kw_only=True)
class Device:
    """The GPU a capacity question is asked for, as the engines read it."""

    name: str | None  # catalog name (H100-SXM); None: only the memory is known
    memory_bytes: int  # torch total_memory (vLLM total_gpu_memory)
    smi_memory_mib: int | None = None  # nvidia-smi memory.total (SGLang sizes its reserve from it)
    compute_capability: tuple[int, int] | None = None  # as the engine reads it (vLLM: CUDA's, gfx950 as (9, 5))
    assumed: bool = False  # kvplan's default GPU (no GPU named): what depends on its type is an assumption


@dataclass(frozen=True, kw_only=True)
class Draft:
    """What speculative decoding adds to the KV cache, as every engine sees it (built by
    ``kvplan.planning.extras.speculative``; engines never build layouts)."""

    method: str  # one of SPEC_METHODS
    num_speculative_tokens: int  # K
    model: ModelConfig | None  # the draft checkpoint; None: layers of the target's checkpoint (mtp), or none (ngram)
    tp: int  # the draft's TP size (the engines run it at the target's)
    specs: tuple[LayerSpec, ...] = ()  # the draft's KV layers, whole model
    specs_per_gpu: tuple[LayerSpec, ...] = ()  # the same layers on one GPU (they sit on the last PP stage)
    mtp: MtpModules | None = None  # method mtp: the target's modules the drafter builds (kvplan.config.mtp)

    @property
    def num_layers(self) -> int:
        return len(self.specs)

    @property
    def model_id(self) -> str | None:
        return self.model.model_id if self.model else None


@dataclass(frozen=True, kw_only=True)
class Request:
    """One capacity question as an engine sees it: the model, the cache asked (its length resolved), the
    knobs, the GPU and what speculative decoding adds. Engines read the cache's fields they need
    (``request.cache.kv_dtype``); the layout knobs reach ``build_layout`` whole."""

    model: ModelConfig
    cache: CacheRequest  # max_model_len is set (the model's, else vLLM's fallback)
    settings: Settings = field(default_factory=Settings)
    device: Device | None = None  # the GPU's memory (scheduler defaults, budgets); None: an H100's defaults
    draft: Draft | None = None  # speculative decoding (None: off)
    asked: Settings | None = None  # the knobs as asked, before the release's defaults (None: not known)

    @classmethod
    def of(cls, model: ModelConfig, *, settings: Settings | None = None, device: Device | None = None,
           draft: Draft | None = None, **cache: Any) -> Request:
        """A request from the cache's fields as keywords (`tp=`, `max_model_len=`, ...; the length defaults to
        the model's)."""
        asked = CacheRequest(**cache)
        return cls(model=model, cache=replace(asked, max_model_len=asked.length(model)),
                   settings=settings or Settings(), device=device, draft=draft)

    @property
    def tp(self) -> int:
        return self.cache.tp

    @property
    def pp(self) -> int:
        return self.cache.pp

    @property
    def dcp(self) -> int:
        return self.cache.dcp

    @property
    def dp(self) -> int:
        return self.cache.dp

    @property
    def ep(self) -> int:
        return self.cache.ep

    @property
    def max_model_len(self) -> int:
        return self.cache.length(self.model)

    @property
    def gpu_name(self) -> str | None:
        """The GPU's catalog name: it picks vLLM's attention backend (H100 when None)."""
        return self.device.name if self.device else None


@dataclass(frozen=True, kw_only=True)
class GroupRow:
    """One kind of layer as the engine caches it (size's layer group plus blocks)."""

    kind: str
    num_layers: int
    num_layers_per_gpu: int
    engine_groups: int  # vLLM KV-cache groups holding this kind (padding included)
    block_size: int
    page_bytes_per_layer: int  # one block of one layer on one GPU (0 = not paged)
    blocks_per_request: int  # per engine group, for one max_model_len request
    tokens_reserved_per_request: int


@dataclass(frozen=True, kw_only=True)
class Refusal:
    """An engine's "no", as it says it: its message with its numbers, and its own estimate of the
    longest max_model_len that would fit (None where the engine gives none)."""

    message: str
    estimated_max_model_len: int | None = None
    stage: int | None = None  # the PP stage that refused (None: every stage, or no stages)


@dataclass(frozen=True, kw_only=True)
class EnginePlan:
    engine: str
    version: str  # the release whose defaults and rules this profile follows
    kv_dtype: str
    block_size: int  # 0: contiguous (hf)
    page_bytes: int  # one block of every KV layer on the most loaded GPU
    num_blocks: int | None
    kv_tokens: int  # what the engine logs as its KV size in tokens
    max_concurrency: float | None  # what the engine logs for max_model_len (None: it logs none)
    requests_at_max_len: float  # max_model_len requests that fit at once (for fit)
    reserve_bytes_per_request: int  # per GPU: what admission sets aside for one request
    steady_bytes_per_request: int  # per GPU: what a max_model_len request actually holds
    groups: tuple[GroupRow, ...]
    notes: tuple[str, ...] = ()
    explain: tuple[str, ...] = ()
    log_lines: tuple[str, ...] = ()  # what the engine logs about its cache (vLLM), refusal included
    refusal: Refusal | None = None  # the engine refuses to start with this memory (the numbers above still hold)
    lookahead_tokens_per_request: int = 0  # KV slots a running request holds for drafted tokens (speculative)
    # per GPU: what the engine's start-up check counts for one max_model_len request where that is not the
    # reserve (vLLM up to 0.13 count each layer unpadded, 0.14-0.18 a hybrid's first KV-cache group only); None: the
    # reserve
    check_bytes_per_request: int | None = None
    pools: int = 1  # KV pools in one replica, each of kv_tokens (vLLM data parallel, SGLang DP attention: dp)
    gpus: int | None = None  # GPUs of one replica (None: tp × pp; vLLM data parallel: dp × tp × pp)

    @property
    def start_check_bytes(self) -> int:
        """Per GPU: what the start-up check counts for one max_model_len request."""
        return self.reserve_bytes_per_request if self.check_bytes_per_request is None else self.check_bytes_per_request


TermKind = Literal["weights", "weights_extra", "draft_weights", "lora", "encoder_cache", "activation", "persistent",
                   "non_torch", "cuda_graphs", "given"]


@dataclass(frozen=True, kw_only=True)
class BudgetTerm:
    """One thing an engine subtracts from GPU memory before the KV cache, per GPU. ``exact`` is a promise: the rule
    is the engine's and every input behind it is exact; an input that is not (kvplan's formula for the tensors, a
    template, an assumed default, a quantization field no reader reads, a guessed kernel backend, an assumed GPU)
    makes the term an estimate, each such input said in ``estimated_because``."""

    name: str
    bytes: int
    exact: bool  # derived from the model and the engine's code (True) or an estimate/measurement (False)
    source: str  # where the rule or the number comes from
    kind: TermKind
    estimated_because: tuple[str, ...] = ()  # the inputs that are not exact (a term exact by its rule, made an estimate)

    def __post_init__(self) -> None:
        if self.exact and self.estimated_because:
            raise ValueError(f"budget term {self.name!r} is marked exact with inexact inputs: {self.estimated_because}")

    def estimated(self, *because: str) -> BudgetTerm:
        """This term with inputs that are not exact: an estimate, saying why (unchanged when `because` is empty)."""
        found = tuple(dict.fromkeys((*self.estimated_because, *(b for b in because if b))))
        return replace(self, exact=False, estimated_because=found) if found else self


@dataclass(frozen=True, kw_only=True)
class ProfileRun:
    """An engine's start-up profile run, as data: what runs and what is alive at its peak."""

    tokens: int  # the forward pass runs over this many tokens (max_num_batched_tokens)
    eager: bool  # eager forward (V0, --enforce-eager); else torch.compile'd piecewise graphs
    sampler_rows: int  # logit rows the dummy sampler takes (0: no sampler)
    sampler_path: str  # sort | flashinfer | v0 (bytes per logit: BudgetRules.sampler_bytes_per_logit)
    sampler_bytes_per_logit: float
    full_hidden_at_sampler: bool  # the T × hidden output stays alive through the sampler
    sampled_row_copies: int  # copies of the R sampled hidden rows alive (V1: the rows + rand_like)
    persistent_rows: int = 0  # vLLM 0.33: max_num_seqs rows of penalty state (output_bin_counts, prompt_bin_mask)
    sampler_buffer_bytes: int = 0  # allocated by the profile's sampler and kept (vLLM 0.17+ Triton top-k/top-p cache)
    draft_tokens: int = 0  # an MTP/EAGLE drafter's dummy forward over this many tokens after the target's (0: none)
    spec_logit_rows: int = 0  # logit rows of a rejection-sampler dummy batch held beside the sampler's rows


@dataclass(frozen=True, kw_only=True)
class WeightSplit:
    """How an engine cuts the weights over one GPU: attention by ``attention_tp``, the other dense layers by ``tp``,
    each MoE layer's experts over ``ep`` ranks, every expert cut by ``expert_tp // ep`` (at least 1)."""

    tp: int
    ep: int = 1
    expert_tp: int | None = None  # None: tp (vLLM flattens its MoE over data parallel: dp × tp)
    attention_tp: int | None = None  # None: tp (SGLang DP attention: tp // dp)
    towers: Literal["first", "every", "none"] = "first"  # where vision/audio towers load ("none": text-only mode)


@dataclass(frozen=True, kw_only=True)
class BudgetRules:
    """What a release subtracts before the KV cache, as data; ``kvplan.planning.budget`` sizes each part."""

    profile: ProfileRun | None  # None: activations are not measured (SGLang keeps a reserve instead)
    non_torch: tuple[str, ...]  # named non-torch terms it subtracts (sizes in kvplan.planning.budget)
    nccl_groups: int = 0  # process groups whose NCCL/all-reduce buffers it subtracts
    cuda_graphs: bool = False  # graph memory is subtracted (captured or estimated before the KV cache)
    mxfp4_backend: str | None = None  # MXFP4 expert layout: marlin pads the experts, triton swizzles them
    mxfp4_assumed: str = ""  # why the backend is an assumption ("": the release's rule for this GPU decides it)
    mxfp4_keeps_scales: bool = False  # the triton_kernels layout keeps the original block scales
    mxfp4_source: str = ""  # the release's selection code (file:line)
    fp8_moe_refine: bool = False  # block-FP8 MoE scales refined to a finer grid where the blocks do not divide
    mla_absorbed: bool = False  # vLLM 0.7 V0: absorbed MLA matrices built at load time
    draft_weights: bool = False  # a draft's weights are loaded before the KV cache is sized (they count)
    draft_shared: tuple[str, ...] = ("embedding", "lm_head")  # MTP module parts the drafter takes from the target
    lora: LoraRule | None = None  # LoRA slots allocated before the KV cache is sized
    encoder: EncoderRule | None = None  # the profile run encodes dummy multimodal items and holds their outputs
    cpu_offload_bytes: int = 0  # weights the engine keeps in host memory instead (vLLM --cpu-offload-gb)
    comm: CommRule | None = None  # vLLM V1: the NCCL communicators its budget sees (sized by kvplan.planning.budget)
    after_kv: AfterKv | None = None  # what the release allocates after the KV cache is sized (None: not checked)
    load: LoadRule | None = None  # how the release keeps what it loads (None: the checkpoint's tensors as stored)


@dataclass(frozen=True, kw_only=True)
class LoadRule:
    """What a release's load keeps beyond the checkpoint's tensors, as data (sized by
    ``kvplan.planning.weights.loaded``)."""

    awq_kernel: Literal["marlin", "machete"] | None = None  # AWQ linear layers' kernel on this GPU (None: unknown)
    mrope_per_model: bool = False  # M-RoPE caches max_position × the model's own factor, else × 4


@dataclass(frozen=True, kw_only=True)
class CommRule:
    """NCCL memory a vLLM V1 release subtracts: every communicator, created after the start-up snapshot (0.8-0.10,
    NCCL_CUMEM_ENABLE forced to 0), or only the TP group's torch communicator the profile's logits all-gather
    creates (0.11-0.25); on a GPU of an NVSwitch system with NVLink SHARP or not. ``measured_on``: the release
    whose logs size the profile-time communicator (``kvplan.planning.budget.COMM_GROUP_BYTES``)."""

    when: Literal["init", "profile"]
    nvls: bool
    tp_groups: int
    pp_groups: int = 0
    measured_on: Literal["0.11", "0.19"] = "0.19"


@dataclass(frozen=True, kw_only=True)
class AfterKv:
    """What a release allocates after its KV cache is sized, as data (sized by ``kvplan.planning.after_kv``):
    CUDA graphs its budget did not subtract, the sampler warm-up on the last PP stage, and persistent buffers
    allocated before the profile that no budget term counts."""

    graphs_unbudgeted: bool  # graphs are captured after the KV cache and no estimate was subtracted
    warmup: ProfileRun | None  # the sampler warm-up (rows, path); None: no warm-up on this release
    uncounted_rows: int = 0  # Model Runner V2 penalty state rows allocated before the profile, in no term
    message: str = ""  # what the release prints when the warm-up runs out of memory ({rows} filled in)
    source: str = ""


@dataclass(frozen=True, kw_only=True)
class LoraRule:
    """How a release allocates LoRA adapter slots on the GPU (sized by ``kvplan.planning.extras.lora``)."""

    slots: int  # adapters resident at once (vLLM max_loras, SGLang max_loras_per_batch)
    rank: int  # max_lora_rank
    target_modules: tuple[str, ...] | None  # None: every linear module
    embeddings: bool  # embed_tokens and lm_head get LoRA slots too (vLLM, families that declare embedding_modules)
    extra_vocab: int  # rows of new vocabulary an adapter may add (vLLM 0.11 and before: lora_extra_vocab_size 256)
    vocab_padding: int  # lm_head LoRA B rows padded to this multiple (vLLM lora_vocab_padding_size; 1: none)
    host_adapters: int  # adapters cached in host memory per rank (vLLM max_cpu_loras; 0: not modelled)
    source: str


@dataclass(frozen=True, kw_only=True)
class EncoderRule:
    """A release's multimodal profile run: dummy items of the largest modality, their outputs held through the
    language model's dummy forward (sized by ``kvplan.planning.extras.encoder``)."""

    budget_tokens: int  # encoder budget before the per-item floor: max_num_batched_tokens
    max_num_seqs: int
    limit_per_prompt: int  # items of a modality per prompt (999 by default in V1)
    items_rule: Literal["cdiv", "floor"]  # 0.9: cdiv(budget, item) and seqs × limit; 0.10 on: get_max_items
    padded_to_budget: bool  # 0.11: every item's output is expanded to budget rows before it is cached
    source: str


@dataclass(frozen=True, kw_only=True)
class BudgetSteps:
    """KV memory per GPU and the arithmetic that produced it (for --explain)."""

    kv_budget_bytes: int
    lines: tuple[str, ...]


def kv_stages(budgets: tuple[int, ...], stage_bytes: list[int], what: str) -> list[tuple[int, int]]:
    """(budget, bytes) of the PP stages that hold any KV; a stage caching nothing limits nothing."""
    pairs = [(b, c) for b, c in zip(budgets, stage_bytes, strict=True) if c > 0]
    if not pairs:
        raise InputError(f"no KV cache to plan: {what} is 0 on every PP stage (no attention layers, or windows "
                         "that keep no token)")
    return pairs


def no_data_parallel(request: Request, why: str) -> None:
    """An engine kvplan plans without data or expert parallelism: dp or ep above 1 is refused, saying why."""
    for name in ("dp", "ep"):
        if getattr(request.cache, name) > 1:
            raise InputError(f"{name} {getattr(request.cache, name)}: {why}", arg=name)


def term_bytes(terms: tuple[BudgetTerm, ...], kinds: tuple[TermKind, ...] | None = None) -> int:
    """Σ bytes of the terms (of these kinds)."""
    return sum(t.bytes for t in terms if kinds is None or t.kind in kinds)


class Engine(Protocol):
    name: str
    version: str  # the release whose rules and defaults the profile follows
    supports_dcp: bool

    def resolve(self, request: Request) -> Request: ...

    def policy(self, request: Request) -> LayoutPolicy: ...

    def budget_rules(self, request: Request) -> BudgetRules: ...

    def weight_split(self, request: Request) -> WeightSplit: ...

    def kv_budget(self, request: Request, terms: tuple[BudgetTerm, ...]) -> BudgetSteps: ...

    def no_memory(self, request: Request) -> Refusal: ...

    def plan(self, request: Request, layout: Layout, budgets_per_stage: tuple[int, ...]) -> EnginePlan: ...
