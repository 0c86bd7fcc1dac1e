"""vLLM's launch command (``kvplan.engines.spelling``): ``vllm serve MODEL`` and the api_server module, read with
its FlexibleArgumentParser (0.33 ``utils/argparse_utils.py:313-500``).

- ``python[3] -m vllm.entrypoints.openai.api_server --model MODEL``: vLLM 0.10-0.33 parse a positional there and
  never use it (0.33 ``entrypoints/launchers/api_server/entry.py:204-226``: the default model is served), 0.8-0.9
  refuse it; kvplan asks for ``--model`` instead. Its parser lacks ``vllm serve``'s own options.
- ``--data-parallel-size D`` plans D engines of tp × pp GPUs; ``--enable-expert-parallel`` makes EP = D × TP
  (``parallel.py``); a given ``--kv-cache-memory-bytes`` replaces the budget (0.11 on).
- KV dtypes: vLLM's names of kvplan's (``config/cache.py`` CacheDType: bfloat16, float16, float32).
"""

from __future__ import annotations

from kvplan.engines.spelling import EntryPoint, Spelling

KV_DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}  # kvplan's name -> vLLM's, where they differ
TP, PP = ("cache", "tp", "same"), ("cache", "pp", "same")
READS = {  # parser dest -> (the question's part, field, conversion)
    "tensor_parallel_size": TP, "pipeline_parallel_size": PP, "decode_context_parallel_size": ("cache", "dcp", "same"),
    "max_model_len": ("cache", "max_model_len", "length"), "kv_cache_dtype": ("cache", "kv_dtype", "same"),
    "block_size": ("cache", "block_size", "same"), "mamba_cache_dtype": ("cache", "state_dtype", "dtype"),
    "mamba_ssm_cache_dtype": ("cache", "ssm_state_dtype", "dtype"),
    "gpu_memory_utilization": ("settings", "gpu_memory_utilization", "same"),
    "max_num_seqs": ("settings", "max_num_seqs", "same"),
    "max_num_batched_tokens": ("settings", "max_num_batched_tokens", "same"),
    "enforce_eager": ("settings", "enforce_eager", "bool"), "enable_prefix_caching": ("settings", "prefix_caching", "same"),
    "disable_hybrid_kv_cache_manager": ("settings", "hybrid_kv_cache_manager", "not"),
    "async_scheduling": ("settings", "async_scheduling", "same"),
    "cpu_offload_gb": ("settings", "cpu_offload_bytes", "gib"),
    "kv_offloading_size": ("settings", "kv_offloading_bytes", "gib"),
    "kv_transfer_config": ("settings", "role", "kv_role"),
    "max_lora_rank": ("lora", "max_lora_rank", "same"), "max_loras": ("lora", "max_loras", "same"),
    "max_cpu_loras": ("lora", "max_cpu_loras", "same"), "enable_lora": ("lora", "enabled", "bool"),
    "lora_target_modules": ("lora", "lora_target_modules", "modules"),
    "speculative_config": ("speculative", "config", "same"), "speculative_model": ("speculative", "model", "same"),
    "num_speculative_tokens": ("speculative", "num_speculative_tokens", "same"),
    "kv_cache_memory_bytes": ("memory", "kv_budget_bytes", "budget"), "quantization": ("memory", "quantization", "same"),
    "dtype": ("model", "dtype", "dtype"), "revision": ("model", "revision", "same"),
    "limit_mm_per_prompt": ("mm", "limits", "same"), "language_model_only": ("mm", "text_only", "bool"),
    "data_parallel_size": ("layout", "dp", "same"), "enable_expert_parallel": ("layout", "ep", "bool"),
    "nnodes": ("layout", "nodes", "same"), "data_parallel_size_local": ("layout", "dp_local", "same"),
}
FLAGS = {  # knob -> the flags that write it (the first the release has)
    "tp": ("--tensor-parallel-size",), "pp": ("--pipeline-parallel-size",),
    "dcp": ("--decode-context-parallel-size",), "dp": ("--data-parallel-size",),
    "ep": ("--enable-expert-parallel",), "length": ("--max-model-len",), "seqs": ("--max-num-seqs",),
    "fraction": ("--gpu-memory-utilization",), "budget": ("--kv-cache-memory-bytes",),
    "kv_dtype": ("--kv-cache-dtype",), "block": ("--block-size",), "batched": ("--max-num-batched-tokens",),
    "eager": ("--enforce-eager",), "quantization": ("--quantization",), "nodes": ("--nnodes",),
    "dp_local": ("--data-parallel-size-local",),
    "speculative": ("--speculative-config",), "lora": ("--enable-lora",), "loras": ("--max-loras",),
    "lora_rank": ("--max-lora-rank",), "cpu_loras": ("--max-cpu-loras",),
    "lora_modules": ("--lora-target-modules",), "cpu_offload": ("--cpu-offload-gb",),
    "kv_offload": ("--kv-offloading-size",), "kv_transfer": ("--kv-transfer-config",),
}
SPELLING = Spelling(
    label="vLLM", parser="flexible", written_entry=("vllm", "serve"), flags=FLAGS, reads=READS, kv_dtypes=KV_DTYPES,
    yaml_keys={},
    entry_points=(EntryPoint(name="serve", words=("vllm", "serve")),
                  EntryPoint(name="api_server", words=("vllm.entrypoints.openai.api_server",), module=True,
                             positional_model=None, model_flag="--model", serve_only_dropped=True,
                             model_flag_why="vLLM 0.10-0.33 ignore a positional model and serve the default one; "
                                            "0.8-0.9 refuse it")),
    data_parallel="engines", expert_parallel="switch")
