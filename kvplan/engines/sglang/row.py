"""What one SGLang release row holds: the ``SglangRelease`` dataclass and the records it is built from (the rows
themselves: ``rows.py``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

FractionRule = Literal["tp-table", "tp-table-80g", "tp-pp-table", "tiers", "reserve"]


@dataclass(frozen=True, kw_only=True)
class Tier:
    """One GPU-memory class of the defaults (G below ``below_mib``; None: no bound)."""

    below_mib: int | None
    chunked: int  # chunked_prefill_size
    max_bs: tuple[int, int]  # decode CUDA-graph max batch size at tp < 4, tp >= 4
    reserve_gib: tuple[float, float] = (0.0, 0.0)  # 0.4.7-0.5.2: reserved (a + b·tp·pp) GiB


@dataclass(frozen=True, kw_only=True)
class PrefillGraphs:
    """Prefill (piecewise / breakable) CUDA graphs on by default, 0.5.10 on: 8 MiB per capture size (MLA: a
    flat 1,536 MiB) join the reserve, unless one of ``off_when`` holds for the request."""

    off_when: frozenset[str]  # keys of fraction.PREFILL_OFF
    off_archs: frozenset[str] = frozenset()  # model-architecture blacklist
    multimodal_archs: frozenset[str] = frozenset()  # multimodal architectures that keep them
    context_cap: bool = False  # the largest size is capped at an explicit --context-length (0.5.13-0.5.16)
    eager_drops_decode: bool = False  # --disable-cuda-graph drops the decode-graph reserve too (0.5.15 on)


@dataclass(frozen=True, kw_only=True)
class SwaPool:
    """Which models get the hybrid sliding-window pool and how N splits into full and SWA tokens."""

    archs: frozenset[str]  # architectures (hf ``architectures``) that get it when the model has windows
    split: Literal["layer-tokens", "layer-tokens-paged", "memory-weighted", "available"]
    opt_in: bool = False  # a text config with ``is_hybrid_swa: true`` gets it too (0.5.13 on)


Method = Literal["eagle", "eagle3", "mtp", "draft_model", "ngram"]


@dataclass(frozen=True, kw_only=True)
class SglangRelease:
    key: str  # the first release of the step
    fraction_rule: FractionRule
    unknown_gpu_fraction: float | None  # the fraction when G cannot be read (None: SGLang raises)
    tiers: tuple[Tier, ...]  # by GPU memory, first whose bound G is below
    unknown_tier: Tier  # G unknown
    dp_forced: bool  # --enable-dp-attention sets dp = tp (0.4.0-0.4.3)
    heads_by_attention_tp: bool  # KV heads split over tp // dp (0.4.1 on); before, over tp
    dp_reserve: Literal["none", "flat", "per-bs"]  # DP attention: +4 GiB (0.4.7-0.5.2), 3·max_bs·dp MiB (0.5.3 on)
    spec_methods: tuple[Method, ...]  # kvplan's speculative methods the release takes
    spec_rule: Literal["headroom", "reuse", "cell"] | None
    spec_reserve_mib: tuple[int, int, int]  # fraction reserve for (EAGLE/MTP, STANDALONE, NGRAM)
    prefill_graphs: PrefillGraphs | None
    max_bs_capped: bool  # a default decode max_bs is capped at --max-running-requests (0.5.22 on)
    pages: bool  # --page-size exists; the pool holds N + page slots (before: N + 1, no page rounding)
    pp: Literal["none", "per-stage", "min"]  # no PP; each stage sizes its own pool; min over stages (0.5.2 on)
    swa: SwaPool | None
    v_head_dim_cell: bool  # the cell counts head_dim + v_head_dim (0.5.7 on); before, 2 × head_dim
    mamba: Literal["none", "fixed", "ratio"]  # state pool: none; 512 slots (0.5.2); memory ratio (0.5.3 on)
    vlm_factor: bool  # the default fraction is scaled for a vision tower (0.4.9 on)
    mm_reserve_mib: int  # multimodal memory taken from the pool's budget (0.5.18 on)
    kv_dtypes: frozenset[str]  # kvplan's names of the --kv-cache-dtype choices
    log: Literal["none", "sizes", "tokens", "dtype"]  # the pool's allocation line
    mla_log: bool  # the MLA pool logs its line (0.4.5 on)
    # DeepSeek sparse attention (DSA/NSA: V3.2, GLM-5) pool, 0.5.3 on: the cell counts the indexer key + scales per
    # layer and the allocation line includes its buffers (0.5.4 on); the cell counts the latent as stored (fp8: kv_lora
    # fp8 + its scales + bf16 rope) rather than kv_lora_rank + rope elements of the KV dtype (0.5.17 on)
    dsa_indexer_counted: bool = False
    dsa_cell_stored: bool = False
    no_memory: Literal["plain", "current-value", "weights"]  # the refusal's wording
    changes: str  # what differs from the previous row
    source: str  # where the changes were read (release, file:line)

    @property
    def label(self) -> str:
        return f"SGLang {self.key}"
