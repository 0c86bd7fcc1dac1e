"""The bundled catalog as the tests see it: which configs kvplan sizes, and which it refuses by design.

Every bundled config is a real one (configs/SOURCES.md). A few name an architecture kvplan does not
model; kvplan answers those with one line naming the field, never a number (REFUSED). Two leave the
text model's fields to the transformers config class defaults, which kvplan applies once the class
default table (config/defaults.py) supplies them (NEEDS_CLASS_DEFAULTS): with the table they are sized
like every other config; without it they would refuse naming the missing field, and the tests follow
whichever holds.
"""

from __future__ import annotations

from functools import cache

from kvplan.config import bundled_index, load_model
from kvplan.errors import ConfigError

REFUSED = {
    "deepseek-ai/DeepSeek-V4-Flash": "compress_ratios",  # DeepSeek-V4 compressed attention
    "meta-llama/Llama-3.2-90B-Vision-Instruct": "cross_attention_layers",  # mllama (removed in vLLM 0.33)
}
NEEDS_CLASS_DEFAULTS = {
    "google/gemma-3-4b-it": "num_attention_heads",  # Gemma3TextConfig defaults (8 heads, 4 KV heads, 256)
    "llava-hf/llava-1.5-7b-hf": "num_hidden_layers",  # LlamaConfig defaults (32 layers, 4096, 32 heads)
}


@cache
def sized_ids() -> tuple[str, ...]:
    """Bundled ids kvplan sizes: all but the refused, and the class-default ones only once they load."""
    out = []
    for model_id in bundled_index():
        if model_id in REFUSED:
            continue
        if model_id in NEEDS_CLASS_DEFAULTS:
            try:
                load_model(model_id)
            except ConfigError:
                continue
        out.append(model_id)
    return tuple(out)

# Bundled configs whose weights kvplan.planning.weights does not count yet (its families are the first
# catalog's: Llama, Mistral, Qwen2/3 and MoE, Qwen3-Next, DeepSeek-V2/V3, Kimi-K2, GLM-4.5, Gemma-2/3, Phi,
# Falcon, gpt-oss, ChatGLM3). Their KV cache is sized; their weights need --kv-budget for a capacity.
WEIGHTS_NOT_COUNTED = frozenset({
    "allenai/Olmo-3.1-32B-Instruct", "bigcode/starcoder2-7b", "CohereForAI/c4ai-command-r-v01",
    "deepseek-ai/DeepSeek-V3.2", "google/gemma-4-26B-A4B", "ibm-granite/granite-4.0-tiny-preview",
    "LGAI-EXAONE/EXAONE-4.0-32B", "LGAI-EXAONE/EXAONE-4.5-33B", "LiquidAI/LFM2-1.2B", "LiquidAI/LFM2.5-VL-1.6B",
    "llava-hf/llava-1.5-7b-hf",  # the language model is counted, not the CLIP tower and projector
    "meta-llama/Llama-4-Scout-17B-16E-Instruct", "microsoft/phi-1", "MiniMaxAI/MiniMax-M1-80k",
    "MiniMaxAI/MiniMax-M2.7", "mistralai/Devstral-Small-2-24B-Instruct", "mistralai/Voxtral-Mini-3B-2507",
    "moonshotai/Kimi-K2.5", "moonshotai/Kimi-K3", "moonshotai/Kimi-Linear-48B-A3B-Instruct",
    "nvidia/Gemma-4-31B-IT-NVFP4", "nvidia/Llama-3_3-Nemotron-Super-49B-v1", "nvidia/Nemotron-H-56B-Base-8K",
    "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", "nvidia/NVIDIA-Nemotron-3-Super-120B-A12B-FP8",
    "nvidia/NVIDIA-Nemotron-3-Ultra-550B-A55B-BF16", "openai/whisper-large-v3", "openai/whisper-small",
    "Qwen/Qwen2.5-VL-7B-Instruct", "Qwen/Qwen3-VL-32B-Instruct", "THUDM/chatglm2-6b",
    "tiiuae/falcon-mamba-7b", "zai-org/GLM-5",
})


def weights_ids() -> tuple[str, ...]:
    """Sized bundled ids whose weights kvplan counts (checked against transformers on the meta device)."""
    return tuple(m for m in sized_ids() if m not in WEIGHTS_NOT_COUNTED)
