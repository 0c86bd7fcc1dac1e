"""SGLang's launch command (``kvplan.engines.spelling``): ``python -m sglang.launch_server --model-path MODEL`` and
``sglang serve`` (its releases are the rows': ``rows.SERVE_FROM``, ``SERVE_POSITIONAL_FROM``;
``--model-type`` is its own, 0.5.12 on), read with argparse (abbreviations taken, ``--tp_size`` unknown).

- ``--dp-size`` is DP attention (``CacheRequest.dp``) only with ``--enable-dp-attention``; without it the router runs
  dp_size replicas (0.5.23 ``srt/server_args.py``: dp_size × tp_size GPUs). ``--ep-size`` is a size.
- KV dtypes: SGLang's fp8 is fp8_e4m3; bf16 is written bfloat16 (its ``--kv-cache-dtype`` choices).
"""

from __future__ import annotations

from kvplan.engines.sglang.rows import SERVE_FROM, SERVE_POSITIONAL_FROM
from kvplan.engines.spelling import EntryPoint, Spelling

KV_DTYPES = {"fp8": "fp8_e4m3", "bf16": "bfloat16"}  # kvplan's name -> SGLang's, where they differ
TP, PP = ("cache", "tp", "same"), ("cache", "pp", "same")
READS = {  # parser dest -> (the question's part, field, conversion)
    "tp_size": TP, "tensor_parallel_size": TP, "pp_size": PP, "pipeline_parallel_size": PP,
    "dp_size": ("layout", "dp", "same"), "data_parallel_size": ("layout", "dp", "same"),
    "enable_dp_attention": ("layout", "dp_attention", "bool"), "ep_size": ("layout", "ep", "same"),
    "expert_parallel_size": ("layout", "ep", "same"), "nnodes": ("layout", "nodes", "same"),
    "context_length": ("cache", "max_model_len", "length"), "kv_cache_dtype": ("cache", "kv_dtype", "dtype"),
    "page_size": ("cache", "block_size", "same"), "mamba_ssm_dtype": ("cache", "ssm_state_dtype", "dtype"),
    "mem_fraction_static": ("settings", "mem_fraction_static", "same"),
    "max_running_requests": ("settings", "max_num_seqs", "same"),
    "chunked_prefill_size": ("settings", "chunked_prefill_size", "same"),
    "disable_cuda_graph": ("settings", "enforce_eager", "bool"),
    "swa_full_tokens_ratio": ("settings", "swa_full_tokens_ratio", "same"),
    "hicache_ratio": ("settings", "hicache_ratio", "same"), "hicache_size": ("settings", "kv_offloading_bytes", "gb"),
    "quantization": ("memory", "quantization", "same"), "disaggregation_mode": ("settings", "role", "mode"),
    "dtype": ("model", "dtype", "dtype"), "revision": ("model", "revision", "same"),
}
FLAGS = {  # knob -> the flags that write it (the first the release has)
    "tp": ("--tp-size",), "pp": ("--pp-size",), "dp": ("--dp-size",), "dp_attention": ("--enable-dp-attention",),
    "ep": ("--ep-size",), "length": ("--context-length",), "seqs": ("--max-running-requests",),
    "fraction": ("--mem-fraction-static",), "kv_dtype": ("--kv-cache-dtype",), "block": ("--page-size",),
    "eager": ("--disable-cuda-graph",), "chunked": ("--chunked-prefill-size",), "quantization": ("--quantization",),
    "nodes": ("--nnodes",), "hicache": ("--enable-hierarchical-cache",), "hicache_ratio": ("--hicache-ratio",),
    "hicache_size": ("--hicache-size",), "hicache_storage": ("--hicache-storage-backend",),
    "disaggregation": ("--disaggregation-mode",),
}
SPELLING = Spelling(
    label="SGLang", parser="argparse", written_entry=("python", "-m", "sglang.launch_server", "--model-path"),
    flags=FLAGS, reads=READS, kv_dtypes=KV_DTYPES, yaml_keys={},
    entry_points=(EntryPoint(name="launch_server", words=("sglang.launch_server",), module=True, positional_model=None),
                  EntryPoint(name="serve", words=("sglang", "serve"), first=SERVE_FROM, positional_model=SERVE_POSITIONAL_FROM,
                             model_option="--model-path", own_flags=("--model-type",))),
    data_parallel="attention", expert_parallel="size", table_match="last_patch")
