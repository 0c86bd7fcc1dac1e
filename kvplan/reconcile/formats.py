"""The line shapes of engine start-up logs, as data: per engine, what recognizes it, its version
lines, the settings it prints and every KV-related number, each with the source line it follows.

vLLM's table is ``vllm_lines.py``; SGLang's and TensorRT-LLM's are here. The pieces (units carried by
group names, printed precision) are described in ``lines.py``.
Sources: vLLM and SGLang wheels (file:line of the release named); TensorRT-LLM lines follow the
logs quoted in tests/data/logs and the Python of 1.2.0rc2 (``tensorrt_llm/_torch/pyexecutor/_util.py``
``KvCacheCreator``; its C++ sources are not in the wheel).
"""

from __future__ import annotations

from kvplan.reconcile.lines import NUM, EngineFormat, compiled, line, setting
from kvplan.reconcile.vllm_lines import VLLM

DTYPE = r"(?:dtype: torch\.\w+, )?"  # SGLang 0.5.23 names the pool's dtype before #tokens
TOKENS = r"(?:#tokens: (?P<kv_tokens>\d+), )?"  # 0.4.1-0.4.2 print no #tokens

SGLANG_NUMBERS = (
    line("load_begin", rf"Load weight begin\. avail mem=(?P<avail_before_gib>{NUM}) GB",
         "python/sglang/srt/model_executor/model_runner.py:233 (0.4.0), :697 (0.5.2): '%.2f GB' of GiB"),
    line("load_end", rf"Load weight end\. .*?avail mem=(?P<avail_after_gib>{NUM}) GB(?:, mem usage=(?P<weights_gib>{NUM})"
         " GB)?", "python/sglang/srt/model_executor/model_runner.py:272-277 (0.4.0; mem usage from 0.4.3), "
         ":782-789 (0.5.2)"),
    line("kv_pool", rf"KV Cache is allocated\. {DTYPE}{TOKENS}K size: (?P<k_size_gib>{NUM}) GB, "
         rf"V size: (?P<v_size_gib>{NUM}) GB", "python/sglang/srt/mem_cache/memory_pool.py:194 (0.4.1, no #tokens), "
         ":352 (0.5.2), 2088 (0.5.23: with the pool's dtype)"),
    line("kv_pool", rf"KV Cache is allocated\. {DTYPE}#tokens: (?P<kv_tokens>\d+), KV size: (?P<kv_size_gib>{NUM}) GB",
         "python/sglang/srt/mem_cache/memory_pool.py:358 (0.5.2), 2096 (0.5.23)"),
    line("mamba_pool", rf"Mamba Cache is allocated\. max_mamba_cache_size: (?P<mamba_slots>\d+), conv_state size: "
         rf"(?P<conv_state_gib>{NUM}) ?GB, ssm_state size: (?P<ssm_state_gib>{NUM}) ?GB",
         "python/sglang/srt/mem_cache/memory_pool.py:167 (0.5.2)"),
    line("pool_end", rf"Memory pool end\. avail mem=(?P<avail_after_pool_gib>{NUM}) GB",
         "python/sglang/srt/model_executor/model_runner.py (0.5.2)"),
    line("scheduler", rf"max_total_num_tokens=(?P<max_total_num_tokens>\d+),.*?context_len=(?P<max_model_len>\d+)"
         rf"(?:,.*?available_gpu_mem=(?P<available_gpu_mem_gib>{NUM}) GB)?",
         "python/sglang/srt/managers/scheduler.py:220 (0.4.0), :412 (0.5.2)"),
)

SGLANG_SETTINGS = (
    *setting("model", r"\bmodel_path='([^']+)'"),
    *setting("tp", r"\btp_size=(\d+)"), *setting("pp", r"\bpp_size=(\d+)"), *setting("dp", r"\bdp_size=(\d+)"),
    *setting("dp_attention", r"\benable_dp_attention=(True|False)"),
    *setting("mem_fraction_static", r"\bmem_fraction_static=([\d.]+)"),
    *setting("page_size", r"\bpage_size=(\d+)"),
    # torch's fp8 names (sglang 0.5.8 srt/model_executor/model_runner.py:1545-1585 logs the torch dtype it picked,
    # float8_e4m3fn, or ...fnuz on ROCm) are kvplan's fp8_e4m3 / fp8_e5m2
    *setting("kv_dtype", r"Using KV cache dtype: torch\.float8_e4m3fn", value="fp8_e4m3"),
    *setting("kv_dtype", r"Using KV cache dtype: torch\.float8_e5m2", value="fp8_e5m2"),
    *setting("kv_dtype", r"Using KV cache dtype: torch\.(\w+)", r"\bkv_cache_dtype='(\w+)'"),
    *setting("dtype", r"Load weight end\..*?dtype=torch\.(\w+)", r"ServerArgs\(.*?\bdtype='(\w+)'"),
    *setting("quantization", r"\bquantization='(\w+)'", r"Load weight end\..*?\bquant=(\w+)"),
    *setting("max_model_len", r"\bcontext_length=(\d+)", r"\bcontext_len=(\d+)"),
    *setting("max_total_tokens", r"\bmax_total_tokens=(\d+)"),
    *setting("chunked_prefill_size", r"\bchunked_prefill_size=(\d+)"),
)

TRTLLM_NUMBERS = (
    line("memory", rf"Memory usage when calculating max tokens in paged kv cache: total: (?P<total_gib>{NUM}) GiB, "
         rf"available: (?P<available_gib>{NUM}) GiB", "TensorRT-LLM 0.12-0.19 engine flow (C++ KV cache manager)"),
    line("pool", r"Number of blocks in KV cache primary pool: (?P<num_blocks>\d+)",
         "TensorRT-LLM 0.12-0.19 engine flow"),
    line("pool", r"Max KV cache blocks per sequence: (?P<blocks_per_sequence>\d+) \[window size=\d+\],? tokens per "
         r"block=(?P<tokens_per_block>\d+), primary blocks=(?P<num_blocks>\d+),(?: secondary blocks=\d+,)? "
         r"max sequence length=(?P<max_model_len>\d+)", "TensorRT-LLM 1.x PyTorch flow (estimation, then final)"),
    line("allocated", rf"\[MemUsageChange\] Allocated (?P<kv_size_gib>{NUM}) GiB for max tokens in paged KV cache "
         r"\((?P<kv_tokens>\d+)\)", "TensorRT-LLM 0.12-1.x: '%.2f GiB'"),
    line("peak", rf"Peak memory during memory usage profiling \(torch \+ non-torch\): (?P<peak_gib>{NUM}) GiB, "
         rf"available KV cache memory when calculating max tokens: (?P<available_gib>{NUM}) GiB, fraction is set "
         rf"(?P<fraction>{NUM}), kv size is (?P<kv_bytes_per_token>\d+)\. device total memory (?P<total_gib>{NUM}) "
         rf"GiB, , tmp kv_mem (?P<estimation_kv_gib>{NUM}) GiB",
         "tensorrt_llm/_torch/pyexecutor/_util.py KvCacheCreator (0.20-1.2): '%.2f GiB'"),
    line("estimated", rf"Estimated max memory in KV cache : (?P<kv_budget_gib>{NUM}) GiB",
         "tensorrt_llm/_torch/pyexecutor/_util.py KvCacheCreator (1.x): '%.2f GiB'"),
    line("max_tokens", r"Both free_gpu_memory_fraction and max_tokens are set \(to (?P<fraction>[\d.]+) and "
         r"(?P<max_tokens>\d+), respectively\)",
         "tensorrt_llm/_torch/pyexecutor/resource_manager.py KVCacheManager (0.20-1.2): the estimate as max_tokens"),
)

TRTLLM_SETTINGS = (
    *setting("model", r"^Model:\s+(\S+)", r"\bmodel serve hf://(\S+)", r"trtllm-serve for model (\S+) on"),
    *setting("tp", r"^TP Size:\s+(\d+)"), *setting("pp", r"^PP Size:\s+(\d+)"),
    *setting("kv_dtype", r"^KV Cache Dtype:\s+(\w+)"),
    *setting("quantization", r"^Quantization:\s+(\w+)"),
    *setting("dtype", r"^Dtype:\s+(\w+)"),
    *setting("free_gpu_memory_fraction", r"^KV Memory Percentage:\s+([\d.]+)%", percent=True),
    *setting("free_gpu_memory_fraction", r"free_gpu_memory_fraction and max_tokens are set \(to ([\d.]+) and"),
    *setting("max_model_len", r"^Max Sequence Length:\s+(\d+)", r"max sequence length=(\d+)", r"maxSequenceLen: (\d+)"),
    *setting("block_size", r"Number of tokens per block: (\d+)", r"tokens per block=(\d+)"),
)

SGLANG = EngineFormat(
    engine="sglang", label="SGLang",
    detect=compiled(r"ServerArgs\(", r"KV Cache is allocated\. ", r"max_total_num_tokens=", r"Load weight (begin|end)\.",
                    r"Memory pool end\.", r"Capture cuda graph (begin|end)"),
    versions=compiled(r"\bsglang(?:==| version:? )v?(\d+\.\d+\.\S+)"),
    numbers=SGLANG_NUMBERS, settings=SGLANG_SETTINGS,
    worker=compiled(r"^\s*\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (?P<who>[A-Z]+\d+(?: [A-Z]+\d+)*)\]")[0],
)

TRTLLM = EngineFormat(
    engine="trtllm", label="TensorRT-LLM",
    detect=compiled(r"\[TensorRT-LLM\]|\[TRT-LLM\]", r"TensorRT.LLM [Vv]ersion", r"paged kv cache|KV cache primary pool",
                    r"Max KV cache blocks per sequence"),
    versions=compiled(r"TensorRT.LLM [Vv]ersion:?\s+(\d+\.\d+\S*)", r"Engine version (\d+\.\d+\S*) found",
                      r"tensorrt-llm==(\d+\.\d+\.\d+\S*)"),
    numbers=TRTLLM_NUMBERS, settings=TRTLLM_SETTINGS,
    worker=compiled(r"\[RANK (?P<who>\d+)\]")[0], bare_rank=True,
)

FORMATS: dict[str, EngineFormat] = {f.engine: f for f in (VLLM, SGLANG, TRTLLM)}
