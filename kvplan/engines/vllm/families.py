"""Rules of single families that change from release to release (the rows' ``v_padded_to_k`` and
``small_tier_capabilities``).

- mllama (``MllamaForConditionalGeneration``) runs on the V0 engine only (``SupportsV0Only``, 0.10.1.1
  ``model_executor/models/mllama.py:1259-1260``): the V1 rows of 0.8-0.10 refuse it and name the V0 rows; on a V0
  row each cross-attention layer pages like the others (``LayoutPolicy.cross_as_self``).
- GB10 (DGX Spark, compute capability 12.1): vLLM 0.33 keeps it on the small scheduler tier whatever its memory
  (``engine/arg_utils.py:2961-2963``; earlier releases have no such rule).
- MiMo-V2 (``MiMoV2FlashForCausalLM``): 0.14-0.19 build one ``Attention`` of ``head_dim`` and pad V with zeros to
  it (0.19 ``model_executor/models/mimo_v2_flash.py:287-315``), so the cache holds V as wide as K; from 0.20 V is
  stored at ``v_head_dim`` (``head_size_v``). The config's ``attention_chunk_size`` does not turn the hybrid KV cache
  manager off in these releases: the check (0.19 ``config/vllm.py:1207-1223``) applies only when
  ``VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE`` is 0, and its default is 1 from 0.14 on (``envs.py``; 0 in
  0.12-0.13, releases that do not serve MiMo-V2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kvplan.config.model import ModelConfig
from kvplan.engines.vllm.row import Capability, VllmRelease
from kvplan.engines.vllm.served import check_served
from kvplan.errors import InputError

if TYPE_CHECKING:
    from kvplan.engines.base import Request

V0_ONLY = {"MllamaForConditionalGeneration": "vllm 0.10.1.1 model_executor/models/mllama.py:1259-1260"}
V0_ROWS = "vllm@0.6.4, vllm@0.6.5, vllm@0.6.6, vllm@0.7, vllm@0.8-v0"


def architectures(model: ModelConfig) -> list[str]:
    archs = model.raw.get("architectures")
    return [a for a in archs if isinstance(a, str)] if isinstance(archs, list) else []


def pads_v_to_k(model: ModelConfig, rel: VllmRelease) -> bool:
    return any(arch in rel.v_padded_to_k for arch in architectures(model))


def check_engine(model: ModelConfig, release_key: str, release_label: str, v0: bool) -> None:
    """An architecture the release does not build (served.py), or a V0-only model on a V1 release row: vLLM runs it
    on V0, which that row does not model."""
    archs = architectures(model)
    check_served(archs, release_key, release_label.split(" (")[0])
    found = [a for a in archs if a in V0_ONLY]
    if found and not v0:
        raise InputError(f"{release_label} runs {found[0]} on V0 only (SupportsV0Only, {V0_ONLY[found[0]]}); "
                         f"kvplan plans V0 with {V0_ROWS}", arg="engine")


def small_tier(rel: VllmRelease, capability: Capability | None) -> bool:
    """The GPU stays on the release's smallest scheduler tier whatever its memory (GB10 on 0.33)."""
    return capability in rel.small_tier_capabilities


DSV4_TYPES = ("deepseek_v4",)


def experts_kind(req: Request) -> str | None:
    """Which of a release's MXFP4 priority lists the model's experts take: gpt_oss (quant_method mxfp4) or
    deepseek_v4 (its fp4 experts: expert_dtype fp4, the default, without moe_quant_algo NVFP4)."""
    raw = req.model.raw
    quant = raw.get("quantization_config")
    method = str(quant.get("quant_method", "")).lower() if isinstance(quant, dict) else ""
    if method == "mxfp4":
        return "gpt_oss"
    nvfp4 = isinstance(quant, dict) and str(quant.get("moe_quant_algo", "")).upper() == "NVFP4"
    if req.model.model_type in DSV4_TYPES and method == "fp8" and raw.get("expert_dtype", "fp4") == "fp4" and not nvfp4:
        return "deepseek_v4"
    return None
