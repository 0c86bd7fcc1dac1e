"""A prefill or decode instance of a disaggregated deployment (``capacity --role``): what its pool holds and what one
request's KV costs to move between the two.

- transfer: one request of ``max_model_len`` tokens moves its KV from every prefill rank to its decode rank: tokens ×
  bytes per token per rank × ranks (``transfer_bytes_per_request``);
- descriptors: vLLM's NixlConnector registers one region per KV layer, K and V apart (one for an MLA latent), and
  describes each block of a region once (vLLM 0.25.0 ``distributed/kv_transfer/kv_connector/v1/nixl/
  base_worker.py:1115-1134`` num_descs = regions × blocks, ``:1292-1311``), so a request is layers × splits ×
  ceil(tokens / block) descriptors per rank; by block size, as vllm#50913 measured the cost of small ones;
- decode reserve: SGLang's decode instance admits a request only with ``--num-reserved-decode-tokens`` (512) more
  than its prompt (0.5.8 ``srt/disaggregation/decode.py:496-499``, ``server_args.py:640``); its radix cache is off
  (``server_args.py:2324``).
"""

from __future__ import annotations

from kvplan.engines import Engine
from kvplan.engines.base import EnginePlan, Request
from kvplan.errors import InputError
from kvplan.formulas.layout import Layout
from kvplan.records import Record
from kvplan.specs import MLAAttn, NoKV, parts
from kvplan.units import cdiv

BLOCK_SIZES = (16, 32, 64, 128)  # the block sizes the descriptor counts are given for


class RoleSummary(Record):
    """One role of a disaggregated deployment (JSON ``role``)."""

    role: str  # prefill or decode
    transfer: str  # the KV transfer it is launched with (NixlConnector, mooncake)
    transfer_bytes_per_request: int  # one max_model_len request's KV, every rank together
    transfer_bytes_per_request_per_rank: int
    descriptors_per_request_per_rank: dict[int, int]  # block size -> descriptors (the plan's block size included)
    descriptor_bytes: int  # one descriptor at the plan's block size
    reserve_tokens_per_request: int  # what the decode instance holds back beyond the prompt (SGLang: 512)
    requests_at_max_len: float  # the pool over (max_model_len + reserve) tokens
    rule: str


def _kv_layers(layout: Layout, pp: int) -> tuple[int, int]:
    """(KV layers on one rank, K/V splits: 1 for an MLA latent, else 2)."""
    specs = [s for s in layout.specs_per_gpu if not isinstance(s, NoKV)]
    mla = any(isinstance(p, MLAAttn) for s in specs for p in parts(s))
    return cdiv(len(specs), pp), 1 if mla else 2


def summary(profile: Engine, request: Request, plan: EnginePlan, layout: Layout) -> RoleSummary | None:
    role = request.settings.role
    if role is None:
        return None
    if profile.kv_transfer is None:
        raise InputError(f"kvplan writes no prefill/decode disaggregation for {profile.version}", arg="role")
    per_token = plan.page_bytes // plan.block_size if plan.block_size else 0
    tokens, ranks = request.max_model_len, request.tp * request.pp
    layers, splits = _kv_layers(layout, request.pp)
    blocks = sorted({*BLOCK_SIZES, plan.block_size} - {0})
    reserve = profile.decode_reserve_tokens if role == "decode" else 0
    return RoleSummary(
        role=role, transfer=profile.kv_transfer, transfer_bytes_per_request=tokens * per_token * ranks,
        transfer_bytes_per_request_per_rank=tokens * per_token,
        descriptors_per_request_per_rank={b: layers * splits * cdiv(tokens, b) for b in blocks},
        descriptor_bytes=plan.page_bytes // max(layers * splits, 1), reserve_tokens_per_request=reserve,
        requests_at_max_len=plan.kv_tokens / (tokens + reserve),
        rule=f"{tokens:,} tokens × {per_token:,} B per token per rank × {ranks} rank(s); descriptors: {layers} layers "
             f"× {splits} (K, V) × ceil({tokens:,} / block); pool {plan.kv_tokens:,} / ({tokens:,} + reserve {reserve})")
