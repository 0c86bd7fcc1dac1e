"""TensorRT-LLM's launch command (``kvplan.engines.spelling``): ``trtllm-serve MODEL``, read as click reads it
(exact option names), and where ``serve`` is a subcommand (the snapshot's DefaultGroup; which table has none is
a row field, ``TrtllmRelease.serve_subcommand``) ``trtllm-serve serve MODEL``. The KV dtype and the block size go in its YAML (``--extra_llm_api_options``:
``kv_cache_config.dtype``, ``tokens_per_block``); a replica over nodes is said by ``--gpus_per_node``; its EP size
is carried into the command written but not planned (kvplan plans TensorRT-LLM without expert parallel).
"""

from __future__ import annotations

from kvplan.engines.spelling import EntryPoint, Spelling

SPELLING = Spelling(
    label="trtllm-serve", parser="click", written_entry=("trtllm-serve",),
    entry_points=(EntryPoint(name="serve", words=("trtllm-serve",), subcommand="serve"),),  # absent: kvplan.engines.trtllm
    flags={"tp": ("--tp_size",), "pp": ("--pp_size",), "ep": ("--ep_size",), "length": ("--max_seq_len",),
           "seqs": ("--max_batch_size",), "fraction": ("--kv_cache_free_gpu_memory_fraction",),
           "batched": ("--max_num_tokens",), "gpus_per_node": ("--gpus_per_node",), "kv_dtype": (), "block": ()},
    reads={"tp_size": ("cache", "tp", "same"), "tensor_parallel_size": ("cache", "tp", "same"),
           "pp_size": ("cache", "pp", "same"), "pipeline_parallel_size": ("cache", "pp", "same"),
           "moe_expert_parallel_size": ("layout", "ep", "same"), "gpus_per_node": ("layout", "gpus_per_node", "same"),
           "max_seq_len": ("cache", "max_model_len", "length"), "max_batch_size": ("settings", "max_num_seqs", "same"),
           "max_num_tokens": ("settings", "max_num_batched_tokens", "same"),
           "kv_cache_free_gpu_memory_fraction": ("settings", "free_gpu_memory_fraction", "same"),
           "free_gpu_memory_fraction": ("settings", "free_gpu_memory_fraction", "same")},
    yaml_keys={"kv_dtype": "dtype", "block": "tokens_per_block"}, kv_dtypes={}, nodes="gpus_per_node")
