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

from dataclasses import dataclass, field
from typing import Literal, Protocol

from kvplan.config.model import ModelConfig
from kvplan.dtypes import DEFAULT_QUANT_GROUP
from kvplan.errors import InputError
from kvplan.formulas.layers import Overrides
from kvplan.formulas.layout import Layout, LayoutPolicy
from kvplan.specs import LayerSpec

EntryPoint = Literal["serve", "llm"]
# How tokens are drafted (vLLM's method names): a separate draft checkpoint, an EAGLE head, an EAGLE-3 head,
# the target's own next-token-prediction layers (DeepSeek-V3 num_nextn_predict_layers), or prompt n-grams.
SPEC_METHODS = ("draft_model", "eagle", "eagle3", "mtp", "ngram")


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Engine knobs. ``None`` means the release's own default (``Engine.resolve`` fills it in)."""

    block_size: int | None = None  # vLLM block / SGLang page / TRT-LLM tokens_per_block
    max_num_batched_tokens: int | None = None  # vLLM (TRT-LLM max_num_tokens): by GPU class and entry point
    max_num_seqs: int | None = None  # vLLM: by GPU class and entry point (profile-run sampler rows)
    entry_point: EntryPoint = "serve"  # vLLM: `vllm serve` or the `LLM` class (their scheduler defaults differ)
    async_scheduling: bool | None = None  # vLLM 0.33 default: one more batch in flight
    in_flight_batches: int | None = None  # vLLM: batches a request may have scheduled (0.33: pp + async; before: 1)
    prefix_caching: bool | None = None  # vLLM: None = its default (on; off for attention-free models)
    hybrid_kv_cache_manager: bool = True  # vLLM --disable-hybrid-kv-cache-manager turns it off
    legacy_token_log: bool | None = None  # vLLM before 0.33: tokens = num_blocks // groups × block
    enforce_eager: bool = False  # vLLM/TRT-LLM: no CUDA graphs; the profile forward runs eagerly
    sampler: str | None = None  # vLLM top-k/top-p path of the profile run: sort | flashinfer
    moe_backend: str | None = None  # vLLM MXFP4 experts: marlin | triton (weights are laid out per backend)
    max_lora_rank: int | None = None  # --max-lora-rank: LoRA slots of this rank are allocated with the weights
    max_loras: int | None = None  # vLLM --max-loras (1) / SGLang --max-loras-per-batch (8): adapter slots on the GPU
    lora_target_modules: tuple[str, ...] | None = None  # None: every linear module (vLLM's default)
    max_cpu_loras: int | None = None  # vLLM: adapters cached in host memory (default: max_loras)
    speculative_model: str | None = None  # a draft checkpoint (draft_model, eagle, eagle3)
    speculative_method: str | None = None  # one of SPEC_METHODS (None: draft_model with a model, mtp without)
    num_speculative_tokens: int | None = None  # K: tokens drafted per step (default: the draft's layers, else 1)
    limit_mm_per_prompt: int | None = None  # vLLM items of a modality per prompt (999); 0: text only
    cpu_offload_bytes: int = 0  # vLLM --cpu-offload-gb: weights kept in host memory, per GPU
    kv_offloading_bytes: int | None = None  # host KV tier: vLLM --kv-offloading-size (all ranks), SGLang
    # --hicache-size and TRT-LLM host_cache_size (per rank)
    hicache_ratio: float | None = None  # SGLang --enable-hierarchical-cache: host pool = ratio × device pool (2.0)
    lmcache_cpu_bytes: int | None = None  # LMCache max_local_cpu_size, allocated by every rank
    gpu_memory_utilization: float | None = None  # vLLM
    mem_fraction_static: float | None = None  # SGLang
    free_gpu_memory_fraction: float | None = None  # TRT-LLM
    dp: int = 1  # SGLang DP attention size
    swa_full_tokens_ratio: float = 0.8  # SGLang hybrid SWA pool
    chunked_prefill_size: int | None = None  # SGLang: by GPU memory class (its memory reserve follows it)

    def __post_init__(self) -> None:
        for name, allowed in (("entry_point", ("serve", "llm")), ("sampler", (None, "sort", "flashinfer")),
                              ("moe_backend", (None, "marlin", "triton")),
                              ("speculative_method", (None, *SPEC_METHODS))):
            if getattr(self, name) not in allowed:
                raise InputError(f"{name} must be one of {', '.join(a for a in allowed if a)}, got "
                                 f"{getattr(self, name)!r}", arg=name)
        for name in ("block_size", "max_num_batched_tokens", "max_num_seqs", "max_lora_rank", "chunked_prefill_size",
                     "max_loras", "max_cpu_loras", "num_speculative_tokens", "kv_offloading_bytes", "hicache_ratio",
                     "lmcache_cpu_bytes"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise InputError(f"{name} must be positive, got {value}", arg=name)
        for name in ("limit_mm_per_prompt", "cpu_offload_bytes"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise InputError(f"{name} must be 0 or more, got {value}", arg=name)


@dataclass(frozen=True, kw_only=True)
class Device:
    """The GPU a capacity question is asked for, as the engines read it."""

    name: str | None  # catalog name (H100-SXM); None: only the memory is known
    memory_bytes: int  # torch total_memory (vLLM total_gpu_memory)
    smi_memory_mib: int | None = None  # nvidia-smi memory.total (SGLang sizes its reserve from it)


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

    @property
    def num_layers(self) -> int:
        return len(self.specs)

    @property
    def model_id(self) -> str | None:
        return self.model.model_id if self.model else None


@dataclass(frozen=True, kw_only=True)
class Request:
    """One capacity question, independent of the engine."""

    model: ModelConfig
    tp: int = 1
    pp: int = 1
    dcp: int = 1
    kv_dtype: str = "auto"
    max_model_len: int
    gpu_name: str | None = None  # picks vLLM's attention backend (H100 when None)
    device: Device | None = None  # the GPU's memory (scheduler defaults, budgets); None: an H100's defaults
    settings: Settings = field(default_factory=Settings)
    overrides: Overrides | None = None
    quant_group: int = DEFAULT_QUANT_GROUP  # int8/int4 KV: elements per fp16 scale
    state_dtype: str = "auto"  # linear/Mamba conv states and, by default, recurrent ones (vLLM mamba_cache_dtype)
    ssm_state_dtype: str = "auto"  # recurrent states (vLLM mamba_ssm_cache_dtype; auto: the config's own)
    draft: Draft | None = None  # speculative decoding (None: off)


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


TermKind = Literal["weights", "weights_extra", "draft_weights", "lora", "encoder_cache", "activation", "persistent",
                   "non_torch", "cuda_graphs", "given"]


@dataclass(frozen=True, kw_only=True)
class BudgetTerm:
    """One thing an engine subtracts from GPU memory before the KV cache, per GPU."""

    name: str
    bytes: int
    exact: bool  # derived from the model and the engine's code (True) or an estimate/measurement (False)
    source: str  # where the rule or the number comes from
    kind: TermKind


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


@dataclass(frozen=True, kw_only=True)
class BudgetRules:
    """What a release subtracts before the KV cache, as data; ``kvplan.planning.budget`` sizes each part."""

    profile: ProfileRun | None  # None: activations are not measured (SGLang keeps a reserve instead)
    non_torch: tuple[str, ...]  # named non-torch terms it subtracts (sizes in kvplan.planning.budget)
    nccl_groups: int = 0  # process groups whose NCCL/all-reduce buffers it subtracts
    cuda_graphs: bool = False  # graph memory is subtracted (captured or estimated before the KV cache)
    mxfp4_backend: str | None = None  # MXFP4 expert layout: marlin pads the experts, triton swizzles them
    mla_absorbed: bool = False  # vLLM 0.7 V0: absorbed MLA matrices built at load time
    draft_weights: bool = False  # a draft's weights are loaded before the KV cache is sized (they count)
    lora: LoraRule | None = None  # LoRA slots allocated before the KV cache is sized
    encoder: EncoderRule | None = None  # the profile run encodes dummy multimodal items and holds their outputs
    cpu_offload_bytes: int = 0  # weights the engine keeps in host memory instead (vLLM --cpu-offload-gb)


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

    def kv_budget(self, request: Request, terms: tuple[BudgetTerm, ...]) -> BudgetSteps: ...

    def no_memory(self, request: Request) -> Refusal: ...

    def plan(self, request: Request, layout: Layout, budgets_per_stage: tuple[int, ...]) -> EnginePlan: ...
