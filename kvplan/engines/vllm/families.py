"""Rules of single families that change from release to release, as data keyed by release.

- MiMo-V2 (``MiMoV2FlashForCausalLM``): 0.14-0.19 build one ``Attention`` of ``head_dim`` and pad V with zeros to
  it (0.19 ``model_executor/models/mimo_v2_flash.py:287-315``), so the cache holds V as wide as K; from 0.20 V is
  stored at ``v_head_dim`` (``head_size_v``). The config's ``attention_chunk_size`` does not turn the hybrid KV cache
  manager off in these releases: the check (0.19 ``config/vllm.py:1207-1223``) applies only when
  ``VLLM_ALLOW_CHUNKED_LOCAL_ATTN_WITH_HYBRID_KV_CACHE`` is 0, and its default is 1 from 0.14 on (``envs.py``; 0 in
  0.12-0.13, releases that do not serve MiMo-V2).
"""

from __future__ import annotations

from kvplan.config.model import ModelConfig
from kvplan.engines.vllm.served import at_least, below

# (architecture, first release, last release) in which V is padded to the K width.
V_PADDED_TO_K = (("MiMoV2FlashForCausalLM", "0.14", "0.19"),)


def architectures(model: ModelConfig) -> list[str]:
    archs = model.raw.get("architectures")
    return [a for a in archs if isinstance(a, str)] if isinstance(archs, list) else []


def pads_v_to_k(model: ModelConfig, release_key: str) -> bool:
    archs = architectures(model)
    return any(arch in archs and at_least(release_key, first) and not below(last, release_key)
               for arch, first, last in V_PADDED_TO_K)
