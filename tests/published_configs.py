"""config.json dimensions of checkpoints the tests use but configs/ does not bundle, and bundled configs with
changes. The dimensions are the published config.json values of each checkpoint (confirmed against public
copies of each config when the budget model was calibrated).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CONFIGS = Path(__file__).resolve().parent.parent / "configs"


def bundled(name: str, **changes: Any) -> dict[str, Any]:
    """A bundled config.json with some fields changed (e.g. torch_dtype, quantization_config)."""
    raw: dict[str, Any] = json.loads((CONFIGS / name / "config.json").read_text())
    return {**raw, **changes}


# Published config.json dimensions of checkpoints not bundled under configs/ (the budget-model notes
# confirmed them against public copies of each config).
QWEN3_4B = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "hidden_size": 2560,
            "intermediate_size": 9728, "num_hidden_layers": 36, "num_attention_heads": 32, "num_key_value_heads": 8,
            "head_dim": 128, "vocab_size": 151936, "tie_word_embeddings": True, "max_position_embeddings": 40960,
            "torch_dtype": "bfloat16"}
QWEN25_1_5B = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 1536,
               "intermediate_size": 8960, "num_hidden_layers": 28, "num_attention_heads": 12,
               "num_key_value_heads": 2, "vocab_size": 151936, "tie_word_embeddings": True,
               "max_position_embeddings": 32768, "torch_dtype": "bfloat16"}
QWEN25_14B = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 5120,  # R1-Distill-Qwen-14B
              "intermediate_size": 13824, "num_hidden_layers": 48, "num_attention_heads": 40, "num_key_value_heads": 8,
              "vocab_size": 152064, "tie_word_embeddings": False, "max_position_embeddings": 131072,
              "torch_dtype": "bfloat16"}
QWEN3_30B_A3B = {"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "hidden_size": 2048,
                 "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 128,
                 "num_experts_per_tok": 8, "num_hidden_layers": 48, "num_attention_heads": 32,
                 "num_key_value_heads": 4, "head_dim": 128, "vocab_size": 151936, "tie_word_embeddings": False,
                 "max_position_embeddings": 40960, "decoder_sparse_step": 1, "mlp_only_layers": [],
                 "torch_dtype": "bfloat16"}
# Meta-Llama-3-8B: Llama-3.1-8B's dimensions with 8,192 positions and no rope scaling.
LLAMA3_8B = bundled("meta-llama/Llama-3.1-8B", max_position_embeddings=8192, rope_scaling=None)
