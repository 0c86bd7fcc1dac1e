"""What the parser reads from each log collected for issue 21 (tests/data/logs): engine, version, the settings
it states and every KV number as printed, in log order. Checked against each log's sidecar (.json), whose
"numbers" were written from the source by hand; test_parse.py runs them with the older cases."""

from __future__ import annotations

ParsedCase = tuple[str, str | None, dict[str, str], dict[str, list[str]]]

PARSED: dict[str, ParsedCase] = {
    "sglang-2026aug-qwen3-30b-a3b-fp8-h100": (
        "sglang", None, {"quantization": "fp8"},
        {"avail_before": ["78.48"], "avail_after": ["49.33"], "weights": ["29.15"], "kv_tokens": ["392920"], "k_size": ["17.99"], "v_size": ["17.99"], "avail_after_pool": ["12.70"]}),
    "sglang-v041-llama31-8b-h100-docs": (
        "sglang", None, {"model": "meta-llama/Meta-Llama-3.1-8B-Instruct", "tp": "1", "max_model_len": "131072", "kv_dtype": "auto", "dtype": "bfloat16", "mem_fraction_static": "0.88"},
        {"avail_before": ["78.81"], "avail_after": ["63.72"], "k_size": ["27.13"], "v_size": ["27.13"], "avail_after_pool": ["8.34"], "max_total_num_tokens": ["444500"], "max_model_len": ["131072"]}),
    "sglang-v043post4-qwq-32b-tp4-l4": (
        "sglang", None, {"model": "/home/model/Qwen/QwQ-32B", "tp": "4", "max_model_len": "131072", "kv_dtype": "auto", "dtype": "bfloat16", "mem_fraction_static": "0.85"},
        {"avail_before": ["21.63"], "avail_after": ["6.09"], "weights": ["15.54"], "kv_tokens": ["46611"], "k_size": ["1.42"], "v_size": ["1.42"], "avail_after_pool": ["2.09"], "max_total_num_tokens": ["46611"], "max_model_len": ["131072"]}),
    "sglang-v058-llama31-8b-lora-h100-docs": (
        "sglang", None, {"max_model_len": "131072", "kv_dtype": "bfloat16", "dtype": "bfloat16"},
        {"avail_before": ["78.43"], "avail_after": ["63.41"], "weights": ["15.02"], "kv_tokens": ["20480"], "k_size": ["1.25"], "v_size": ["1.25"], "avail_after_pool": ["58.18"], "max_total_num_tokens": ["20480"], "max_model_len": ["131072"], "available_gpu_mem": ["58.02"]}),
    "trtllm-0.20.0-llama31-8b-fp8-h100-bench": (
        "trtllm", None, {"free_gpu_memory_fraction": "0.800000011920929"},
        {"fraction": ["0.800000011920929"], "max_tokens": ["860308"], "kv_size": ["52.51"], "kv_tokens": ["860320"]}),
    "trtllm-1.1.0rc3-gpt-oss-120b-gb10-pytorch": (
        "trtllm", "1.1.0rc3", {"model": "openai/gpt-oss-120b", "free_gpu_memory_fraction": "0.8999999761581421"},
        {"fraction": ["0.8999999761581421", "0.8999999761581421", "0.8999999761581421"], "max_tokens": ["8224", "86711"], "kv_size": ["0.56", "5.95"], "kv_tokens": ["8224", "86720"], "peak": ["113.65"], "available": ["5.95"], "kv_bytes_per_token": ["73728"], "total": ["119.70"], "estimation_kv": ["0.56"], "kv_budget": ["5.95"]}),
    "trtllm-1.2.1-smollm2-135m-rtx4070super-pytorch": (
        "trtllm", "1.2.1", {"model": "HuggingFaceTB/SmolLM2-135M-Instruct", "max_model_len": "2049"},
        {"kv_budget": ["9.06"], "blocks_per_sequence": ["65"], "tokens_per_block": ["32"], "num_blocks": ["13189"], "max_model_len": ["2049"], "kv_size": ["9.06"], "kv_tokens": ["422048"]}),
    "vllm-v0101-gpt-oss-120b-h100-negative-kv": (
        "vllm", None, {"moe_backend": "marlin"},
        {"weights": ["65.9651"], "kv_budget": ["-2.14"]}),
    "vllm-v01011-gpt-oss-120b-tp4-ray-util08-a100-80gb": (
        "vllm", "0.10.1.1", {"model": "gpt-oss-120b", "tp": "4", "pp": "1", "max_model_len": "16384", "kv_dtype": "auto", "dtype": "bfloat16", "quantization": "mxfp4", "gpu_memory_utilization": "0.8", "enforce_eager": "False"},
        {"weights": ["17.2217", "17.2217", "17.2217", "17.2217"], "kv_budget": ["45.32", "45.32"], "kv_tokens": ["2,640,144", "2,640,144", "2,640,144", "2,640,144"], "max_model_len": ["16,384", "16,384", "16,384", "16,384"], "max_concurrency": ["284.25", "284.25", "284.25", "284.25"], "cuda_graph": ["1.88"], "num_blocks": ["330018"]}),
    "vllm-v01011-qwen2-7b-tp2-ray2node-util05-a100-40gb": (
        "vllm", "0.10.1.1", {"model": "Qwen2-7B-Instruct", "tp": "2", "pp": "1", "max_model_len": "16384", "kv_dtype": "auto", "dtype": "bfloat16", "gpu_memory_utilization": "0.5", "enforce_eager": "False"},
        {"weights": ["7.1217", "7.1217"], "kv_budget": ["11.03", "11.03"], "kv_tokens": ["412,944", "412,944"], "max_model_len": ["16,384", "16,384"], "max_concurrency": ["25.20", "25.20"], "cuda_graph": ["1.00"], "num_blocks": ["25809"]}),
    "vllm-v01011-qwen2-7b-tp2-util025-a100-80gb": (
        "vllm", "0.10.1.1", {"model": "Qwen2-7B-Instruct", "tp": "2", "pp": "1", "max_model_len": "16384", "kv_dtype": "auto", "dtype": "bfloat16", "gpu_memory_utilization": "0.25", "enforce_eager": "False"},
        {"weights": ["7.1217", "7.1217"], "kv_budget": ["12.02", "12.02"], "kv_tokens": ["450,192", "450,192"], "max_model_len": ["16,384", "16,384"], "max_concurrency": ["27.48", "27.48"], "cuda_graph": ["0.65", "0.65"], "num_blocks": ["28137"]}),
    "vllm-v01011-qwen2-7b-tp2-util05-a100-80gb": (
        "vllm", "0.10.1.1", {"model": "Qwen2-7B-Instruct", "tp": "2", "pp": "1", "max_model_len": "16384", "kv_dtype": "auto", "dtype": "bfloat16", "gpu_memory_utilization": "0.5", "enforce_eager": "False"},
        {"weights": ["7.1217", "7.1217"], "kv_budget": ["31.83", "31.83"], "kv_tokens": ["1,192,160", "1,192,160"], "max_model_len": ["16,384", "16,384"], "max_concurrency": ["72.76", "72.76"], "cuda_graph": ["0.65", "0.65"], "num_blocks": ["74510"]}),
    "vllm-v01011-qwen2-7b-util025-a100-80gb": (
        "vllm", "0.10.1.1", {"model": "Qwen2-7B-Instruct", "tp": "1", "pp": "1", "max_model_len": "16384", "kv_dtype": "auto", "dtype": "bfloat16", "gpu_memory_utilization": "0.25", "enforce_eager": "False"},
        {"weights": ["14.2488"], "kv_budget": ["5.01"], "kv_tokens": ["93,872"], "max_model_len": ["16,384"], "max_concurrency": ["5.73"], "cuda_graph": ["0.50"], "num_blocks": ["5867"]}),
    "vllm-v01011-qwen2-7b-util05-a100-80gb": (
        "vllm", "0.10.1.1", {"model": "Qwen2-7B-Instruct", "tp": "1", "pp": "1", "max_model_len": "16384", "kv_dtype": "auto", "dtype": "bfloat16", "gpu_memory_utilization": "0.5", "enforce_eager": "False"},
        {"weights": ["14.2488"], "kv_budget": ["24.83"], "kv_tokens": ["464,848"], "max_model_len": ["16,384"], "max_concurrency": ["28.37"], "cuda_graph": ["0.50"], "num_blocks": ["29053"]}),
    "vllm-v0102-qwen3-8b-fp8-lora-l4": (
        "vllm", "0.10.2", {"model": "unsloth/Qwen3-8B-FP8", "tp": "1", "pp": "1", "max_model_len": "2048", "kv_dtype": "auto", "dtype": "bfloat16", "quantization": "fp8", "gpu_memory_utilization": "0.8661508568217998", "enforce_eager": "False", "max_lora_rank": "32"},
        {"weights": ["8.9638"], "kv_budget": ["8.98", "9642210816"], "kv_tokens": ["65,376"], "max_model_len": ["2,048"], "max_concurrency": ["31.92"], "cuda_graph": ["1.12"], "free": ["21.91"], "total": ["22.16"], "utilization": ["0.8661508568217998"], "requested": ["19.19"], "used_weights": ["8.96"], "used_activation": ["1.23"], "used_non_torch": ["0.02"], "used_cuda_graph": ["1.12"]}),
    "vllm-v0102-qwen3-next-80b-a3b-tp2-h200": (
        "vllm", "0.10.2", {"model": "/data/models/Qwen3-Next-80B-A3B-Instruct", "tp": "2", "pp": "1", "max_model_len": "262144", "kv_dtype": "auto", "dtype": "bfloat16", "gpu_memory_utilization": "0.9", "enforce_eager": "False"},
        {"weights": ["74.2812", "74.2812"], "kv_budget": ["44.59", "44.59", "47878721024", "47878721024"], "kv_tokens": ["973,760", "973,760"], "max_model_len": ["262,144", "262,144"], "max_concurrency": ["14.77", "14.77"], "cuda_graph": ["2.37", "2.37"], "free": ["139.21", "139.21"], "total": ["139.81", "139.81"], "utilization": ["0.9", "0.9"], "requested": ["125.83", "125.83"], "used_weights": ["74.28", "74.28"], "used_activation": ["5.58", "5.58"], "used_non_torch": ["1.38", "1.38"], "used_cuda_graph": ["2.37", "2.37"], "num_blocks": ["7162"]}),
    "vllm-v0112-llama32-1b-fp8block-lora-l4": (
        "vllm", "0.11.2", {"model": "unsloth/Llama-3.2-1B-Instruct-FP8-Block", "tp": "1", "pp": "1", "max_model_len": "2048", "kv_dtype": "auto", "dtype": "bfloat16", "quantization": "compressed-tensors", "gpu_memory_utilization": "0.8661508568217998", "enforce_eager": "False", "max_lora_rank": "32"},
        {"weights": ["1.4721"], "kv_budget": ["17.20"], "kv_tokens": ["563,744"], "max_model_len": ["2,048"], "max_concurrency": ["275.27"], "cuda_graph": ["1.15"]}),
    "vllm-v0130-gemma3-1b-it-swa-util095": (
        "vllm", "0.13.0", {"model": "google/gemma-3-1b-it", "tp": "1", "pp": "1", "max_model_len": "2048", "kv_dtype": "auto", "dtype": "bfloat16", "gpu_memory_utilization": "0.95", "enforce_eager": "False"},
        {"weights": ["1.9148"], "kv_budget": ["25.39"], "padding_layers": ["2"], "padding_percent": ["9.09"], "kv_tokens": ["950,864"], "max_model_len": ["2,048"], "max_concurrency": ["461.21"], "cuda_graph": ["-0.22"]}),
    "vllm-v0130nv-nemotron3-nano-4b-fp8-fp8kv-gb10": (
        "vllm", "0.13.0+faa43dbf.nv26.01", {"model": "nvidia/NVIDIA-Nemotron-3-Nano-4B-FP8", "tp": "1", "pp": "1", "max_model_len": "8192", "kv_dtype": "fp8", "dtype": "bfloat16", "quantization": "modelopt", "gpu_memory_utilization": "0.15", "enforce_eager": "False"},
        {"weights": ["4.9054"], "kv_budget": ["11.15"], "padding_layers": ["3"], "padding_percent": ["14.29"], "kv_tokens": ["208,320"], "max_model_len": ["8,192"], "max_concurrency": ["98.20"], "cuda_graph": ["1.00"]}),
    "vllm-v0151-llama31-8b-131k-eager-a100-40gb": (
        "vllm", "0.15.1", {"model": "/home/admin_iloh_altostrat_com/models/Meta-Llama-3.1-8B-Instruct", "tp": "1", "pp": "1", "max_model_len": "131072", "kv_dtype": "auto", "dtype": "bfloat16", "enforce_eager": "True"},
        {"weights": ["14.99"], "kv_budget": ["19.28"], "kv_tokens": ["157,936"], "max_model_len": ["131,072"], "max_concurrency": ["1.20"]}),
    "vllm-v0151-qwen25-14b-awq-16k-refusal": (
        "vllm", "0.15.1", {"model": "/opt/models/qwen2_5_14b_instruct_awq", "tp": "1", "pp": "1", "max_model_len": "16384", "kv_dtype": "auto", "dtype": "float16", "quantization": "awq", "enforce_eager": "False"},
        {"weights": ["9.38"], "kv_budget": ["1.87"], "max_model_len": ["16384"], "kv_needed": ["3.0"], "kv_available": ["1.87"], "estimated_max_model_len": ["10224"]}),
    "vllm-v0160-llama3-70b-awq-tp2-l40s": (
        "vllm", "0.16.0", {"model": "/mnt/shockwave/soundwave/models/llama3-70b-awq", "tp": "2", "pp": "1", "max_model_len": "8192", "kv_dtype": "auto", "dtype": "float16", "quantization": "awq_marlin", "enforce_eager": "False"},
        {"weights": ["18.55"], "kv_budget": ["20.16"], "kv_tokens": ["132,128"], "max_model_len": ["8,192"], "max_concurrency": ["16.13"], "cuda_graph": ["1.22"]}),
    "vllm-v0170-voxtral-mini-4b-realtime-l4": (
        "vllm", "0.17.0", {"model": "/models/audio/mistralai/Voxtral-Mini-4B-Realtime-2602", "tp": "1", "pp": "1", "max_model_len": "8192", "kv_dtype": "auto", "dtype": "bfloat16", "gpu_memory_utilization": "0.85", "enforce_eager": "True"},
        {"weights": ["8.38"], "kv_budget": ["9.58"], "padding_layers": ["6"], "padding_percent": ["23.08"], "kv_tokens": ["4,896"], "max_model_len": ["8,192"], "max_concurrency": ["2.54"]}),
    "vllm-v0180-qwen25-7b-fp16-eager-volta": (
        "vllm", "0.18.0", {"model": "/data/Qwen/Qwen2.5-7B-Instruct", "tp": "1", "pp": "1", "max_model_len": "32768", "kv_dtype": "auto", "dtype": "float16", "enforce_eager": "True"},
        {"weights": ["14.25"], "kv_budget": ["13.1"], "kv_tokens": ["245,360"], "max_model_len": ["32,768"], "max_concurrency": ["7.49"]}),
    "vllm-v0190-qwen35-9b-l40s": (
        "vllm", "0.19.0", {"model": "Qwen/Qwen3.5-9B", "tp": "1", "pp": "1", "max_model_len": "262144", "kv_dtype": "auto", "dtype": "bfloat16", "graph_estimate": "off", "enforce_eager": "False"},
        {"weights": ["17.66"], "cuda_graph": ["0.78", "0.65"], "kv_budget": ["20.27"], "kv_tokens": ["165,792"], "max_model_len": ["262,144"], "max_concurrency": ["2.52"]}),
    "vllm-v0191-nemotron-cascade2-30b-a3b-nvfp4-marlin-h100": (
        "vllm", "0.19.1", {"model": "/scratch-shared/dlindberg/hf_cache/hub/models--chankhavu--Nemotron-Cascade-2-30B-A3B-NVFP4/snapshots/80ee3ccfe8cb5eb019a0cde78449e8b197a0155f", "tp": "1", "pp": "1", "max_model_len": "262144", "kv_dtype": "fp8", "dtype": "bfloat16", "quantization": "modelopt_fp4", "moe_backend": "marlin", "graph_estimate": "off", "enforce_eager": "False"},
        {"weights": ["18.03"], "padding_layers": ["1", "1"], "padding_percent": ["4.35", "4.35"], "cuda_graph": ["0.19", "0.17"], "kv_budget": ["68.97"], "kv_tokens": ["4,819,104"], "max_model_len": ["262,144"], "max_concurrency": ["86.16"]}),
    "vllm-v0191-qwen3-8b-a100-40gb": (
        "vllm", None, {"model": "Qwen/Qwen3-8B", "max_model_len": "40960", "graph_estimate": "off"},
        {"weights": ["15.27"], "cuda_graph": ["2.35", "2.44"], "kv_budget": ["19.36"], "kv_tokens": ["140,960"], "max_model_len": ["40,960"], "max_concurrency": ["3.44"]}),
    "vllm-v0191dev-glm51-fp8-tp8-h200": (
        "vllm", None, {"enforce_eager": "True"},
        {"weights": ["89.34"], "kv_budget": ["32.11"], "kv_tokens": ["344,192"], "max_model_len": ["202,752"], "max_concurrency": ["1.70"]}),
    "vllm-v0200-qwen36-27b-nvfp4-mtp1-fp8kv-wsl": (
        "vllm", "0.20.0", {"model": "sakamakismile/Qwen3.6-27B-Text-NVFP4-MTP", "max_model_len": "65536", "kv_dtype": "fp8", "quantization": "compressed-tensors", "gpu_memory_utilization": "0.82", "max_num_batched_tokens": "16384", "max_num_seqs": "2", "prefix_caching": "True", "enforce_eager": "True"},
        {"weights": ["18.41"], "kv_budget": ["4.8"], "padding_layers": ["3"], "kv_tokens": ["36,432"], "max_model_len": ["65,536"], "max_concurrency": ["1.82"]}),
    "vllm-v0200-qwen36-35b-a3b-nvfp4-fp8kv-wsl-32gb": (
        "vllm", "0.20.0", {"model": "RedHatAI/Qwen3.6-35B-A3B-NVFP4", "tp": "1", "pp": "1", "max_model_len": "65536", "kv_dtype": "fp8_e4m3", "dtype": "bfloat16", "quantization": "compressed-tensors", "gpu_memory_utilization": "0.9", "graph_estimate": "on", "enforce_eager": "False"},
        {"weights": ["21.86"], "cuda_graph": ["0.39"], "kv_budget": ["3.07"], "kv_tokens": ["79,648"], "max_model_len": ["65,536"], "max_concurrency": ["4.03"]}),
    "vllm-v0210-qwen25-omni-7b-int4-24gb": (
        "vllm", "0.21.0", {"model": "/root/.openclaw/workspace/quantized/models/Intel_Qwen2.5-Omni-7B-int4-AutoRound", "tp": "1", "pp": "1", "max_model_len": "8192", "kv_dtype": "auto", "dtype": "bfloat16", "quantization": "inc", "gpu_memory_utilization": "0.9000", "graph_estimate": "on", "enforce_eager": "False"},
        {"weights": ["7.75"], "cuda_graph": ["0.62", "0.46"], "kv_budget": ["11.6"], "kv_tokens": ["217,248"], "max_model_len": ["8,192"], "max_concurrency": ["26.52"]}),
    "vllm-v0220-qwen25-7b-48gb": (
        "vllm", "0.22.0", {"model": "/model/Qwen2.5-7B-Instruct", "tp": "1", "pp": "1", "max_model_len": "4096", "kv_dtype": "auto", "dtype": "bfloat16", "gpu_memory_utilization": "0.9500", "graph_estimate": "on", "enforce_eager": "False"},
        {"weights": ["14.29"], "cuda_graph": ["0.37", "0.31"], "kv_budget": ["26.32"], "kv_tokens": ["492,912"], "max_model_len": ["4,096"], "max_concurrency": ["120.34"]}),
    "vllm-v0220-qwen35-4b-48gb-util05": (
        "vllm", "0.22.0", {"model": "/data/Qwen3.5-4B", "tp": "1", "pp": "1", "max_model_len": "1024", "kv_dtype": "auto", "dtype": "bfloat16", "gpu_memory_utilization": "0.5000", "graph_estimate": "on", "enforce_eager": "False"},
        {"weights": ["8.61"], "cuda_graph": ["0.40", "0.35"], "kv_budget": ["12.85"], "kv_tokens": ["163,225"], "max_model_len": ["1,024"], "max_concurrency": ["159.40"]}),
    "vllm-v0230-gemma4-31b-it-kaggle-95gb": (
        "vllm", "0.23.0", {"model": "/kaggle/input/models/google/gemma-4/transformers/gemma-4-31b-it/1", "tp": "1", "pp": "1", "max_model_len": "32768", "kv_dtype": "auto", "dtype": "bfloat16", "gpu_memory_utilization": "0.94", "graph_estimate": "on", "enforce_eager": "False"},
        {"weights": ["58.99"], "cuda_graph": ["0.13", "0.10"], "kv_budget": ["28.41"], "kv_tokens": ["97,541"], "max_model_len": ["32,768"], "max_concurrency": ["2.98"]}),
    "vllm-v0260-qwen25-0.5b-fp16-16gb-v2runner": (
        "vllm", "0.26.0", {"model": "Qwen/Qwen2.5-0.5B", "tp": "1", "pp": "1", "max_model_len": "32768", "kv_dtype": "auto", "dtype": "float16", "gpu_memory_utilization": "0.9", "enforce_eager": "False"},
        {"weights": ["0.93"], "kv_budget": ["11.94"], "kv_tokens": ["1,043,072"], "max_model_len": ["32,768"], "max_concurrency": ["31.83"], "cuda_graph": ["0.40"], "free": ["15.32"], "total": ["15.55"], "utilization": ["0.9"], "requested": ["13.99"], "used_weights": ["0.93"], "used_activation": ["1.06"], "used_non_torch": ["0.07"], "used_cuda_graph": ["0.4"]}),
    "vllm-v0271-qwen25-0.5b-rtx4090-wsl": (
        "vllm", None, {"gpu_memory_utilization": "0.92"},
        {"weights": ["0.93", "0.93"], "kv_budget": ["20.52", "20.52"], "kv_tokens": ["1,793,232", "1,793,232"], "cuda_graph": ["0.00"], "free": ["22.45", "22.45"], "total": ["23.99", "23.99"], "utilization": ["0.92", "0.92"], "requested": ["22.07", "22.07"], "used_consumed": ["1.23", "1.23"], "used_activation": ["0.31", "0.31"], "used_cuda_graph": ["0.0", "0.0"]}),
    "vllm-v0271-qwen3-32b-pp2-rtxpro6000": (
        "vllm", "0.27.1", {"pp": "2", "max_model_len": "32768", "gpu_memory_utilization": "0.426"},
        {"weights": ["30.52", "30.52"], "kv_budget": ["6.92"], "kv_tokens": ["56,640"], "max_model_len": ["32,768"], "max_concurrency": ["1.73"]}),
    "vllm-v0271-qwen3-32b-tp1-refusal-rtxpro6000": (
        "vllm", None, {"tp": "1", "max_model_len": "32768", "gpu_memory_utilization": "0.426"},
        {"weights": ["61.03"], "kv_budget": ["-24.42"]}),
    "vllm-v0271-qwen3-32b-tp2-rtxpro6000": (
        "vllm", "0.27.1", {"tp": "2", "max_model_len": "32768", "gpu_memory_utilization": "0.426"},
        {"weights": ["30.59", "30.59"], "kv_budget": ["8.22"], "kv_tokens": ["67,296"], "max_model_len": ["32,768"], "max_concurrency": ["2.05"]}),
    "vllm-v0280-qwen25-7b-awq-runpod": (
        "vllm", None, {"model": "Qwen/Qwen2.5-7B-Instruct-AWQ", "max_model_len": "8192", "quantization": "awq", "gpu_memory_utilization": "0.9"},
        {"kv_budget": ["13.42"], "kv_tokens": ["251,344"], "max_model_len": ["8,192"], "max_concurrency": ["30.68"], "num_blocks": ["15709"]}),
    "vllm-v0641-qwen25-32b-awq-4k-a6000": (
        "vllm", None, {"gpu_memory_utilization": "0.90"},
        {"total": ["47.54"], "used_peak": ["19.60"], "used_non_torch": ["0.44"], "kv_budget": ["22.74"], "utilization": ["0.90"]}),
    "vllm-v0641-qwen25-72b-gptq-int4-8k-refusal-a40": (
        "vllm", None, {"gpu_memory_utilization": "0.95"},
        {"weights": ["38.5260"], "total": ["47.74"], "used_peak": ["40.87"], "used_non_torch": ["4.09"], "kv_budget": ["0.39"], "utilization": ["0.95"], "num_blocks": ["80"], "num_cpu_blocks": ["819"], "max_model_len": ["8192", "8192"], "max_concurrency": ["0.16"], "kv_tokens": ["1280"]}),
    "vllm-v065-phi4-gptq4-util015-80gb": (
        "vllm", None, {"model": "kaitchup/Phi-4-AutoRound-GPTQ-4bit", "gpu_memory_utilization": "0.15"},
        {"weights": ["8.5107"], "total": ["79.25"], "utilization": ["0.15"], "requested": ["11.89"], "used_weights": ["8.51"], "used_non_torch": ["0.26"], "used_activation": ["0.94"], "kv_budget": ["2.18"], "num_blocks": ["715"], "num_cpu_blocks": ["1310"], "max_model_len": ["2048"], "max_concurrency": ["5.59"], "cuda_graph": ["0.27"]}),
    "vllm-v066-llama3-8b-a100-40gb": (
        "vllm", None, {"gpu_memory_utilization": "0.90"},
        {"weights": ["14.9595"], "total": ["39.50"], "utilization": ["0.90"], "requested": ["35.55"], "used_weights": ["14.96"], "used_non_torch": ["0.10"], "used_activation": ["9.37"], "kv_budget": ["11.12"], "num_blocks": ["5691"], "num_cpu_blocks": ["2048"], "max_model_len": ["8192"], "max_concurrency": ["11.12"]}),
    "vllm-v071-deepseek-coder-v2-lite-tp8-a100-40gb-sagemaker": (
        "vllm", None, {"gpu_memory_utilization": "0.90"},
        {"total": ["39.39"], "utilization": ["0.90"], "requested": ["35.45"], "used_weights": ["3.97"], "used_non_torch": ["2.10"], "used_activation": ["0.36"], "kv_budget": ["29.02"], "cuda_graph": ["0.47"]}),
    "vllm-v071-llama31-8b-131k-refusal-a10": (
        "vllm", None, {"gpu_memory_utilization": "0.90"},
        {"weights": ["14.9888"], "total": ["22.07"], "utilization": ["0.90"], "requested": ["19.86"], "used_weights": ["14.99"], "used_non_torch": ["0.05"], "used_activation": ["0.22"], "kv_budget": ["4.60"], "num_blocks": ["2356"], "num_cpu_blocks": ["2048"], "max_model_len": ["131072", "131072"], "max_concurrency": ["0.29"], "kv_tokens": ["37696"]}),
    "vllm-v071-phi4-bnb4-t4": (
        "vllm", "0.7.1", {"model": "unsloth/phi-4-bnb-4bit", "tp": "1", "pp": "1", "max_model_len": "512", "kv_dtype": "auto", "dtype": "float16", "quantization": "bitsandbytes", "gpu_memory_utilization": "0.6952", "enforce_eager": "False"},
        {"weights": ["8.4920"], "total": ["14.74"], "utilization": ["0.70"], "requested": ["10.25"], "used_weights": ["8.49"], "used_non_torch": ["0.05"], "used_activation": ["0.47"], "kv_budget": ["1.24"], "num_blocks": ["406"], "num_cpu_blocks": ["655"], "max_model_len": ["512"], "max_concurrency": ["12.69"], "cuda_graph": ["0.64"]}),
    "vllm-v071-qwen25-3b-bnb4-t4": (
        "vllm", "0.7.1", {"model": "unsloth/qwen2.5-3b-instruct-unsloth-bnb-4bit", "tp": "1", "pp": "1", "max_model_len": "1024", "kv_dtype": "auto", "dtype": "float16", "quantization": "bitsandbytes", "gpu_memory_utilization": "0.4966", "enforce_eager": "False"},
        {"weights": ["2.2160"], "total": ["14.74"], "utilization": ["0.50"], "requested": ["7.32"], "used_weights": ["2.22"], "used_non_torch": ["0.05"], "used_activation": ["1.05"], "kv_budget": ["4.01"], "num_blocks": ["7300"], "num_cpu_blocks": ["3640"], "max_model_len": ["1024"], "max_concurrency": ["114.06"], "cuda_graph": ["0.62"]}),
    "vllm-v072-qwen25-1.5b-util05-t4-kaggle": (
        "vllm", None, {"model": "Qwen/Qwen2.5-1.5B-Instruct", "gpu_memory_utilization": "0.50"},
        {"weights": ["2.8884"], "total": ["14.56"], "utilization": ["0.50"], "requested": ["7.28"], "used_weights": ["2.89"], "used_non_torch": ["0.01"], "used_activation": ["2.02"], "kv_budget": ["2.36"], "num_blocks": ["5517"], "num_cpu_blocks": ["9362"], "max_model_len": ["32768"], "max_concurrency": ["2.69"], "cuda_graph": ["0.17"]}),
    "vllm-v072-qwen25-math-1.5b-22gb": (
        "vllm", "0.7.2", {"model": "../models/Qwen2.5-Math-1.5B", "tp": "1", "pp": "1", "max_model_len": "4096", "kv_dtype": "auto", "dtype": "bfloat16", "gpu_memory_utilization": "0.90", "enforce_eager": "False"},
        {"weights": ["2.8797"], "total": ["22.06"], "utilization": ["0.90"], "requested": ["19.85"], "used_weights": ["2.88"], "used_non_torch": ["0.05"], "used_activation": ["1.40"], "kv_budget": ["15.52"], "num_blocks": ["36332"], "num_cpu_blocks": ["9362"], "max_model_len": ["4096"], "max_concurrency": ["141.92"], "cuda_graph": ["0.18"]}),
    "vllm-v073-llama31-8b-bnb4-t4": (
        "vllm", "0.7.3", {"model": "unsloth/meta-llama-3.1-8b-instruct-unsloth-bnb-4bit", "tp": "1", "pp": "1", "max_model_len": "1024", "kv_dtype": "auto", "dtype": "float16", "quantization": "bitsandbytes", "gpu_memory_utilization": "0.5943", "enforce_eager": "False"},
        {"weights": ["5.5976"], "total": ["14.74"], "utilization": ["0.59"], "requested": ["8.76"], "used_weights": ["5.60"], "used_non_torch": ["0.03"], "used_activation": ["0.74"], "kv_budget": ["2.39"], "num_blocks": ["1224"], "num_cpu_blocks": ["1024"], "max_model_len": ["1024"], "max_concurrency": ["19.12"], "cuda_graph": ["0.59"]}),
    "vllm-v081-llama32-3b-lora-a100-40gb": (
        "vllm", "0.8.1", {"model": "unsloth/Llama-3.2-3B-Instruct", "tp": "1", "pp": "1", "max_model_len": "2048", "kv_dtype": "auto", "dtype": "bfloat16", "gpu_memory_utilization": "0.7908", "enforce_eager": "False"},
        {"weights": ["6.2472"], "total": ["39.56"], "utilization": ["0.79"], "requested": ["31.28"], "used_weights": ["6.25"], "used_non_torch": ["0.09"], "used_activation": ["1.49"], "kv_budget": ["23.46"], "num_blocks": ["13724"], "num_cpu_blocks": ["3510"], "max_model_len": ["2048"], "max_concurrency": ["107.22"], "cuda_graph": ["0.38"]}),
    "vllm-v082-llama32-3b-gguf-q8-eager-rtx4070-laptop": (
        "vllm", None, {"model": "~/rag-langchain/Llama-3.2-3B-Instruct-Q8_0.gguf", "max_model_len": "10000", "quantization": "gguf", "gpu_memory_utilization": "0.90", "enforce_eager": "True"},
        {"weights": ["3.2637"], "total": ["7.65"], "utilization": ["0.90"], "requested": ["6.89"], "used_weights": ["3.26"], "used_non_torch": ["0.02"], "used_activation": ["1.22"], "kv_budget": ["2.38"], "num_blocks": ["1395"], "num_cpu_blocks": ["2340"], "max_model_len": ["10000"], "max_concurrency": ["2.23"]}),
    "vllm-v082-llama32-3b-serve-t4": (
        "vllm", "0.8.2", {"model": "unsloth/Llama-3.2-3B-Instruct", "tp": "1", "pp": "1", "max_model_len": "2048", "kv_dtype": "auto", "dtype": "float16", "gpu_memory_utilization": "0.8939", "swap_space": "2.0", "enforce_eager": "False", "max_lora_rank": "16"},
        {"weights": ["6.0160"], "total": ["14.74"], "utilization": ["0.89"], "requested": ["13.18"], "used_weights": ["6.02"], "used_non_torch": ["0.05"], "used_activation": ["0.90"], "kv_budget": ["6.22"], "num_blocks": ["3637"], "num_cpu_blocks": ["1170"], "max_model_len": ["2048"], "max_concurrency": ["28.41"], "cuda_graph": ["0.17"]}),
    "vllm-v082-phi4-bnb4-lora-a100-80gb": (
        "vllm", "0.8.2", {"model": "/opt/tiger/test0/Phi-4", "tp": "1", "pp": "1", "max_model_len": "512", "kv_dtype": "auto", "dtype": "bfloat16", "quantization": "bitsandbytes", "gpu_memory_utilization": "0.696", "enforce_eager": "False"},
        {"weights": ["8.6253"], "total": ["79.15"], "utilization": ["0.70"], "requested": ["55.09"], "used_weights": ["8.63"], "used_non_torch": ["0.09"], "used_activation": ["1.16"], "kv_budget": ["45.21"], "num_blocks": ["14815"], "num_cpu_blocks": ["1966"], "max_model_len": ["512"], "max_concurrency": ["462.97"], "cuda_graph": ["1.12"]}),
    "vllm-v084-qwen3-4b-10k-rtx2060-12gb": (
        "vllm", None, {"gpu_memory_utilization": "0.95"},
        {"weights": ["7.5552"], "total": ["12.00"], "utilization": ["0.95"], "requested": ["11.40"], "used_weights": ["7.56"], "used_non_torch": ["0.04"], "used_activation": ["0.74"], "kv_budget": ["3.06"], "num_blocks": ["1394"], "num_cpu_blocks": ["1820"], "max_model_len": ["10000"], "max_concurrency": ["2.23"]}),
    "vllm-v085-qwen3-30b-a3b-tp4-a10": (
        "vllm", None, {},
        {"weights": ["14.2474"], "kv_tokens": ["198,784"], "max_model_len": ["8,192"], "max_concurrency": ["24.27"]}),
    "vllm-v0851-deepseek-r1-0528-qwen3-8b-bnb4-t4": (
        "vllm", "0.8.5.post1", {"model": "Erland/DeepSeek-R1-0528-Qwen3-8B", "tp": "1", "pp": "1", "max_model_len": "256", "kv_dtype": "auto", "dtype": "float16", "quantization": "bitsandbytes", "gpu_memory_utilization": "0.6934", "enforce_eager": "False"},
        {"weights": ["5.9071"], "total": ["14.74"], "utilization": ["0.69"], "requested": ["10.22"], "used_weights": ["5.91"], "used_non_torch": ["0.03"], "used_activation": ["0.70"], "kv_budget": ["3.59"], "num_blocks": ["1632"], "num_cpu_blocks": ["0"], "max_model_len": ["256"], "max_concurrency": ["102.00"], "cuda_graph": ["0.72"]}),
    "vllm-v0851-llama32-3b-lora-t4": (
        "vllm", "0.8.5.post1", {"model": "unsloth/Llama-3.2-3B-Instruct", "tp": "1", "pp": "1", "max_model_len": "2048", "kv_dtype": "auto", "dtype": "float16", "gpu_memory_utilization": "0.5943", "enforce_eager": "False"},
        {"weights": ["6.2473"], "total": ["14.74"], "utilization": ["0.59"], "requested": ["8.76"], "used_weights": ["6.25"], "used_non_torch": ["0.03"], "used_activation": ["0.75"], "kv_budget": ["1.74"], "num_blocks": ["1017"], "num_cpu_blocks": ["0"], "max_model_len": ["2048"], "max_concurrency": ["7.95"], "cuda_graph": ["0.21"]}),
    "vllm-v0851-mistral-7b-v03-bnb4-rtx4090": (
        "vllm", "0.8.5.post1", {"model": "unsloth/mistral-7b-instruct-v0.3-bnb-4bit", "tp": "1", "pp": "1", "max_model_len": "1024", "kv_dtype": "auto", "dtype": "bfloat16", "quantization": "bitsandbytes", "gpu_memory_utilization": "0.5893", "enforce_eager": "False"},
        {"weights": ["4.0423"], "total": ["23.63"], "utilization": ["0.59"], "requested": ["13.93"], "used_weights": ["4.04"], "used_non_torch": ["0.08"], "used_activation": ["0.28"], "kv_budget": ["9.53"], "num_blocks": ["4880"], "num_cpu_blocks": ["3072"], "max_model_len": ["1024"], "max_concurrency": ["76.25"], "cuda_graph": ["0.70"]}),
    "vllm-v0851-qwen3-4b-base-lora-t4": (
        "vllm", "0.8.5.post1", {"model": "unsloth/Qwen3-4B-Base", "tp": "1", "pp": "1", "max_model_len": "2048", "kv_dtype": "auto", "dtype": "float16", "gpu_memory_utilization": "0.6934", "enforce_eager": "False"},
        {"weights": ["7.6334"], "total": ["14.74"], "utilization": ["0.69"], "requested": ["10.22"], "used_weights": ["7.63"], "used_non_torch": ["0.03"], "used_activation": ["0.88"], "kv_budget": ["1.68"], "num_blocks": ["764"], "num_cpu_blocks": ["0"], "max_model_len": ["2048"], "max_concurrency": ["5.97"], "cuda_graph": ["0.34"]}),
    "vllm-v092-qwen25-vl-7b-bnb4-t4": (
        "vllm", "0.9.2", {"model": "unsloth/qwen2.5-vl-7b-instruct-unsloth-bnb-4bit", "tp": "1", "pp": "1", "max_model_len": "16384", "kv_dtype": "auto", "dtype": "float16", "quantization": "bitsandbytes", "gpu_memory_utilization": "0.7693", "enforce_eager": "False"},
        {"weights": ["6.7940"], "total": ["14.74"], "utilization": ["0.77"], "requested": ["11.34"], "used_weights": ["6.79"], "used_non_torch": ["0.03"], "used_activation": ["2.71"], "kv_budget": ["1.81"], "num_blocks": ["2118"], "num_cpu_blocks": ["0"], "max_model_len": ["16384"], "max_concurrency": ["2.07"], "cuda_graph": ["0.04"]}),
    "vllm-v092dev-deepseek-v2-lite-tp2-pp2-eager-l4": (
        "vllm", None, {"model": "deepseek-ai/DeepSeek-V2-Lite", "tp": "2", "pp": "2", "max_model_len": "1024", "enforce_eager": "True"},
        {"kv_budget": ["11.33", "11.33", "12.13", "12.13"], "kv_tokens": ["807,792", "807,792"], "max_model_len": ["1,024", "1,024"], "max_concurrency": ["788.86", "788.86"]}),
    # issue 29's collection
    "vllm-v0250-deepseek-v4-flash-tp2-mtp2-fp8kv-rtxpro6000": (
        'vllm', '0.25.0', {'model': '/root/.cache/huggingface/hub/models--deepseek-ai--DeepSeek-V4-Flash/snapshots/60d8d70770c6776ff598c94bb586a859a38244f1', 'served_model_name': 'd4f', 'tp': '2', 'pp': '1', 'max_model_len': '1048576', 'dtype': 'bfloat16', 'kv_dtype': 'fp8', 'quantization': 'deepseek_v4_fp8', 'gpu_memory_utilization': '0.95', 'max_num_batched_tokens': '4096', 'max_num_seqs': '64', 'prefix_caching': 'True', 'enforce_eager': 'False', 'graph_estimate': 'on'},
        {'weights': ['75.64'], 'cuda_graph': ['1.58', '1.58', '1.73'], 'kv_budget': ['10.29'], 'kv_tokens': ['1,993,100'], 'max_model_len': ['1,048,576'], 'max_concurrency': ['1.90']}),
    "vllm-v0300-gpt-oss-20b-gb10-util055": (
        'vllm', None, {},
        {'weights': ['13.8'], 'kv_tokens': ['1,968,672'], 'max_model_len': ['32,768'], 'max_concurrency': ['60.08']}),
    "vllm-v0300-qwen3-30b-a3b-thinking-fp8-gb10-util055": (
        'vllm', None, {'gpu_memory_utilization': '0.5500', 'graph_estimate': 'on'},
        {'weights': ['29.1'], 'kv_tokens': ['394,016'], 'max_model_len': ['32,768'], 'max_concurrency': ['12.02']}),
    "vllm-v0300-qwen36-35b-a3b-fp8-gb10-util055": (
        'vllm', None, {'gpu_memory_utilization': '0.5500', 'graph_estimate': 'on'},
        {'weights': ['33.38'], 'kv_tokens': ['1,468,523'], 'max_model_len': ['32,768'], 'max_concurrency': ['44.82']}),
    "vllm-v0300-hermes4-14b-fp8-gb10-util055": (
        'vllm', None, {'gpu_memory_utilization': '0.5500', 'graph_estimate': 'on'},
        {'weights': ['15.34'], 'kv_tokens': ['319,328'], 'max_model_len': ['32,768'], 'max_concurrency': ['9.75']}),
    "vllm-v0310-qwen25-7b-instruct-awq-h200": (
        'vllm', '0.31.0', {'model': 'Qwen/Qwen2.5-7B-Instruct-AWQ'},
        {'weights': ['5.38'], 'kv_budget': ['34.79'], 'kv_tokens': ['651,504'], 'max_model_len': ['4,096'], 'max_concurrency': ['159.06']}),
    "vllm-v0110-gemma3-4b-it-rtx4080": (
        'vllm', None, {},
        {'weights': ['8.5834']}),
    "vllm-v0111rc2dev-gpt-oss-20b-tp2-ray2node-rocm": (
        'vllm', '0.11.1rc2.dev141+g38f225c2a', {'model': 'openai/gpt-oss-20b', 'served_model_name': 'openai/gpt-oss-20b', 'tp': '2', 'pp': '1', 'max_model_len': '131072', 'dtype': 'bfloat16', 'kv_dtype': 'auto', 'quantization': 'mxfp4', 'max_num_batched_tokens': '2048', 'prefix_caching': 'True', 'enforce_eager': 'True'},
        {'weights': ['7.2637']}),
    "vllm-v0231dev-qwen36-27b-nvfp4-fp8kv-gb10-util07": (
        'vllm', '0.23.1rc1.dev531+ga65f93fb2', {'model': 'nvidia/Qwen3.6-27B-NVFP4', 'served_model_name': 'qwen3.6-27b', 'tp': '1', 'pp': '1', 'max_model_len': '262144', 'dtype': 'bfloat16', 'kv_dtype': 'fp8', 'quantization': 'modelopt', 'gpu_memory_utilization': '0.7', 'max_num_batched_tokens': '65536', 'max_num_seqs': '8', 'prefix_caching': 'True', 'enforce_eager': 'False', 'moe_backend': 'marlin', 'graph_estimate': 'on'},
        {'weights': ['19.78'], 'cuda_graph': ['0.61', '0.62'], 'kv_budget': ['47.84'], 'kv_tokens': ['1,505,068'], 'max_model_len': ['262,144'], 'max_concurrency': ['5.74']}),
    "sglang-v058post1-glm5-fp8-fp8kv-tp8-mi355x": (
        'sglang', None, {'model': 'zai-org/GLM-5-FP8', 'tp': '8', 'pp': '1', 'dp': '1', 'dp_attention': 'False', 'mem_fraction_static': '0.908', 'page_size': '1', 'kv_dtype': 'fp8_e4m3', 'dtype': 'bfloat16', 'chunked_prefill_size': '16384'},
        {'avail_before': ['283.62', '283.48', '283.90', '283.61', '283.55', '283.50', '283.62', '283.48'], 'avail_after': ['194.04', '193.96', '194.03', '193.90', '194.32', '193.90', '193.92', '194.04'], 'weights': ['89.58', '89.58', '89.58', '89.58', '89.58', '89.58', '89.58', '89.58'], 'kv_tokens': ['3262823', '3262823', '3262823', '3262823', '3262823', '3262823', '3262823', '3262823'], 'kv_size': ['186.77', '186.77', '186.77', '186.77', '186.77', '186.77', '186.77', '186.77'], 'avail_after_pool': ['4.02', '4.00', '3.90', '3.88', '4.02', '4.30', '3.94', '3.88']}),
    "vllm-v0231dev-qwen36-27b-nvfp4-mtp2-fp8kv-gb10-util07": (
        'vllm', '0.23.1rc1.dev531+ga65f93fb2', {'model': 'nvidia/Qwen3.6-27B-NVFP4', 'served_model_name': 'qwen3.6-27b', 'max_model_len': '262144', 'kv_dtype': 'fp8', 'quantization': 'modelopt', 'gpu_memory_utilization': '0.7', 'max_num_batched_tokens': '65536', 'max_num_seqs': '8', 'prefix_caching': 'True'},
        {'weights': ['20.57'], 'padding_layers': ['3', '3'], 'padding_percent': ['6.25', '6.25'], 'kv_budget': ['48.6'], 'kv_tokens': ['1,394,129'], 'max_model_len': ['262,144'], 'max_concurrency': ['5.32'], 'cuda_graph': ['0.23']}),
    "vllm-v0230-qwen25-vl-7b-util022-a100-80gb-refusal": (
        'vllm', '0.23.0', {'model': '/models/Qwen2.5-VL-7B-Instruct', 'served_model_name': 'qwen2.5-vl', 'max_model_len': '128000', 'gpu_memory_utilization': '0.22', 'graph_estimate': 'on'},
        {'weights': ['15.67'], 'cuda_graph': ['0.53'], 'kv_budget': ['-14.28']}),
    "vllm-v0130nv-qwen3-30b-a3b-fp8-fp8kv-gb10-util03": (
        'vllm', '0.13.0+faa43dbf.nv26.01', {'model': 'Qwen/Qwen3-30B-A3B-FP8', 'max_model_len': '32768', 'kv_dtype': 'fp8', 'gpu_memory_utilization': '0.3', 'max_num_batched_tokens': '2048', 'prefix_caching': 'True', 'gpu_name': 'NVIDIA_GB10'},
        {'weights': ['29.0435'], 'kv_budget': ['4.04'], 'kv_tokens': ['88,176'], 'max_model_len': ['32,768'], 'max_concurrency': ['2.69'], 'cuda_graph': ['1.28']}),
    "vllm-v0251-gpt-oss-120b-h100-util095-excerpt": (
        'vllm', None, {'tp': '1', 'dtype': 'bfloat16', 'quantization': 'gpt_oss_mxfp4', 'moe_backend': 'TRITON'},
        {'weights': ['61.29'], 'kv_budget': ['10.52'], 'kv_tokens': ['303,646']}),
    "vllm-v0110rc2dev-gemma3-27b-it-rocm-limitmm2": (
        'vllm', '0.11.0rc2.dev98+g393de22d2', {'model': '/google/gemma-3-27b-it', 'max_model_len': '4096', 'max_num_batched_tokens': '8192'},
        {'weights': ['51.7891'], 'kv_budget': ['109.86'], 'padding_layers': ['8'], 'padding_percent': ['15.38'], 'kv_tokens': ['205,696'], 'max_model_len': ['4,096'], 'max_concurrency': ['50.05'], 'cuda_graph': ['1.02'], 'num_blocks': ['89994']}),
    "vllm-v0191dev-minimax-m25-fp8-tp4-h100-util095": (
        'vllm', '0.19.1rc1.dev71+gdd9342e6b', {'model': 'MiniMaxAI/MiniMax-M2.5', 'tp': '4', 'max_model_len': '128000', 'dtype': 'bfloat16', 'kv_dtype': 'auto', 'quantization': 'fp8', 'max_num_batched_tokens': '8192', 'prefix_caching': 'True', 'graph_estimate': 'off'},
        {'weights': ['53.75'], 'kv_budget': ['18.16'], 'kv_tokens': ['307,184'], 'max_model_len': ['128,000'], 'max_concurrency': ['2.40']}),
    "vllm-minimax-m25-fp8-tp4-rtxpro6000-excerpt": (
        'vllm', None, {'tp': '4'},
        {'kv_budget': ['23.62'], 'kv_tokens': ['399,424'], 'max_model_len': ['196,608'], 'max_concurrency': ['2.03']}),
    "vllm-v0120-llama4-scout-tp8-h200-2m": (
        'vllm', None, {'model': 'meta-llama/Llama-4-Scout-17B-16E-Instruct'},
        {'weights': ['27.8072']}),
    "vllm-v0181dev-qwen35-35b-a3b-fp8-gb10-util08": (
        'vllm', '0.18.1rc1.dev147+g290809456', {'model': 'Qwen/Qwen3.5-35B-A3B-FP8', 'max_model_len': '262144', 'gpu_memory_utilization': '0.8', 'prefix_caching': 'True', 'graph_estimate': 'off'},
        {'weights': ['34.22'], 'cuda_graph': ['1.65', '0.04'], 'kv_budget': ['55.72'], 'kv_tokens': ['729,696'], 'max_model_len': ['262,144'], 'max_concurrency': ['10.85']}),
    "vllm-v0211dev-deepseek-v4-flash-tp2-2node-gb10-mtp2-fp8kv": (
        'vllm', '0.21.1rc1.dev339+g1967a5627bc3', {'model': 'deepseek-ai/DeepSeek-V4-Flash', 'served_model_name': 'deepseek-v4-flash', 'tp': '2', 'speculative_method': 'mtp', 'num_speculative_tokens': '2', 'max_model_len': '200000', 'kv_dtype': 'fp8', 'block_size': '256', 'gpu_memory_utilization': '0.8', 'max_num_batched_tokens': '8192', 'max_num_seqs': '4', 'prefix_caching': 'True', 'graph_estimate': 'on'},
        {'weights': ['75.86'], 'cuda_graph': ['0.55', '0.34'], 'kv_budget': ['18.65'], 'kv_tokens': ['1,001,650'], 'max_model_len': ['200,000'], 'max_concurrency': ['5.01']}),
    "vllm-v0190-gpt-oss-20b-a100-80gb-util065-excerpt": (
        'vllm', '0.19.0', {'model': 'openai/gpt-oss-20b', 'max_model_len': '131072', 'gpu_memory_utilization': '0.65'},
        {'weights': ['13.72'], 'kv_budget': ['36.56']}),
    "vllm-gemma4-26b-a4b-a100-80gb-eager-excerpt": (
        'vllm', None, {'max_model_len': '131072', 'gpu_memory_utilization': '0.9', 'enforce_eager': 'True'},
        {'weights': ['48.5'], 'kv_budget': ['21.5']}),
    "vllm-v0221dev-qwen36-35b-a3b-nvfp4-mtp2-fp8kv-gb10-util085": (
        'vllm', '0.22.1rc1.dev26+g4721bb3aa', {'model': 'nvidia/Qwen3.6-35B-A3B-NVFP4', 'served_model_name': 'qwen3.6-35b', 'speculative_method': 'mtp', 'num_speculative_tokens': '2', 'max_model_len': '262144', 'kv_dtype': 'fp8', 'quantization': 'modelopt', 'gpu_memory_utilization': '0.85', 'max_num_batched_tokens': '8192', 'max_num_seqs': '5', 'prefix_caching': 'True', 'gpu_name': 'NVIDIA_GB10', 'moe_backend': 'marlin', 'graph_estimate': 'on'},
        {'weights': ['21.93'], 'padding_layers': ['3', '3'], 'padding_percent': ['10.00', '10.00'], 'cuda_graph': ['0.18'], 'kv_budget': ['73.13'], 'kv_tokens': ['6,312,658'], 'max_model_len': ['262,144'], 'max_concurrency': ['24.08']}),
    "vllm-v0192dev-gemma4-26b-a4b-nvfp4-fp8kv-wsl-32gb": (
        'vllm', '0.19.2rc1.dev8+g4b7f5ea1a', {'model': 'RedHatAI/gemma-4-26B-A4B-it-NVFP4', 'served_model_name': 'gemma-4-26b-it-nvfp4', 'max_model_len': '98304', 'kv_dtype': 'fp8_e4m3', 'quantization': 'compressed-tensors', 'gpu_memory_utilization': '0.8', 'prefix_caching': 'True', 'graph_estimate': 'off'},
        {'weights': ['15.77'], 'cuda_graph': ['0.83', '0.41'], 'kv_budget': ['8.29'], 'kv_tokens': ['72,400'], 'max_model_len': ['98,304'], 'max_concurrency': ['6.73']}),
    "vllm-v0202-gemma4-26b-a4b-nvfp4-fp8kv-256k-rtx5090-wsl": (
        'vllm', '0.20.2', {'model': 'nvidia/Gemma-4-26B-A4B-NVFP4', 'served_model_name': 'gemma-4-26b-it-nvfp4', 'max_model_len': '256000', 'kv_dtype': 'fp8_e4m3', 'quantization': 'compressed-tensors', 'gpu_memory_utilization': '0.85', 'max_num_batched_tokens': '16384', 'max_num_seqs': '2', 'prefix_caching': 'True', 'graph_estimate': 'on'},
        {'weights': ['17.89'], 'cuda_graph': ['0.26', '0.40'], 'kv_budget': ['4.58'], 'kv_tokens': ['286,007'], 'max_model_len': ['256,000'], 'max_concurrency': ['1.12']}),
    "vllm-v0180-qwen35-9b-fp8kv-l40s-modal": (
        'vllm', None, {'model': 'Qwen/Qwen3.5-9B', 'max_model_len': '65536', 'dtype': 'bfloat16', 'kv_dtype': 'fp8', 'max_num_batched_tokens': '8192', 'prefix_caching': 'True'},
        {'weights': ['17.66'], 'cuda_graph': ['1.58', '1.29'], 'kv_budget': ['20.27'], 'kv_tokens': ['331,584'], 'max_model_len': ['65,536'], 'max_concurrency': ['18.23']}),
    "vllm-v0200-qwen36-35b-a3b-redhat-nvfp4-fp8kv-120gb": (
        'vllm', '0.20.0', {'model': 'RedHatAI/Qwen3.6-35B-A3B-NVFP4', 'served_model_name': 'Qwen3.6-35B-A3B-NVFP4', 'max_model_len': '262144', 'kv_dtype': 'fp8_e4m3', 'quantization': 'compressed-tensors', 'gpu_memory_utilization': '0.85', 'max_num_batched_tokens': '65536', 'max_num_seqs': '8', 'prefix_caching': 'True', 'graph_estimate': 'on'},
        {'weights': ['21.86'], 'cuda_graph': ['0.47', '0.47'], 'kv_budget': ['66.93'], 'kv_tokens': ['1,754,352'], 'max_model_len': ['262,144'], 'max_concurrency': ['25.36']}),
    "vllm-v0200-qwen36-35b-a3b-redhat-nvfp4-fp8kv-8k-rtx5090-wsl": (
        'vllm', '0.20.0', {'model': 'RedHatAI/Qwen3.6-35B-A3B-NVFP4', 'served_model_name': 'Qwen3.6-35B-A3B-NVFP4', 'max_model_len': '8192', 'kv_dtype': 'fp8_e4m3', 'quantization': 'compressed-tensors', 'gpu_memory_utilization': '0.9', 'max_num_batched_tokens': '4096', 'max_num_seqs': '4', 'prefix_caching': 'True', 'graph_estimate': 'on'},
        {'weights': ['21.86'], 'cuda_graph': ['0.45', '0.67'], 'kv_budget': ['2.95'], 'kv_tokens': ['75,456'], 'max_model_len': ['8,192'], 'max_concurrency': ['14.70']}),
}
