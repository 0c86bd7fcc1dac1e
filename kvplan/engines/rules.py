"""What an engine release subtracts from GPU memory before its KV cache, as data: the named terms (``BudgetTerm``),
the rules that size them (``BudgetRules`` and its parts, sized by ``kvplan.planning.budget``), how the weights are
cut over one GPU (``WeightSplit``), and the engine's arithmetic on them (``BudgetSteps``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from kvplan.records import Record

TermKind = Literal["weights", "weights_extra", "draft_weights", "lora", "encoder_cache", "activation", "persistent",
                   "non_torch", "cuda_graphs", "given"]


class BudgetTerm(Record):
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
        if not any(because):  # nothing new: the term as it is (an estimate already says why, or it is exact)
            return self
        found = tuple(dict.fromkeys((*self.estimated_because, *(b for b in because if b))))
        return replace(self, exact=False, estimated_because=found) if found else self


class ProfileRun(Record):
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


class WeightSplit(Record):
    """How an engine cuts the weights over one GPU: attention by ``attention_tp``, the other dense layers by ``tp``,
    each MoE layer's experts over ``ep`` ranks, every expert cut by ``expert_tp // ep`` (at least 1)."""

    tp: int
    ep: int = 1
    expert_tp: int | None = None  # None: tp (vLLM flattens its MoE over data parallel: dp × tp)
    attention_tp: int | None = None  # None: tp (SGLang DP attention: tp // dp)
    towers: Literal["first", "every", "none"] = "first"  # where vision/audio towers load ("none": text-only mode)


class BudgetRules(Record):
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


class LoadRule(Record):
    """What a release's load keeps beyond the checkpoint's tensors, as data (sized by
    ``kvplan.planning.weights.loaded``)."""

    awq_kernel: Literal["marlin", "machete"] | None = None  # AWQ linear layers' kernel on this GPU (None: unknown)
    mrope_per_model: bool = False  # M-RoPE caches max_position × the model's own factor, else × 4


class CommRule(Record):
    """NCCL memory a vLLM V1 release subtracts: every communicator, created after the start-up snapshot (0.8-0.10,
    NCCL_CUMEM_ENABLE forced to 0), or only the TP group's torch communicator the profile's logits all-gather
    creates (0.11-0.25); on a GPU of an NVSwitch system with NVLink SHARP or not. The bytes per TP and per PP
    group, and ``measured_on``, the release whose logs sized them (empty for "init"), come from the engine's row
    (vLLM: ``kvplan.engines.vllm.row.COMM_GROUP_BYTES``)."""

    when: Literal["init", "profile"]
    nvls: bool
    tp_groups: int
    group_bytes: int  # per TP group, on this GPU (NVLS or not)
    pp_group_bytes: int  # per PP group (never NVLS)
    pp_groups: int = 0
    measured_on: str = ""


class AfterKv(Record):
    """What a release allocates after its KV cache is sized, as data (sized by ``kvplan.planning.after_kv``):
    CUDA graphs its budget did not subtract, the sampler warm-up on the last PP stage, and persistent buffers
    allocated before the profile that no budget term counts."""

    graphs_unbudgeted: bool  # graphs are captured after the KV cache and no estimate was subtracted
    warmup: ProfileRun | None  # the sampler warm-up (rows, path); None: no warm-up on this release
    uncounted_rows: int = 0  # Model Runner V2 penalty state rows allocated before the profile, in no term
    message: str = ""  # what the release prints when the warm-up runs out of memory ({rows} filled in)
    source: str = ""


class LoraRule(Record):
    """How a release allocates LoRA adapter slots on the GPU (sized by ``kvplan.planning.extras.lora``)."""

    slots: int  # adapters resident at once (vLLM max_loras, SGLang max_loras_per_batch)
    rank: int  # max_lora_rank
    target_modules: tuple[str, ...] | None  # None: every linear module
    embeddings: bool  # embed_tokens and lm_head get LoRA slots too (vLLM, families that declare embedding_modules)
    extra_vocab: int  # rows of new vocabulary an adapter may add (vLLM 0.11 and before: lora_extra_vocab_size 256)
    vocab_padding: int  # lm_head LoRA B rows padded to this multiple (vLLM lora_vocab_padding_size; 1: none)
    host_adapters: int  # adapters cached in host memory per rank (vLLM max_cpu_loras; 0: not modelled)
    source: str


class EncoderRule(Record):
    """A release's multimodal profile run: dummy items of the largest modality, their outputs held through the
    language model's dummy forward (sized by ``kvplan.planning.extras.encoder``)."""

    budget_tokens: int  # encoder budget before the per-item floor: max_num_batched_tokens
    max_num_seqs: int
    limit_per_prompt: int  # items of a modality per prompt (999 by default in V1)
    items_rule: Literal["cdiv", "floor"]  # 0.9: cdiv(budget, item) and seqs × limit; 0.10 on: get_max_items
    padded_to_budget: bool  # 0.11: every item's output is expanded to budget rows before it is cached
    source: str


class BudgetSteps(Record):
    """KV memory per GPU and the arithmetic that produced it (for --explain)."""

    kv_budget_bytes: int
    lines: tuple[str, ...]


def term_bytes(terms: tuple[BudgetTerm, ...], kinds: tuple[TermKind, ...] | None = None) -> int:
    """Σ bytes of the terms (of these kinds)."""
    return sum(t.bytes for t in terms if kinds is None or t.kind in kinds)
