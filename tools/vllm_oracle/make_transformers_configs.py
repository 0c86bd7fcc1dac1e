"""Write config.json files for architectures that transformers can instantiate
with its default (reference-model) hyper-parameters, to exercise vllm_oracle
on families that are not among the bundled configs.

usage (from tools/, with the oracle's venv): python -m vllm_oracle.make_transformers_configs OUT_DIR

These are not released models: tests/data/vllm-oracle-defaults/ embeds them with their records.
"""

import importlib
import sys
from pathlib import Path

from vllm_oracle import fakes  # the CUDA torchvision needs its stubs

fakes.install()

# (transformers model module, config class, architecture vLLM resolves, folder)
FAMILIES = [
    ("qwen3_5", "Qwen3_5TextConfig", "Qwen3_5ForCausalLM", "qwen3_5-text"),
    ("nemotron_h", "NemotronHConfig", "NemotronHForCausalLM", "nemotron-h"),
    ("lfm2", "Lfm2Config", "Lfm2ForCausalLM", "lfm2"),
    ("gemma4", "Gemma4TextConfig", "Gemma4ForCausalLM", "gemma4-text"),
    ("deepseek_v32", "DeepseekV32Config", "DeepseekV32ForCausalLM", "deepseek-v3.2"),
    ("exaone4", "Exaone4Config", "Exaone4ForCausalLM", "exaone4"),
    ("minimax", "MiniMaxConfig", "MiniMaxText01ForCausalLM", "minimax-text-01"),
    ("whisper", "WhisperConfig", "WhisperForConditionalGeneration", "whisper"),
    ("jamba", "JambaConfig", "JambaForCausalLM", "jamba"),
    ("falcon_h1", "FalconH1Config", "FalconH1ForCausalLM", "falcon-h1"),
    ("llama4", "Llama4TextConfig", "Llama4ForCausalLM", "llama4-text"),
    ("gemma3n", "Gemma3nTextConfig", "Gemma3nForCausalLM", "gemma3n-text"),
]


def main(out: Path) -> None:
    for module, class_name, arch, folder in FAMILIES:
        path = f"transformers.models.{module}.configuration_{module}"
        cls = getattr(importlib.import_module(path), class_name)
        config = cls()
        config.architectures = [arch]
        config.dtype = "bfloat16"
        config.save_pretrained(out / "transformers-defaults" / folder)
        print(f"wrote {folder} ({class_name} -> {arch})")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
