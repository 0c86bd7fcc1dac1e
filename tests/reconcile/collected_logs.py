"""The logs collected for issue 21 (tests/data/logs, INDEX.md) as reconcile cases: the flags each needs (a
stand-in model where kvplan bundles no config of the checkpoint but one with the same KV geometry), the model
kvplan plans with, quantity -> (matched, checked), and the quantities it lists without recomputing them. The
misses are pinned, each with its reason, in test_reconcile.py (MISSES)."""

from __future__ import annotations

from typing import Any

CollectedCase = tuple[dict[str, Any], str, dict[str, tuple[int, int]], set[str]]

COLLECTED: dict[str, CollectedCase] = {
    # a Qwen3-30B-A3B FP8 checkpoint (sidecar: 48 layers, 128 experts) on an H100 (the kernel configs name it)
    "sglang-2026aug-qwen3-30b-a3b-fp8-h100": (
        {"model": "Qwen/Qwen3-30B-A3B", "gpu": "H100"}, "Qwen/Qwen3-30B-A3B",
        {"weights_bytes": (1, 1), "kv_tokens": (0, 1), "k_size_bytes": (1, 1), "v_size_bytes": (1, 1)}, set()),
    "sglang-v041-llama31-8b-h100-docs": (
        {}, "meta-llama/Llama-3.1-8B",
        {"kv_tokens": (1, 1), "k_size_bytes": (1, 1), "v_size_bytes": (1, 1)}, set()),
    # QwQ-32B: Qwen2.5-32B's geometry
    "sglang-v043post4-qwq-32b-tp4-l4": (
        {"model": "Qwen/Qwen2.5-32B"}, "Qwen/Qwen2.5-32B",
        {"kv_tokens": (1, 1), "k_size_bytes": (1, 1), "v_size_bytes": (1, 1)}, {"weights_bytes"}),
    # the docs notebook's Meta-Llama-3.1-8B-Instruct on an 80 GB H100-class runner
    "sglang-v058-llama31-8b-lora-h100-docs": (
        {"model": "meta-llama/Llama-3.1-8B-Instruct", "gpu": "H100"}, "meta-llama/Llama-3.1-8B-Instruct",
        {"weights_bytes": (1, 1), "kv_tokens": (0, 1), "k_size_bytes": (1, 1), "v_size_bytes": (1, 1)}, set()),
    # nvidia/Llama-3.1-8B-Instruct-FP8 with its FP8 KV cache (the title)
    "trtllm-0.20.0-llama31-8b-fp8-h100-bench": (
        {"model": "meta-llama/Llama-3.1-8B", "kv_dtype": "fp8"}, "meta-llama/Llama-3.1-8B",
        {"kv_tokens": (1, 1), "kv_size_bytes": (1, 1)}, set()),
    "trtllm-1.1.0rc3-gpt-oss-120b-gb10-pytorch": (
        {}, "openai/gpt-oss-120b",
        {"kv_budget_bytes": (1, 1), "kv_bytes_per_token": (1, 1), "max_tokens": (1, 1), "kv_tokens": (1, 1), "kv_size_bytes": (1, 1)}, {"kv_size_bytes", "kv_tokens"}),
    "vllm-v0101-gpt-oss-120b-h100-negative-kv": (
        {"model": "openai/gpt-oss-120b"}, "openai/gpt-oss-120b",
        {"weights_bytes": (1, 1)}, {"kv_budget_bytes"}),
    "vllm-v01011-gpt-oss-120b-tp4-ray-util08-a100-80gb": (
        {}, "openai/gpt-oss-120b",
        {"weights_bytes": (1, 1), "num_blocks": (1, 1), "kv_tokens": (1, 1), "max_concurrency": (1, 1)}, {"kv_budget_bytes"}),
    # Qwen2-7B-Instruct: Qwen2.5-7B's geometry (28 layers, 4 KV heads of 128); weights not compared
    "vllm-v01011-qwen2-7b-tp2-ray2node-util05-a100-40gb": (
        {"model": "Qwen/Qwen2.5-7B"}, "Qwen/Qwen2.5-7B",
        {"num_blocks": (1, 1), "kv_tokens": (2, 2), "max_concurrency": (1, 1)}, {"kv_budget_bytes", "weights_bytes"}),
    # Qwen2-7B-Instruct: Qwen2.5-7B's geometry (28 layers, 4 KV heads of 128); weights not compared
    "vllm-v01011-qwen2-7b-tp2-util025-a100-80gb": (
        {"model": "Qwen/Qwen2.5-7B"}, "Qwen/Qwen2.5-7B",
        {"num_blocks": (1, 1), "kv_tokens": (2, 2), "max_concurrency": (1, 1)}, {"kv_budget_bytes", "weights_bytes"}),
    # Qwen2-7B-Instruct: Qwen2.5-7B's geometry (28 layers, 4 KV heads of 128); weights not compared
    "vllm-v01011-qwen2-7b-tp2-util05-a100-80gb": (
        {"model": "Qwen/Qwen2.5-7B"}, "Qwen/Qwen2.5-7B",
        {"num_blocks": (1, 1), "kv_tokens": (2, 2), "max_concurrency": (1, 1)}, {"kv_budget_bytes", "weights_bytes"}),
    # Qwen2-7B-Instruct: Qwen2.5-7B's geometry (28 layers, 4 KV heads of 128); weights not compared
    "vllm-v01011-qwen2-7b-util025-a100-80gb": (
        {"model": "Qwen/Qwen2.5-7B"}, "Qwen/Qwen2.5-7B",
        {"num_blocks": (1, 1), "kv_tokens": (1, 1), "max_concurrency": (1, 1)}, {"kv_budget_bytes", "weights_bytes"}),
    # Qwen2-7B-Instruct: Qwen2.5-7B's geometry (28 layers, 4 KV heads of 128); weights not compared
    "vllm-v01011-qwen2-7b-util05-a100-80gb": (
        {"model": "Qwen/Qwen2.5-7B"}, "Qwen/Qwen2.5-7B",
        {"num_blocks": (1, 1), "kv_tokens": (1, 1), "max_concurrency": (1, 1)}, {"kv_budget_bytes", "weights_bytes"}),
    "vllm-v0102-qwen3-8b-fp8-lora-l4": (
        {}, "Qwen/Qwen3-8B",
        {"weights_bytes": (1, 1), "kv_budget_bytes": (1, 1), "kv_tokens": (1, 1), "max_concurrency": (1, 1)}, set()),
    "vllm-v0102-qwen3-next-80b-a3b-tp2-h200": (
        {}, "Qwen/Qwen3-Next-80B-A3B-Thinking",
        {"weights_bytes": (1, 1), "kv_budget_bytes": (1, 1), "num_blocks": (1, 1), "kv_tokens": (2, 2), "max_concurrency": (1, 1)}, set()),
    "vllm-v0112-llama32-1b-fp8block-lora-l4": (
        {}, "meta-llama/Llama-3.2-1B-Instruct",
        {"weights_bytes": (1, 1), "kv_tokens": (1, 1), "max_concurrency": (1, 1)}, {"kv_budget_bytes"}),
    "vllm-v0151-llama31-8b-131k-eager-a100-40gb": (
        {}, "meta-llama/Llama-3.1-8B",
        {"weights_bytes": (1, 1), "kv_tokens": (1, 1), "max_concurrency": (1, 1)}, {"kv_budget_bytes"}),
    # the AWQ checkpoint's local path: Qwen2.5-14B's geometry (48 layers, 8 KV heads of 128)
    "vllm-v0151-qwen25-14b-awq-16k-refusal": (
        {"model": "Qwen/Qwen2.5-14B"}, "Qwen/Qwen2.5-14B",
        {"kv_needed_bytes": (1, 1), "estimated_max_model_len": (1, 1)}, {"kv_budget_bytes", "weights_bytes"}),
    # Meta-Llama-3-70B-Instruct-AWQ: Llama-3.1-70B's geometry (80 layers, 8 KV heads of 128)
    "vllm-v0160-llama3-70b-awq-tp2-l40s": (
        {"model": "meta-llama/Llama-3.1-70B"}, "meta-llama/Llama-3.1-70B",
        {"kv_tokens": (1, 1), "max_concurrency": (1, 1)}, {"kv_budget_bytes", "weights_bytes"}),
    "vllm-v0180-qwen25-7b-fp16-eager-volta": (
        {}, "Qwen/Qwen2.5-7B-Instruct",
        {"weights_bytes": (1, 1), "kv_tokens": (1, 1), "max_concurrency": (1, 1)}, {"kv_budget_bytes"}),
    # the Qwen3.5-27B (the log names no checkpoint)
    "vllm-v019-qwen35-27b-hybrid": (
        {"model": "Qwen/Qwen3.5-27B"}, "Qwen/Qwen3.5-27B",
        {"max_concurrency": (1, 1)}, {"kv_tokens"}),
    "vllm-v0190-qwen35-9b-l40s": (
        {}, "Qwen/Qwen3.5-9B",
        {"weights_bytes": (1, 1), "kv_tokens": (1, 1), "max_concurrency": (1, 1)}, {"kv_budget_bytes"}),
    # Nemotron-Cascade-2-30B-A3B (NVFP4): Nemotron-3-Nano-30B-A3B's layer layout (sidecar); weights not compared
    "vllm-v0191-nemotron-cascade2-30b-a3b-nvfp4-marlin-h100": (
        {"model": "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16"}, "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
        {"kv_tokens": (1, 1), "max_concurrency": (1, 1)}, {"kv_budget_bytes", "weights_bytes"}),
    "vllm-v0191-qwen3-8b-a100-40gb": (
        {}, "Qwen/Qwen3-8B",
        {"weights_bytes": (1, 1), "kv_tokens": (1, 1), "max_concurrency": (1, 1)}, {"kv_budget_bytes"}),
    # GLM-5.1-FP8 (the log names no checkpoint): GLM-5's geometry; its weights are GLM-5's bf16 ones (a pinned miss)
    "vllm-v0191dev-glm51-fp8-tp8-h200": (
        {"model": "zai-org/GLM-5", "tp": 8}, "zai-org/GLM-5",
        {"weights_bytes": (0, 1), "kv_tokens": (1, 1), "max_concurrency": (1, 1)}, {"kv_budget_bytes"}),
    # Qwen3.6-35B-A3B-NVFP4: Qwen3.5-35B-A3B's layer layout (sidecar)
    # Qwen3.6-27B (text-only NVFP4 with its MTP module): Qwen3.5-27B's geometry
    # its MTP draft (speculative_config in the log) and prefix caching are read from the log and planned (issue 29)
    "vllm-v0200-qwen36-27b-nvfp4-mtp1-fp8kv-wsl": (
        {"model": "Qwen/Qwen3.5-27B"}, "Qwen/Qwen3.5-27B",
        {"kv_tokens": (1, 1), "max_concurrency": (1, 1)}, {"kv_budget_bytes", "weights_bytes"}),
    "vllm-v0200-qwen36-35b-a3b-nvfp4-fp8kv-wsl-32gb": (
        {"model": "Qwen/Qwen3.5-35B-A3B"}, "Qwen/Qwen3.5-35B-A3B",
        {"kv_tokens": (1, 1), "max_concurrency": (1, 1)}, {"kv_budget_bytes", "weights_bytes"}),
    # Qwen2.5-Omni-7B's thinker: Qwen2.5-7B's geometry
    "vllm-v0210-qwen25-omni-7b-int4-24gb": (
        {"model": "Qwen/Qwen2.5-7B"}, "Qwen/Qwen2.5-7B",
        {"kv_tokens": (1, 1), "max_concurrency": (1, 1)}, {"kv_budget_bytes", "weights_bytes"}),
    "vllm-v0220-qwen25-7b-48gb": (
        {}, "Qwen/Qwen2.5-7B-Instruct",
        {"weights_bytes": (1, 1), "kv_tokens": (1, 1), "max_concurrency": (1, 1)}, {"kv_budget_bytes"}),
    # gemma-4-31b-it: the NVFP4 checkpoint of the same model has its geometry (weights not compared)
    "vllm-v0230-gemma4-31b-it-kaggle-95gb": (
        {"model": "nvidia/Gemma-4-31B-IT-NVFP4"}, "nvidia/Gemma-4-31B-IT-NVFP4",
        {"kv_tokens": (1, 1), "max_concurrency": (1, 1)}, {"kv_budget_bytes", "weights_bytes"}),
    # LFM2.5-1.2B-Instruct: LFM2-1.2B's layer layout (6 attention + 10 short-conv layers, sidecar)
    "vllm-v0260-lfm25-1.2b-sm90": (
        {"model": "LiquidAI/LFM2-1.2B"}, "LiquidAI/LFM2-1.2B",
        {"kv_tokens": (1, 1), "max_concurrency": (1, 1)}, {"kv_budget_bytes", "weights_bytes"}),
    # the docker command names Qwen/Qwen3-32B after the image; reconcile reads --model only
    "vllm-v0271-qwen3-32b-pp2-rtxpro6000": (
        {"model": "Qwen/Qwen3-32B"}, "Qwen/Qwen3-32B",
        {"weights_bytes": (1, 1), "kv_tokens": (1, 1), "max_concurrency": (1, 1)}, {"kv_budget_bytes"}),
    "vllm-v0271-qwen3-32b-tp1-refusal-rtxpro6000": (
        {"model": "Qwen/Qwen3-32B"}, "Qwen/Qwen3-32B",
        {"weights_bytes": (1, 1)}, {"kv_budget_bytes"}),
    "vllm-v0271-qwen3-32b-tp2-rtxpro6000": (
        {"model": "Qwen/Qwen3-32B"}, "Qwen/Qwen3-32B",
        {"weights_bytes": (1, 1), "kv_tokens": (1, 1), "max_concurrency": (1, 1)}, {"kv_budget_bytes"}),
    "vllm-v0280-qwen25-7b-awq-runpod": (
        {}, "Qwen/Qwen2.5-7B-Instruct",
        {"num_blocks": (1, 1), "kv_tokens": (1, 1), "max_concurrency": (1, 1)}, {"kv_budget_bytes"}),
    # Qwen2.5-32B-Instruct-AWQ (named in the post, not the log): Qwen2.5-32B's geometry; max len from the CMD line
    "vllm-v0641-qwen25-32b-awq-4k-a6000": (
        {"model": "Qwen/Qwen2.5-32B", "max_model_len": 4096}, "Qwen/Qwen2.5-32B",
        {"kv_budget_bytes": (1, 1)}, set()),
    # Qwen2.5-72B-Instruct-GPTQ-Int4 (not named in the log): Qwen2.5-72B's geometry, bf16 weights (a pinned miss)
    "vllm-v0641-qwen25-72b-gptq-int4-8k-refusal-a40": (
        {"model": "Qwen/Qwen2.5-72B"}, "Qwen/Qwen2.5-72B",
        {"weights_bytes": (0, 1), "kv_budget_bytes": (1, 1), "max_concurrency": (1, 1), "num_cpu_blocks": (1, 1), "kv_tokens": (1, 1)}, {"num_blocks"}),
    "vllm-v065-phi4-gptq4-util015-80gb": (
        {}, "microsoft/phi-4",
        {"weights_bytes": (1, 1), "kv_budget_bytes": (1, 1), "num_blocks": (1, 1), "max_concurrency": (1, 1), "num_cpu_blocks": (1, 1)}, set()),
    "vllm-v066-llama3-8b-a100-40gb": (
        {"model": "meta-llama/Meta-Llama-3-8B"}, "meta-llama/Meta-Llama-3-8B",
        {"weights_bytes": (1, 1), "kv_budget_bytes": (1, 1), "num_blocks": (1, 1), "max_concurrency": (1, 1), "num_cpu_blocks": (1, 1)}, set()),
    # DeepSeek-Coder-V2-Lite-Instruct: DeepSeek-V2-Lite's geometry (27 MLA layers)
    "vllm-v071-deepseek-coder-v2-lite-tp8-a100-40gb-sagemaker": (
        {"model": "deepseek-ai/DeepSeek-V2-Lite", "tp": 8}, "deepseek-ai/DeepSeek-V2-Lite",
        {"weights_bytes": (1, 1), "kv_budget_bytes": (1, 1)}, set()),
    "vllm-v071-llama31-8b-131k-refusal-a10": (
        {"model": "meta-llama/Llama-3.1-8B-Instruct"}, "meta-llama/Llama-3.1-8B-Instruct",
        {"weights_bytes": (1, 1), "kv_budget_bytes": (1, 1), "max_concurrency": (1, 1), "num_cpu_blocks": (1, 1), "kv_tokens": (1, 1)}, {"num_blocks"}),
    "vllm-v071-phi4-bnb4-t4": (
        {}, "microsoft/phi-4",
        {"kv_budget_bytes": (1, 1), "num_blocks": (1, 1), "max_concurrency": (1, 1), "num_cpu_blocks": (0, 1)}, {"weights_bytes"}),
    "vllm-v071-qwen25-3b-bnb4-t4": (
        {}, "Qwen/Qwen2.5-3B",
        {"kv_budget_bytes": (1, 1), "num_blocks": (1, 1), "max_concurrency": (1, 1), "num_cpu_blocks": (0, 1)}, {"weights_bytes"}),
    "vllm-v072-qwen25-1.5b-util05-t4-kaggle": (
        {}, "Qwen/Qwen2.5-1.5B",
        {"weights_bytes": (1, 1), "kv_budget_bytes": (1, 1), "num_blocks": (1, 1), "max_concurrency": (1, 1), "num_cpu_blocks": (1, 1)}, set()),
    # Qwen2.5-Math-1.5B: Qwen2.5-1.5B's geometry
    "vllm-v072-qwen25-math-1.5b-22gb": (
        {"model": "Qwen/Qwen2.5-1.5B"}, "Qwen/Qwen2.5-1.5B",
        {"kv_budget_bytes": (1, 1), "num_blocks": (1, 1), "max_concurrency": (1, 1), "num_cpu_blocks": (1, 1)}, {"weights_bytes"}),
    "vllm-v073-llama31-8b-bnb4-t4": (
        {}, "meta-llama/Llama-3.1-8B",
        {"kv_budget_bytes": (1, 1), "num_blocks": (1, 1), "max_concurrency": (1, 1), "num_cpu_blocks": (0, 1)}, {"weights_bytes"}),
    "vllm-v081-llama32-3b-lora-a100-40gb": (
        {}, "meta-llama/Llama-3.2-3B-Instruct",
        {"weights_bytes": (0, 1), "kv_budget_bytes": (1, 1), "num_blocks": (1, 1), "max_concurrency": (1, 1), "num_cpu_blocks": (0, 1)}, set()),
    # the GGUF file of Llama-3.2-3B-Instruct
    "vllm-v082-llama32-3b-gguf-q8-eager-rtx4070-laptop": (
        {"model": "meta-llama/Llama-3.2-3B-Instruct"}, "meta-llama/Llama-3.2-3B-Instruct",
        {"kv_budget_bytes": (1, 1), "num_blocks": (1, 1), "max_concurrency": (1, 1), "num_cpu_blocks": (1, 1)}, {"weights_bytes"}),
    "vllm-v082-llama32-3b-serve-t4": (
        {}, "meta-llama/Llama-3.2-3B-Instruct",
        {"weights_bytes": (1, 1), "kv_budget_bytes": (1, 1), "num_blocks": (1, 1), "max_concurrency": (1, 1), "num_cpu_blocks": (1, 1)}, set()),
    "vllm-v082-phi4-bnb4-lora-a100-80gb": (
        {}, "microsoft/phi-4",
        {"kv_budget_bytes": (1, 1), "num_blocks": (1, 1), "max_concurrency": (1, 1), "num_cpu_blocks": (0, 1)}, {"weights_bytes"}),
    "vllm-v084-qwen3-4b-10k-rtx2060-12gb": (
        {"model": "Qwen/Qwen3-4B"}, "Qwen/Qwen3-4B",
        {"weights_bytes": (1, 1), "kv_budget_bytes": (1, 1), "num_blocks": (1, 1), "max_concurrency": (1, 1), "num_cpu_blocks": (1, 1)}, set()),
    # the compose file's Qwen/Qwen3-30B-A3B at tp 4 (the excerpt prints neither)
    "vllm-v085-qwen3-30b-a3b-tp4-a10": (
        {"model": "Qwen/Qwen3-30B-A3B", "tp": 4}, "Qwen/Qwen3-30B-A3B",
        {"weights_bytes": (1, 1), "max_concurrency": (1, 1)}, {"kv_tokens"}),
    # DeepSeek-R1-0528-Qwen3-8B: Qwen3-8B's geometry
    "vllm-v0851-deepseek-r1-0528-qwen3-8b-bnb4-t4": (
        {"model": "Qwen/Qwen3-8B"}, "Qwen/Qwen3-8B",
        {"kv_budget_bytes": (1, 1), "num_blocks": (1, 1), "max_concurrency": (1, 1), "num_cpu_blocks": (0, 1)}, {"weights_bytes"}),
    "vllm-v0851-llama32-3b-lora-t4": (
        {}, "meta-llama/Llama-3.2-3B-Instruct",
        {"weights_bytes": (0, 1), "kv_budget_bytes": (1, 1), "num_blocks": (1, 1), "max_concurrency": (1, 1), "num_cpu_blocks": (0, 1)}, set()),
    "vllm-v0851-mistral-7b-v03-bnb4-rtx4090": (
        {}, "mistralai/Mistral-7B-Instruct-v0.3",
        {"kv_budget_bytes": (1, 1), "num_blocks": (1, 1), "max_concurrency": (1, 1), "num_cpu_blocks": (0, 1)}, {"weights_bytes"}),
    "vllm-v0851-qwen3-4b-base-lora-t4": (
        {}, "Qwen/Qwen3-4B",
        {"weights_bytes": (0, 1), "kv_budget_bytes": (1, 1), "num_blocks": (1, 1), "max_concurrency": (1, 1), "num_cpu_blocks": (0, 1)}, set()),
    "vllm-v092-qwen25-vl-7b-bnb4-t4": (
        {}, "Qwen/Qwen2.5-VL-7B-Instruct",
        {"kv_budget_bytes": (1, 1), "num_blocks": (1, 1), "max_concurrency": (1, 1), "num_cpu_blocks": (0, 1)}, {"weights_bytes"}),
    "vllm-v092dev-deepseek-v2-lite-tp2-pp2-eager-l4": (
        {}, "deepseek-ai/DeepSeek-V2-Lite",
        {"kv_tokens": (2, 2), "max_concurrency": (1, 1)}, {"kv_budget_bytes"}),
    # --- issue 29: quantized, MTP and multimodal deployments (sidecars beside each log) ---
    # the HF-cache snapshot path names the checkpoint (read as its hub id, no flag); the scheduler settings, the release
    # and the MTP x2 drafter are the log's; tokens and concurrency as the release's plan computes them (issue 29)
    "vllm-v0250-deepseek-v4-flash-tp2-mtp2-fp8kv-rtxpro6000": (
        {}, "deepseek-ai/DeepSeek-V4-Flash",
        {"weights_bytes": (1, 1), "kv_tokens": (1, 1), "max_concurrency": (1, 1)}, {"kv_budget_bytes"}),
    # the report's section heading names openai/gpt-oss-20b, its title the GB10; the lines name neither. The tokens
    # of these GB10 runs: from the printed concurrency (tokens = int(concurrency × length), no budget printed)
    "vllm-v0300-gpt-oss-20b-gb10-util055": (
        {"model": "openai/gpt-oss-20b", "gpu": "GB10"}, "openai/gpt-oss-20b",
        {"weights_bytes": (1, 1), "kv_tokens": (1, 1)}, {"max_concurrency"}),
    # Qwen3-30B-A3B-Thinking-2507-FP8 (section heading): Qwen3-30B-A3B-FP8's dimensions and FP8 block format
    "vllm-v0300-qwen3-30b-a3b-thinking-fp8-gb10-util055": (
        {"model": "Qwen/Qwen3-30B-A3B-FP8"}, "Qwen/Qwen3-30B-A3B-FP8",
        {"weights_bytes": (1, 1), "kv_tokens": (1, 1)}, {"max_concurrency"}),
    # Qwen3.6-35B-A3B-FP8 (section heading): Qwen3.5-35B-A3B's layout, its bf16 weights (a pinned miss)
    "vllm-v0300-qwen36-35b-a3b-fp8-gb10-util055": (
        {"model": "Qwen/Qwen3.5-35B-A3B"}, "Qwen/Qwen3.5-35B-A3B",
        {"weights_bytes": (0, 1), "kv_tokens": (1, 1)}, {"max_concurrency"}),
    # NousResearch/Hermes-4-14B-FP8 (section heading): Qwen3-14B's dimensions, its bf16 weights (a pinned miss)
    "vllm-v0300-hermes4-14b-fp8-gb10-util055": (
        {"model": "Qwen/Qwen3-14B"}, "Qwen/Qwen3-14B",
        {"weights_bytes": (0, 1), "kv_tokens": (1, 1)}, {"max_concurrency"}),
    # the log names Qwen/Qwen2.5-7B-Instruct-AWQ: kvplan plans the base model (no AWQ config bundled)
    "vllm-v0310-qwen25-7b-instruct-awq-h200": (
        {}, "Qwen/Qwen2.5-7B-Instruct",
        {"weights_bytes": (0, 1), "kv_tokens": (1, 1), "max_concurrency": (1, 1)}, {"kv_budget_bytes"}),
    # 'Gemma 3 4B' in the report (the line names no model)
    "vllm-v0110-gemma3-4b-it-rtx4080": (
        {"model": "google/gemma-3-4b-it"}, "google/gemma-3-4b-it",
        {"weights_bytes": (1, 1)}, set()),
    "vllm-v0111rc2dev-gpt-oss-20b-tp2-ray2node-rocm": (
        {}, "openai/gpt-oss-20b",
        {"weights_bytes": (0, 1)}, set()),
    "vllm-v0231dev-qwen36-27b-nvfp4-fp8kv-gb10-util07": (
        {}, "nvidia/Qwen3.6-27B-NVFP4",
        {"kv_tokens": (1, 1), "max_concurrency": (1, 1), "weights_bytes": (1, 1)}, {"kv_budget_bytes"}),
    "sglang-v058post1-glm5-fp8-fp8kv-tp8-mi355x": (
        {}, "zai-org/GLM-5-FP8",
        {"weights_bytes": (1, 1), "kv_tokens": (0, 1), "kv_size_bytes": (1, 1)}, set()),
    # the same GB10 and settings as the run without MTP, with --speculative-config mtp x2
    "vllm-v0231dev-qwen36-27b-nvfp4-mtp2-fp8kv-gb10-util07": (
        {}, 'nvidia/Qwen3.6-27B-NVFP4',
        {'weights_bytes': (1, 1), 'kv_tokens': (1, 1), 'max_concurrency': (1, 1)}, {'kv_budget_bytes'}),
    # a refusal: 15.67 GiB of weights, -14.28 GiB of KV at 0.22 of an A100-80GB
    "vllm-v0230-qwen25-vl-7b-util022-a100-80gb-refusal": (
        {}, 'Qwen/Qwen2.5-VL-7B-Instruct',
        {'weights_bytes': (1, 1)}, {'kv_budget_bytes'}),
    # NVIDIA's vLLM 0.13.0 container (26.01) on a GB10, the vendored FP8 config
    "vllm-v0130nv-qwen3-30b-a3b-fp8-fp8kv-gb10-util03": (
        {}, 'Qwen/Qwen3-30B-A3B-FP8',
        {'weights_bytes': (1, 1), 'kv_tokens': (1, 1), 'max_concurrency': (1, 1)}, {'kv_budget_bytes'}),
    # an author's excerpt of vLLM 0.25.1 lines (prefixes dropped); the document names openai/gpt-oss-120b
    "vllm-v0251-gpt-oss-120b-h100-util095-excerpt": (
        {'model': 'openai/gpt-oss-120b'}, 'openai/gpt-oss-120b',
        {'weights_bytes': (0, 1), 'kv_tokens': (0, 1)}, {'kv_budget_bytes'}),
    # the local /google/gemma-3-27b-it folder names the bundled checkpoint
    "vllm-v0110rc2dev-gemma3-27b-it-rocm-limitmm2": (
        {}, 'google/gemma-3-27b-it',
        {'weights_bytes': (1, 1), 'num_blocks': (1, 1), 'kv_tokens': (1, 1), 'max_concurrency': (1, 1)}, {'kv_budget_bytes'}),
    # a capacity report quoting its service.log with line numbers; the vendored MiniMax-M2.5 FP8 config
    "vllm-v0191dev-minimax-m25-fp8-tp4-h100-util095": (
        {}, 'MiniMaxAI/MiniMax-M2.5',
        {'weights_bytes': (1, 1), 'kv_tokens': (1, 1), 'max_concurrency': (1, 1)}, {'kv_budget_bytes'}),
    # an author's excerpt of four lines after the launch command it quotes (TP 4, defaults otherwise)
    "vllm-minimax-m25-fp8-tp4-rtxpro6000-excerpt": (
        {'model': 'MiniMaxAI/MiniMax-M2.5', 'tp': 4}, 'MiniMaxAI/MiniMax-M2.5',
        {'kv_tokens': (1, 1), 'max_concurrency': (1, 1)}, {'kv_budget_bytes'}),
    # a Cursor chat export quoting the worker's log; the pod spec in the same file sets TP 8 and 2,097,152 tokens
    "vllm-v0120-llama4-scout-tp8-h200-2m": (
        {'tp': 8}, 'meta-llama/Llama-4-Scout-17B-16E-Instruct',
        {'weights_bytes': (1, 1)}, set()),
    # Qwen3.5-35B-A3B-FP8: the bf16 config's layout (no FP8 config bundled)
    "vllm-v0181dev-qwen35-35b-a3b-fp8-gb10-util08": (
        {'model': 'Qwen/Qwen3.5-35B-A3B'}, 'Qwen/Qwen3.5-35B-A3B',
        {'weights_bytes': (0, 1), 'kv_tokens': (1, 1), 'max_concurrency': (1, 1)}, {'kv_budget_bytes'}),
    # DeepSeek-V4-Flash with MTP x2 across two GB10 nodes ('Device capability 12.1'; the compose file's sm 12.1a), TP 2,
    # B12X MXFP4 experts; the MTP draft read from the log
    "vllm-v0211dev-deepseek-v4-flash-tp2-2node-gb10-mtp2-fp8kv": (
        {'gpu': 'GB10'}, 'deepseek-ai/DeepSeek-V4-Flash',
        {'weights_bytes': (1, 1), 'kv_tokens': (0, 1), 'max_concurrency': (0, 1)}, {'kv_budget_bytes'}),
    # an author's excerpt (launch command, the two figures, the log's head): gpt-oss-20b's MXFP4 experts on an
    # A100 80GB (Marlin on sm80; the post names the A100, its size follows from the numbers)
    "vllm-v0190-gpt-oss-20b-a100-80gb-util065-excerpt": (
        {'gpu': 'A100-80G'}, 'openai/gpt-oss-20b',
        {'weights_bytes': (1, 1)}, {'kv_budget_bytes'}),
    # an author's excerpt (launch command and the two figures): Gemma-4-26B-A4B with its vision tower on an A100 80GB,
    # eager; the release is not printed (the same author's next run is 0.19.0)
    "vllm-gemma4-26b-a4b-a100-80gb-eager-excerpt": (
        {'model': 'google/gemma-4-26B-A4B', 'gpu': 'A100-80G', 'engine': 'vllm@0.19'}, 'google/gemma-4-26B-A4B',
        {'weights_bytes': (1, 1)}, {'kv_budget_bytes'}),
    # Qwen3.6-35B-A3B-NVFP4 with MTP x2 on a GB10 (the log's fused-MoE config name): Qwen3.5-35B-A3B's layout (no config of
    # the NVFP4 checkpoint bundled); its MTP layer joins the KV groups (3 padding layers), read from the log
    "vllm-v0221dev-qwen36-35b-a3b-nvfp4-mtp2-fp8kv-gb10-util085": (
        {'model': 'Qwen/Qwen3.5-35B-A3B'}, 'Qwen/Qwen3.5-35B-A3B',
        {'kv_tokens': (1, 1), 'max_concurrency': (1, 1)}, {'weights_bytes', 'kv_budget_bytes'}),
    # RedHatAI's NVFP4 Gemma-4-26B-A4B (compressed-tensors) on a 32 GB Blackwell GPU under WSL (not named): Google's bf16
    # checkpoint has its layers and KV layout (no config of the NVFP4 one bundled)
    "vllm-v0192dev-gemma4-26b-a4b-nvfp4-fp8kv-wsl-32gb": (
        {'model': 'google/gemma-4-26B-A4B'}, 'google/gemma-4-26B-A4B',
        {'weights_bytes': (0, 1), 'kv_tokens': (1, 1), 'max_concurrency': (0, 1)}, {'kv_budget_bytes'}),
    # NVIDIA's NVFP4 Gemma-4-26B-A4B on an RTX 5090 under WSL (0.20.2, 256,000 tokens): Google's bf16 checkpoint has its
    # layers and KV layout (no config of the NVFP4 one bundled); 0.20.2 prints 0.21's token line
    "vllm-v0202-gemma4-26b-a4b-nvfp4-fp8kv-256k-rtx5090-wsl": (
        {'model': 'google/gemma-4-26B-A4B'}, 'google/gemma-4-26B-A4B',
        {'weights_bytes': (0, 1), 'kv_tokens': (0, 1), 'max_concurrency': (1, 1)}, {'kv_budget_bytes'}),
    # Qwen3.5-9B with its vision tower on an L40S (the section heading), fp8 KV: the author cut vLLM's prefixes and the
    # Initializing line's config, so the release (0.18.0 in that line) is given
    "vllm-v0180-qwen35-9b-fp8kv-l40s-modal": (
        {'gpu': 'L40S', 'engine': 'vllm@0.18'}, 'Qwen/Qwen3.5-9B',
        {'weights_bytes': (1, 1), 'kv_tokens': (1, 1), 'max_concurrency': (1, 1)}, {'kv_budget_bytes'}),
    # RedHatAI's NVFP4 Qwen3.6-35B-A3B (compressed-tensors) on a ~120 GiB native-FP4 GPU (a GB10 inferred), 0.20.0:
    # Qwen3.5-35B-A3B's layout (no config of the NVFP4 checkpoint bundled)
    "vllm-v0200-qwen36-35b-a3b-redhat-nvfp4-fp8kv-120gb": (
        {'model': 'Qwen/Qwen3.5-35B-A3B'}, 'Qwen/Qwen3.5-35B-A3B',
        {'kv_tokens': (1, 1), 'max_concurrency': (1, 1)}, {'kv_budget_bytes', 'weights_bytes'}),
    # the same NVFP4 checkpoint on a 32 GB Blackwell GPU under WSL (an RTX 5090 inferred), 8,192 tokens: Qwen3.5-35B-A3B's
    # layout
    "vllm-v0200-qwen36-35b-a3b-redhat-nvfp4-fp8kv-8k-rtx5090-wsl": (
        {'model': 'Qwen/Qwen3.5-35B-A3B'}, 'Qwen/Qwen3.5-35B-A3B',
        {'kv_tokens': (1, 1), 'max_concurrency': (1, 1)}, {'weights_bytes', 'kv_budget_bytes'}),
}
