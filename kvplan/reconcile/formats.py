"""The line shapes of engine start-up logs, as data: per engine, what recognizes it, its version
lines, the settings it prints and every KV-related number, each with the source line it follows.

A number pattern's named groups are the values it sets. The group name carries the unit:
``…_gib`` is a size printed in GiB (SGLang and vLLM V0 write "GB" for it: ``/ (1 << 30)``),
``…_bytes`` a size in bytes, anything else a count or a ratio. ``decimals`` is the printed
precision where the digits shown can be fewer (vLLM's ``round(x, 2)`` prints 15.0 for 15.00).
Sources: vLLM and SGLang wheels (file:line of the release named); TensorRT-LLM lines follow the
logs quoted in tests/data/logs (its C++ sources are not in the wheel).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

NUM = r"[\d.]+"
INT = r"\d[\d,]*"


@dataclass(frozen=True, slots=True)
class LinePattern:
    kind: str  # the record it makes
    regex: re.Pattern[str]
    site: str  # where the engine prints it
    decimals: int | None = None  # printed precision when the digits shown can be fewer


@dataclass(frozen=True, slots=True)
class SettingPattern:
    setting: str
    regex: re.Pattern[str]
    percent: bool = False  # "99.0%" -> 0.99


@dataclass(frozen=True, slots=True)
class EngineFormat:
    engine: str  # kvplan's engine name
    label: str
    detect: tuple[re.Pattern[str], ...]
    versions: tuple[re.Pattern[str], ...]
    numbers: tuple[LinePattern, ...]
    settings: tuple[SettingPattern, ...]
    worker: re.Pattern[str]  # the prefix naming the process that printed a line


def _line(kind: str, pattern: str, site: str, decimals: int | None = None) -> LinePattern:
    return LinePattern(kind, re.compile(pattern), site, decimals)


def _set(setting: str, *patterns: str, percent: bool = False) -> tuple[SettingPattern, ...]:
    return tuple(SettingPattern(setting, re.compile(p), percent) for p in patterns)


VLLM_NUMBERS = (
    _line("weights", rf"Loading model weights took (?P<weights_gib>{NUM}) GB",
          "vllm/worker/model_runner.py (V0, 0.6): '%.4f GB' of GiB"),
    _line("weights", rf"Model loading took (?P<weights_gib>{NUM}) GiB and ",
          "vllm/v1/worker/gpu_model_runner.py:1347 (0.8.5), :2653 (0.11.0): '%.4f GiB'"),
    _line("weights", rf"Model loading took (?P<weights_gib>{NUM}) GiB memory and ",
          "vllm/v1/worker/gpu_model_runner.py:5089 (0.33.0): format_gib = round(x, 2)", decimals=2),
    _line("requested_v0", rf"total_gpu_memory \((?P<total_gib>{NUM}) ?GiB\) x gpu_memory_utilization "
          rf"\((?P<utilization>{NUM})\) = (?P<requested_gib>{NUM}) ?GiB", "vllm/worker/worker.py:271-276 (0.8.5, V0)"),
    _line("breakdown_v0", rf"model weights take (?P<used_weights_gib>{NUM}) ?GiB; non_torch_memory takes "
          rf"(?P<used_non_torch_gib>{NUM}) ?GiB; PyTorch activation peak memory takes (?P<used_activation_gib>{NUM}) "
          rf"?GiB; the rest of the memory reserved for KV Cache is (?P<kv_budget_gib>{NUM}) ?GiB",
          "vllm/worker/worker.py:277-285 (0.8.5, V0): '%.2f'"),
    _line("breakdown_v1", rf"Free memory on device \((?P<free_gib>{NUM})/(?P<total_gib>{NUM}) GiB\) on startup\. "
          rf"Desired GPU memory utilization is \((?P<utilization>{NUM}), (?P<requested_gib>{NUM}) GiB\)\. Actual "
          rf"usage is (?P<used_weights_gib>{NUM}) GiB for weight, (?P<used_activation_gib>{NUM}) GiB for peak "
          rf"activation, (?P<used_non_torch_gib>{NUM}) GiB for non-torch memory, and (?P<used_cuda_graph_gib>{NUM}) "
          rf"GiB for CUDAGraph memory\.(?:.*?Current kv cache memory in use is (?P<kv_budget_bytes>\d+) bytes)?",
          "vllm/v1/worker/gpu_worker.py:373-395 (0.11.0): GiB = round(x, 2); 0.10.2 prints the KV bytes",
          decimals=2),
    _line("available", rf"Available KV cache memory: (?P<kv_budget_gib>{NUM}) GiB",
          "vllm/v1/worker/gpu_worker.py:232 (0.9.2), :298 (0.11.0), :773 (0.33.0): round(x, 2)", decimals=2),
    _line("kv_size", rf"KV cache size: (?P<kv_tokens>{INT}) tokens(?:, Maximum concurrency for "
          rf"(?P<max_model_len>{INT}) tokens per request: (?P<max_concurrency>{NUM})x)?",
          "vllm/v1/core/kv_cache_utils.py:634 (0.8.5), :873 (0.9.2), :1087 (0.11.0); one line: :1145 (0.33.0)"),
    _line("concurrency", rf"(?<!tokens, )Maximum concurrency for (?P<max_model_len>{INT}) tokens per request: "
          rf"(?P<max_concurrency>{NUM})x",
          "vllm/v1/core/kv_cache_utils.py:637 (0.8.5), :877 (0.9.2), :1091 (0.11.0); "
          "vllm/executor/executor_base.py:117 (V0): '%.2fx'"),
    _line("gpu_blocks_v0", r"# GPU blocks: (?P<num_blocks>\d+), # CPU blocks: (?P<num_cpu_blocks>\d+)",
          "vllm/executor/executor_base.py:112-114 (0.8.5, V0)"),
    _line("num_gpu_blocks", r"num_gpu_blocks is: (?P<num_blocks>\d+)", "vllm/v1/metrics/loggers.py:139 (0.9.2)"),
    _line("refusal", rf"with the models?'s max seq len \((?P<max_model_len>\d+)\), \((?P<kv_needed_gib>{NUM}) GiB KV "
          rf"cache is needed, which is larger than the available KV cache memory \((?P<kv_available_gib>{NUM}) "
          rf"GiB\)\.(?: Based on the available memory, the estimated maximum model length is "
          rf"(?P<estimated_max_model_len>\d+)\.)?",
          "vllm/v1/core/kv_cache_utils.py:700-706 (0.10.1.1, 'models's', '%.2f'); "
          "vllm/v1/core/kv_cache_planning.py:78-81 (0.33.0, 'model's', round(x, 2))", decimals=2),
    _line("refusal_v0", r"The model's max seq len \((?P<max_model_len>\d+)\) is larger than the maximum number of "
          r"tokens that can be stored in KV cache \((?P<kv_tokens>\d+)\)", "vllm/worker/worker.py:566 (0.8.5, V0)"),
    _line("cuda_graph", rf"Estimated CUDA graph memory: (?P<cuda_graph_gib>{NUM}) GiB total",
          "vllm/v1/worker/gpu_model_runner.py:6410 (0.33.0)"),
    _line("graph_capture", rf"Graph capturing finished in \d+ secs, took (?P<cuda_graph_gib>{NUM}) GiB",
          "vllm/v1/worker/gpu_model_runner.py (0.10-0.11)"),
    _line("padding", rf"Add (?P<padding_layers>\d+) padding layers, may waste at most (?P<padding_percent>{NUM})% KV",
          "vllm/v1/core/kv_cache_utils.py (0.26.0 log line 1237)"),
)

VLLM_SETTINGS = (
    *_set("model", r"\bmodel='([^']+)'", r"'model': '([^']+)'", r"Starting to load model (\S+?)\.\.\."),
    *_set("served_model_name", r"\bserved_model_name=([^,\s]+)", r"'served_model_name': \['([^']+)'"),
    *_set("tp", r"\btensor_parallel_size'?[=:] ?(\d+)"),
    *_set("pp", r"\bpipeline_parallel_size'?[=:] ?(\d+)"),
    *_set("max_model_len", r"\bmax_seq_len=(\d+)", r"'max_model_len': (\d+)", r"Using max model len (\d+)"),
    *_set("dtype", r"\bdtype=torch\.(\w+)", r"'dtype': '(\w+)'"),
    *_set("kv_dtype", r"\bkv_cache_dtype'?[=:] ?'?(\w+)", r"Using (\w+) data type to store kv cache"),
    *_set("quantization", r"\bquantization'?[=:] ?'?(\w+)"),
    *_set("block_size", r"'block_size': (\d+)"),
    *_set("gpu_memory_utilization", r"'gpu_memory_utilization': ([\d.]+)"),
    *_set("swap_space", r"'swap_space': ([\d.]+)"),
    *_set("max_num_batched_tokens", r"max_num_batched_tokens[=:] ?(\d+)", r"'max_num_batched_tokens': (\d+)"),
)

DTYPE = r"(?:dtype: torch\.\w+, )?"  # SGLang 0.5.23 names the pool's dtype before #tokens

SGLANG_NUMBERS = (
    _line("load_begin", rf"Load weight begin\. avail mem=(?P<avail_before_gib>{NUM}) GB",
          "python/sglang/srt/model_executor/model_runner.py:697 (0.5.2): '%.2f GB' of GiB"),
    _line("load_end", rf"Load weight end\. .*?avail mem=(?P<avail_after_gib>{NUM}) GB, mem usage=(?P<weights_gib>{NUM})"
          " GB", "python/sglang/srt/model_executor/model_runner.py:782-789 (0.5.2)"),
    _line("kv_pool", rf"KV Cache is allocated\. {DTYPE}#tokens: (?P<kv_tokens>\d+), K size: (?P<k_size_gib>{NUM}) GB, "
          rf"V size: (?P<v_size_gib>{NUM}) GB", "python/sglang/srt/mem_cache/memory_pool.py:352 (0.5.2), "
          "2088 (0.5.23: with the pool's dtype)"),
    _line("kv_pool", rf"KV Cache is allocated\. {DTYPE}#tokens: (?P<kv_tokens>\d+), KV size: (?P<kv_size_gib>{NUM}) GB",
          "python/sglang/srt/mem_cache/memory_pool.py:358 (0.5.2), 2096 (0.5.23)"),
    _line("mamba_pool", rf"Mamba Cache is allocated\. max_mamba_cache_size: (?P<mamba_slots>\d+), conv_state size: "
          rf"(?P<conv_state_gib>{NUM}) ?GB, ssm_state size: (?P<ssm_state_gib>{NUM}) ?GB",
          "python/sglang/srt/mem_cache/memory_pool.py:167 (0.5.2)"),
    _line("pool_end", rf"Memory pool end\. avail mem=(?P<avail_after_pool_gib>{NUM}) GB",
          "python/sglang/srt/model_executor/model_runner.py (0.5.2)"),
    _line("scheduler", rf"max_total_num_tokens=(?P<max_total_num_tokens>\d+),.*?context_len=(?P<max_model_len>\d+)"
          rf"(?:,.*?available_gpu_mem=(?P<available_gpu_mem_gib>{NUM}) GB)?",
          "python/sglang/srt/managers/scheduler.py:412 (0.5.2)"),
)

SGLANG_SETTINGS = (
    *_set("model", r"\bmodel_path='([^']+)'"),
    *_set("tp", r"\btp_size=(\d+)"), *_set("pp", r"\bpp_size=(\d+)"), *_set("dp", r"\bdp_size=(\d+)"),
    *_set("mem_fraction_static", r"\bmem_fraction_static=([\d.]+)"),
    *_set("page_size", r"\bpage_size=(\d+)"),
    *_set("kv_dtype", r"Using KV cache dtype: torch\.(\w+)", r"\bkv_cache_dtype='(\w+)'"),
    *_set("dtype", r"Load weight end\..*?dtype=torch\.(\w+)", r"ServerArgs\(.*?\bdtype='(\w+)'"),
    *_set("quantization", r"\bquantization='(\w+)'"),
    *_set("max_model_len", r"\bcontext_length=(\d+)", r"\bcontext_len=(\d+)"),
    *_set("max_total_tokens", r"\bmax_total_tokens=(\d+)"),
)

TRTLLM_NUMBERS = (
    _line("memory", rf"Memory usage when calculating max tokens in paged kv cache: total: (?P<total_gib>{NUM}) GiB, "
          rf"available: (?P<available_gib>{NUM}) GiB", "TensorRT-LLM 0.12-0.19 engine flow (C++ KV cache manager)"),
    _line("pool", r"Number of blocks in KV cache primary pool: (?P<num_blocks>\d+)",
          "TensorRT-LLM 0.12-0.19 engine flow"),
    _line("pool", r"Max KV cache blocks per sequence: (?P<blocks_per_sequence>\d+) \[window size=\d+\], tokens per "
          r"block=(?P<tokens_per_block>\d+), primary blocks=(?P<num_blocks>\d+), secondary blocks=\d+, "
          r"max sequence length=(?P<max_model_len>\d+)", "TensorRT-LLM 1.x PyTorch flow (estimation, then final)"),
    _line("allocated", rf"\[MemUsageChange\] Allocated (?P<kv_size_gib>{NUM}) GiB for max tokens in paged KV cache "
          r"\((?P<kv_tokens>\d+)\)", "TensorRT-LLM 0.12-1.x: '%.2f GiB'"),
)

TRTLLM_SETTINGS = (
    *_set("model", r"^Model:\s+(\S+)"),
    *_set("tp", r"^TP Size:\s+(\d+)"), *_set("pp", r"^PP Size:\s+(\d+)"),
    *_set("kv_dtype", r"^KV Cache Dtype:\s+(\w+)"),
    *_set("quantization", r"^Quantization:\s+(\w+)"),
    *_set("dtype", r"^Dtype:\s+(\w+)"),
    *_set("free_gpu_memory_fraction", r"^KV Memory Percentage:\s+([\d.]+)%", percent=True),
    *_set("max_model_len", r"^Max Sequence Length:\s+(\d+)", r"max sequence length=(\d+)", r"maxSequenceLen: (\d+)"),
    *_set("block_size", r"Number of tokens per block: (\d+)", r"tokens per block=(\d+)"),
)

VLLM = EngineFormat(
    engine="vllm", label="vLLM",
    detect=tuple(re.compile(p) for p in (
        r"\bvLLM\b|\bvllm\b", r"kv_cache_utils\.py|gpu_worker\.py|gpu_model_runner\.py|gpu_executor\.py",
        r"# GPU blocks:|KV cache size: [\d,]+ tokens|Available KV cache memory:|Maximum concurrency for",
        r"max seq len \(\d+\)")),
    versions=tuple(re.compile(p) for p in (
        r"vLLM API server version v?(\d+\.\d+\S*)", r"LLM engine \(v(\d+\.\d+\S*?)\) with config",
        r"\bversion (\d+\.\d+\.\d+\S*)\s*$")),
    numbers=VLLM_NUMBERS, settings=VLLM_SETTINGS,
    worker=re.compile(r"^\((?P<who>[^()]+?) pid=(?P<pid>\d+)\)"),
)

SGLANG = EngineFormat(
    engine="sglang", label="SGLang",
    detect=tuple(re.compile(p) for p in (
        r"ServerArgs\(", r"KV Cache is allocated\. #tokens:", r"max_total_num_tokens=", r"Load weight (begin|end)\.",
        r"Memory pool end\.", r"Capture cuda graph (begin|end)")),
    versions=(re.compile(r"\bsglang(?:==| version:? )v?(\d+\.\d+\.\S+)"),),
    numbers=SGLANG_NUMBERS, settings=SGLANG_SETTINGS,
    worker=re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d (?P<who>[A-Z]+\d+(?: [A-Z]+\d+)*)\]"),
)

TRTLLM = EngineFormat(
    engine="trtllm", label="TensorRT-LLM",
    detect=tuple(re.compile(p) for p in (
        r"\[TensorRT-LLM\]|\[TRT-LLM\]", r"TensorRT.LLM [Vv]ersion", r"paged kv cache|KV cache primary pool",
        r"Max KV cache blocks per sequence")),
    versions=tuple(re.compile(p) for p in (
        r"TensorRT.LLM [Vv]ersion:\s+(\d+\.\d+\S*)", r"Engine version (\d+\.\d+\S*) found")),
    numbers=TRTLLM_NUMBERS, settings=TRTLLM_SETTINGS,
    worker=re.compile(r"\[RANK (?P<who>\d+)\]"),
)

FORMATS: dict[str, EngineFormat] = {f.engine: f for f in (VLLM, SGLANG, TRTLLM)}
