"""Architecture lists of SGLang releases (hf ``architectures`` names), as each release spells them.

- ``SWA_*``: models that get the hybrid sliding-window pool. 0.4.9-0.5.6: every model class that defines
  ``get_attention_sliding_window_size`` (``models/gemma2.py``, ``gemma3_causal.py``, ``gemma3_mm.py``,
  ``gemma3n_*.py``; ``gpt_oss.py`` from 0.5.1.post3, ``olmo2.py`` from 0.5.4.post3), checked in
  ``model_executor/model_runner.py`` (0.5.2 :298-306). 0.5.7: MiMo-V2-Flash only (``configs/model_config.py``
  ``is_hybrid_model`` :1147-1167). 0.5.8 on: the ``is_hybrid_swa_model`` allowlist (0.5.8.post1
  ``configs/model_config.py:1220-1228``, 0.5.9 :1320-1330, 0.5.11 :1546-1558, 0.5.12.post1 :1660-1675,
  0.5.13.post1 :1679-1705, 0.5.15.post1 :1833-1867, 0.5.16 / 0.5.18 (``is_hybrid_swa_model``), 0.5.19
  :2120-2141 with ``SWA_SINK_ARCHS`` :54-60, 0.5.21 / 0.5.22 likewise, 0.5.23 :2651-2697 with :88-96).
- ``PCG_OFF_*``: the piecewise prefill-graph blacklist (``piecewise_cuda_graph_disabled_model_archs``:
  0.5.10.post1 ``configs/model_config.py:1352-1358``, 0.5.12.post1 :1558-1566, 0.5.13.post1 :1579-1585).
- ``MM_*``: multimodal architectures that keep prefill graphs (0.5.14 ``configs/model_config.py:1725``,
  breakable list 0.5.16 :1785, 0.5.18 :1921, 0.5.19 :1985, 0.5.20 :2207, 0.5.22 :2388, 0.5.23 :2501).
"""

from __future__ import annotations

GEMMA_WINDOWED = frozenset({"Gemma2ForCausalLM", "Gemma3ForCausalLM", "Gemma3ForConditionalGeneration",
                            "Gemma3nForCausalLM", "Gemma3nForConditionalGeneration"})
SWA_049 = GEMMA_WINDOWED
SWA_051 = SWA_049 | {"GptOssForCausalLM"}
SWA_054 = SWA_051 | {"Olmo2ForCausalLM"}
SWA_057 = frozenset({"MiMoV2FlashForCausalLM", "MiMoV2MTP"})
SWA_058 = SWA_057 | {"Llama4ForConditionalGeneration", "GptOssForCausalLM"}
SWA_059 = SWA_058 | {"Step3p5ForCausalLM", "Step3p5MTP"}
SWA_0511 = SWA_059 | {"MiMoV2ForCausalLM", "Gemma4ForCausalLM", "Gemma4ForConditionalGeneration"}
SWA_0512 = SWA_0511 | {"DeepseekV4ForCausalLM", "DeepseekV4ForCausalLMNextN", "LagunaForCausalLM"}
SWA_0513 = SWA_0512 | {"Step3p7ForConditionalGeneration", "Gemma4UnifiedForConditionalGeneration"}
SWA_0515 = SWA_0513 | {"UnlimitedOCRForCausalLM"}
SWA_0516 = SWA_0515 | {"DeepseekV4ForCausalLMDSpark", "MellumForCausalLM", "InklingForConditionalGeneration",
                       "InklingForConditionalGenerationMTP"}
SWA_0518 = SWA_0516 | {"MuseGlimmerForCausalLM", "MuseGlimmerForConditionalGeneration"}
SWA_0519 = SWA_0518 | {"GraniteSWAForCausalLM", "GraniteMoeSWAForCausalLM"}  # gpt-oss now through SWA_SINK_ARCHS
SWA_0521 = SWA_0519 | {"IQuestQ1ForCausalLM", "IQuestQ1MTP", "DiffusionGemmaForBlockDiffusion"}
SWA_0522 = SWA_0521 | {"EmbeddingGemma2Model"}
SWA_0523 = SWA_0522 | {"BeamForCausalLM"}

PCG_OFF_0510 = frozenset({"DeepseekV32ForCausalLM", "Qwen3NextForCausalLM", "GlmMoeDsaForCausalLM",
                          "BailingMoeV2_5ForCausalLM", "LLaDAModelLM"})
DEEPSEEK_V4 = frozenset({"DeepseekV4ForCausalLM", "DeepseekV4ForCausalLMNextN", "DeepseekV4ForCausalLMDSpark"})
PCG_OFF_0512 = PCG_OFF_0510 | {"DeepseekV4ForCausalLM", "DeepseekV4ForCausalLMNextN"}
PCG_OFF_0513 = PCG_OFF_0512 - {"DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM"}
NEMOTRON_H = frozenset({"NemotronHForCausalLM", "NemotronHPuzzleForCausalLM", "NemotronHForCausalLMMTP"})

MM_TC_0514 = frozenset({"Cohere2VisionForConditionalGeneration"})
MM_BCG_0516 = frozenset({"Qwen3_5ForConditionalGeneration", "Qwen3_5MoeForConditionalGeneration"})
MM_BCG_0518 = MM_BCG_0516 | {"InternS2MobiusForConditionalGeneration", "MuseGlimmerForConditionalGeneration",
                             "KimiK3ForConditionalGeneration", "KimiK25ForConditionalGeneration"}
MM_BCG_0519 = MM_BCG_0518 | {"Cohere2VisionForConditionalGeneration", "PaddleOCRVLForConditionalGeneration"}
MM_BCG_0520 = MM_BCG_0519 | {"Glm5NextForConditionalGeneration"}
MM_BCG_0522 = MM_BCG_0520 | {"Qwen4ExpForConditionalGeneration", "MiniMaxM3SparseForCausalLM",
                             "MiniMaxM3SparseForConditionalGeneration"}
MM_BCG_0523 = MM_BCG_0522 | {"MuseSparkForConditionalGeneration"}
