"""What each vLLM release accepts before it plans, as the values the rows (``rows.py``, ``rows_late.py``) set in the
release that changed them; ``checks.py``, ``parallel.py``, ``families.py`` and ``speculative.py`` read the row.

- KV cache dtype names: the ``CacheDType`` literal of each release's ``config/cache.py`` (0.8.0:
  ``engine/arg_utils.py:367-370``), turned into argparse choices before 0.33; 0.33 takes any string and its
  validator refuses the unknown (``config/cache.py:468-476``); bisected over every extracted release's
  ``config/cache.py``.
- LoRA ranks: 8-512 checked by ``LoRAConfig`` up to 0.11 (0.8.0 ``config.py:2326-2330``, 0.11.0
  ``config/lora.py:104-109``); from 0.12 the ``MaxLoRARanks`` literal, rank 1 added, as argparse choices (0.12.0
  ``config/lora.py``, ``engine/arg_utils.py:981``; 0.33 ``config/lora.py:27``).
- Block sizes: argparse choices up to 0.17 (``vllm serve`` only: the ``LLM`` class skips the validation,
  ``SkipValidation[BlockSize]``); from 0.18 the attention backends decide (``backend_checks.py``).
- nvfp4 KV: 0.20-0.31 cc 10.x with trtllm attention (0.31 ``v1/attention/backends/flashinfer.py:499-506``); 0.32 on,
  also 8.0, 9.0 and 12.0 through FlashInfer's FA2 path, not at head_size 64 nor with attention sinks (0.33
  ``flashinfer.py:652-686``).
- MTP drafters: the models whose ``config/speculative.py`` (``config.py`` before 0.11) ``hf_config_override`` maps to
  an MTP drafter, by the model_type or architecture matched, added in the release that first has them.
"""

from __future__ import annotations

E4 = ("auto", "fp8", "fp8_e4m3", "fp8_e5m2")
KV_010 = (*E4, "fp8_inc")
KV_012 = ("auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla")
KV_011 = KV_012[:6]
KV_018 = ("auto", "float16", *KV_012[1:])
_TQ = ("turboquant_k8v4", "turboquant_4bit_nc", "turboquant_k3v4_nc", "turboquant_3bit_nc")
KV_020 = (*KV_018, *_TQ, "int8_per_token_head", "fp8_per_token_head", "nvfp4")
KV_025 = (*KV_018, *_TQ, "int4_per_token_head", "int8_per_token_head", "fp8_per_token_head", "nvfp4")
KV_028 = (*KV_025, "nvfp4_4over6")
KV_030 = (*KV_018, "nvfp4_ds_mla", *KV_028[len(KV_018):])
KV_032 = (*KV_030[:13], "ultraquant_4bit", *KV_030[13:])
KV_033 = (*KV_030[:13], "octave_k3v4", "octave_k3v3", "octave_k3v3_compact", "ultraquant_4bit", *KV_030[13:])

LORA_08 = (8, 16, 32, 64, 128, 256, 320, 512)
LORA_012 = (1, *LORA_08)

BLOCKS_08 = (8, 16, 32, 64, 128)
BLOCKS_09 = (1, *BLOCKS_08)
BLOCKS_012 = (*BLOCKS_09, 256)

NVFP4_020: tuple[int, ...] = (10,)
NVFP4_032 = (10, (8, 0), (9, 0), (12, 0))

MTP_09 = frozenset({"deepseek_v3", "MiMoForCausalLM"})
MTP_010 = MTP_09 | {"Glm4MoeForCausalLM"}
MTP_011 = MTP_010 | {"deepseek_v32", "qwen3_next"}
MTP_016 = MTP_011 | {"glm_moe_dsa"}
MTP_017 = MTP_016 | {"Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration", "qwen3_5", "qwen3_5_moe",
                     "nemotron_h"}
MTP_020 = MTP_017 | {"deepseek_v4", "exaone4_5", "exaone4_5_text"}
MTP_021 = MTP_020 | {"MiMoV2FlashForCausalLM"}
MTP_028 = MTP_021 | {"qwen3_5_text", "qwen3_5_moe_text"}
