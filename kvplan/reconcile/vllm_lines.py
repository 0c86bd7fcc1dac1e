"""vLLM's start-up lines as data: every KV and memory line of every release from 0.6 (V0) to 0.33 (V1), the
settings a log states, and the warnings that change the arithmetic.

Sources: the releases' Python (``/vllm/...`` paths; the print site of every release is in
``print_sites.json``) and the logs quoted in tests/data/logs. A line that prints "GB" means GiB (V0 and
0.8.0 divide by ``1 << 30``).
"""

from __future__ import annotations

from kvplan.reconcile.lines import INT, NUM, SNUM, EngineFormat, compiled, line, setting

_BREAKDOWN_V1 = (
    rf"Free memory on device \((?P<free_gib>{NUM})/(?P<total_gib>{NUM}) GiB\) on startup\. Desired GPU memory "
    rf"utilization is \((?P<utilization>{NUM}), (?P<requested_gib>{NUM}) GiB\)\. Actual usage is ")

WEIGHTS = (
    line("weights", rf"Loading model weights took (?P<weights_gib>{NUM}) GB",
         "vllm/worker/model_runner.py (V0, 0.6-0.7): '%.4f GB' of GiB"),
    line("weights", rf"Model loading took (?P<weights_gib>{NUM}) GB and ",
         "vllm/worker/model_runner.py:1146 (V0 0.8.0-0.8.2), v1/worker/gpu_model_runner.py:1140 (0.8.0): '%.4f GB'"),
    line("weights", rf"Model loading took (?P<weights_gib>{NUM}) GiB and ",
         "vllm/v1/worker/gpu_model_runner.py:1347 (0.8.5), :2653 (0.11.0): '%.4f GiB'; Model Runner V2 "
         "v1/worker/gpu/model_runner.py:305 (0.26.0): round(x, 2)", decimals=2),
    line("weights", rf"Model loading took (?P<weights_gib>{NUM}) GiB memory and ",
         "vllm/v1/worker/gpu_model_runner.py:3550 (0.12.0, '%.4f'), :5089 (0.33.0, round(x, 2))", decimals=2),
)

BUDGET = (
    line("profile_v064", rf"Memory profiling results: (?:duration=[\d.]+ ?s(?:econds)?,? ?)?total_gpu_memory="
         rf"(?P<total_gib>{NUM}) ?GiB,? initial_memory_usage={NUM} ?GiB,? peak_torch_memory=(?P<used_peak_gib>{NUM}) ?GiB,? "
         rf"memory_usage_post_profile={NUM} ?GiB,? non_torch_memory=(?P<used_non_torch_gib>{NUM}) ?GiB,? "
         rf"kv_cache_size=(?P<kv_budget_gib>{SNUM}) ?GiB,? gpu_memory_utilization=(?P<utilization>{NUM})",
         "vllm/worker/worker.py:232 (V0 0.6.4): KV = total × u − absolute torch peak − non-torch, '%.2f'"),
    line("requested_v0", rf"total_gpu_memory \((?P<total_gib>{NUM}) ?GiB\) x gpu_memory_utilization "
         rf"\((?P<utilization>{NUM})\) = (?P<requested_gib>{NUM}) ?GiB", "vllm/worker/worker.py:271-276 (0.8.5, V0)"),
    line("breakdown_v0", rf"model weights take (?P<used_weights_gib>{NUM}) ?GiB; non_torch_memory takes "
         rf"(?P<used_non_torch_gib>{NUM}) ?GiB; PyTorch activation peak memory takes (?P<used_activation_gib>{NUM}) "
         rf"?GiB; the rest of the memory reserved for KV Cache is (?P<kv_budget_gib>{SNUM}) ?GiB",
         "vllm/worker/worker.py:277-285 (0.8.5, V0): '%.2f'"),
    line("breakdown_v1", _BREAKDOWN_V1 + rf"(?P<used_weights_gib>{NUM}) GiB for weight, (?P<used_activation_gib>{NUM}) "
         rf"GiB for peak activation, (?P<used_non_torch_gib>{NUM}) GiB for non-torch memory, and "
         rf"(?P<used_cuda_graph_gib>{NUM}) GiB for CUDAGraph memory\.(?:.*?Current kv cache memory in use is "
         r"(?P<kv_budget_bytes>\d+) bytes)?",
         "vllm/v1/worker/gpu_worker.py:391 (0.10.2, info; debug 0.11-0.25), :836-848 (0.26.0, info): round(x, 2); "
         "0.10.2 prints the KV bytes", decimals=2),
    line("breakdown_v1", _BREAKDOWN_V1 + rf"(?P<used_consumed_gib>{NUM}) GiB for consumed memory \(weights \+ "
         rf"non-torch\), (?P<used_activation_gib>{NUM}) GiB for peak activation, and (?P<used_cuda_graph_gib>{NUM}) "
         r"GiB for CUDAGraph memory\.",
         "vllm/v1/worker/gpu_worker.py:768-782 (0.27.0): the activation includes the applied graph estimate",
         decimals=2),
    line("profiling_v1", rf"Memory profiling takes [\d.]+ seconds\. Total non KV cache memory: (?P<non_kv_gib>{NUM})GiB; "
         rf"torch peak memory increase: (?P<used_activation_gib>{NUM})GiB; (?:non-torch forward increase memory: "
         rf"(?P<used_non_torch_gib>{NUM})|total consumed \(from mem_get_info\): (?P<used_consumed_gib>{NUM}))GiB; "
         rf"weights memory: (?P<used_weights_gib>{NUM})GiB\.",
         "vllm/utils/mem_utils.py:185 (0.19.0, debug), :218 (0.33.0: total consumed)", decimals=2,
         example="Memory profiling takes 5.21 seconds. Total non KV cache memory: 16.42GiB; torch peak memory "
                 "increase: 1.23GiB; non-torch forward increase memory: 0.05GiB; weights memory: 15.14GiB."),
    line("available", rf"Available KV cache memory: (?P<kv_budget_gib>{SNUM}) GiB",
         "vllm/v1/worker/gpu_worker.py:232 (0.9.2), :298 (0.11.0), :773 (0.33.0): '%.2f', round(x, 2) from 0.14",
         decimals=2),
    line("cuda_graph", rf"Estimated CUDA graph memory: (?P<cuda_graph_gib>{NUM}) GiB total",
         "vllm/v1/worker/gpu_model_runner.py:5955 (0.19.0), :6410 (0.33.0)"),
    line("graph_capture", rf"Graph capturing finished in \d+ secs, took (?P<cuda_graph_gib>-?{NUM}) GiB",
         "vllm/v1/worker/gpu_model_runner.py:6046 (0.19.0); V0 worker/model_runner.py"),
)

TOKENS = (
    line("kv_size", rf"KV cache size: (?P<kv_tokens>{INT}) tokens(?:, Maximum concurrency for "
         rf"(?P<max_model_len>{INT}) tokens per request: (?P<max_concurrency>{NUM})x)?",
         "vllm/v1/core/kv_cache_utils.py:634 (0.8.5), :873 (0.9.2), :1087 (0.11.0); one line: :1870 (0.28.0), "
         "'%s KV cache size' :1147 (0.33.0)"),
    line("concurrency", rf"(?<!tokens, )Maximum concurrency for (?P<max_model_len>{INT}) tokens per request: "
         rf"(?P<max_concurrency>{NUM})x",
         "vllm/v1/core/kv_cache_utils.py:637 (0.8.5), :877 (0.9.2), :1091 (0.11.0); "
         "vllm/executor/executor_base.py:117 (V0): '%.2fx'"),
    line("gpu_blocks_v0", r"# (?:GPU|CUDA|cuda) blocks: (?P<num_blocks>\d+), # CPU blocks: (?P<num_cpu_blocks>\d+)",
         "vllm/executor/executor_base.py:112-114 (V0 0.8.5: '# %s blocks'; GPU in 0.6, CUDA in 0.7, cuda in 0.8)"),
    line("num_gpu_blocks", r"num_gpu_blocks is: (?P<num_blocks>\d+)", "vllm/v1/metrics/loggers.py:139 (0.9.2)"),
    line("num_gpu_blocks", r"\bnum_gpu_blocks=\"(?P<num_blocks>\d+)\"",
         "vllm:cache_config_info metric labels (v1/metrics/loggers.py, the same value)"),
    line("dcp", r"Multiplying the GPU KV cache size by the (?:dcp_world_size (?P<dcp>\d+)|cp_world_size (?P<cp>\d+))",
         "vllm/v1/core/kv_cache_utils.py:855-868 (0.10.2), :1279 (0.12.0)",
         example="Multiplying the GPU KV cache size by the dcp_world_size 2."),
    line("padding", rf"Add (?P<padding_layers>\d+) padding layers, may waste at most (?P<padding_percent>{NUM})% KV",
         "vllm/v1/core/kv_cache_utils.py:831-835 (0.9.2), :1033 (0.13.0), :1059 (0.19.0)"),
)

REFUSALS = (
    line("refusal", rf"with the models?'s max seq len \((?P<max_model_len>\d+)\), \((?P<kv_needed_gib>{NUM}) GiB KV "
         rf"cache is needed, which is larger than the available KV cache memory \((?P<kv_available_gib>{SNUM}) "
         rf"GiB\)\.(?: Based on the available memory, the estimated maximum model length is "
         rf"(?P<estimated_max_model_len>\d+)\.)?",
         "vllm/v1/core/kv_cache_utils.py:700-706 (0.10.1.1, 'models's', '%.2f'); "
         "vllm/v1/core/kv_cache_planning.py:78-81 (0.33.0, 'model's', round(x, 2))", decimals=2),
    line("refusal_v0", r"The model's max seq len \((?P<max_model_len>\d+)\) is larger than the maximum number of "
         r"tokens that can be stored in KV cache \((?P<kv_tokens>\d+)\)", "vllm/worker/worker.py:566 (0.8.5, V0)"),
)

VLLM_NUMBERS = (*WEIGHTS, *BUDGET, *TOKENS, *REFUSALS)

_HYBRID_OFF = (r"Hybrid KV cache manager is disabled for this hybrid model", r"Turning off hybrid kv cache manager",
               r"latency regression when using chunked local attention with the hybrid KV cache manager\. Disabling")
WARNINGS = (
    # every layer is counted as full (kv_cache_utils.py:900-904, 0.9.2; config/vllm.py:885-929, 0.12.0)
    *setting("hybrid_kv_cache_manager", *_HYBRID_OFF, value="off"),
    # MXFP4/NVFP4 weights on a GPU without FP4: Marlin experts, padded (quantization/mxfp4.py:157-165, 0.10.1.1)
    *setting("moe_backend", r"Weight-only FP4 compression will be used leveraging the Marlin kernel", value="marlin"),
    *setting("moe_backend", r"Using '(MARLIN|TRITON)' \w+ MoE backend"),
    # the MXFP4 backends of Blackwell (fused_moe/oracle/mxfp4.py _make_log_backend, 0.19 on)
    *setting("moe_backend", r"Using '(DEEPGEMM|FLASHINFER_TRTLLM)_MXFP4\w*' Mxfp4 MoE backend"),
    # the CUDA-graph estimate: applied (0.20+ default, or env = 1 in 0.18-0.19) or only logged
    *setting("graph_estimate", r"CUDA graph memory profiling will be enabled by default", value="off"),
    *setting("graph_estimate", r"CUDA graph memory profiling is disabled", value="off"),
    *setting("graph_estimate", r"CUDA graph memory profiling is enabled", value="on"),
)

VLLM_SETTINGS = (
    *setting("model", r"\bmodel='([^']+)'", r"'model': '([^']+)'", r"Starting to load model (\S+?)\.\.\.",
             r"--model[= ](\S+)"),
    *setting("served_model_name", r"\bserved_model_name=([^,\s]+)", r"'served_model_name': \['([^']+)'"),
    *setting("tp", r"\btensor_parallel_size'?[=:] ?(\d+)", r"--tensor-parallel-size[= ](\d+)"),
    *setting("pp", r"\bpipeline_parallel_size'?[=:] ?(\d+)", r"--pipeline-parallel-size[= ](\d+)"),
    *setting("dcp", r"\bdecode_context_parallel_size'?[=:] ?(\d+)", r"--decode-context-parallel-size[= ](\d+)"),
    # the engine config's f"SpeculativeConfig({method=}, {model=}, {num_spec_tokens=})" (0.10.2
    # config/__init__.py:2401, 0.25.0 config/speculative.py:1276), or the non-default args' speculative_config dict
    *setting("speculative_method", r"\bspeculative_config=SpeculativeConfig\(method='(\w+)'",
             r"'speculative_config': \{[^}]*'method': '(\w+)'"),
    *setting("num_speculative_tokens", r"\bspeculative_config=SpeculativeConfig\([^)]*\bnum_spec_tokens=(\d+)",
             r"'speculative_config': \{[^}]*'num_speculative_tokens': (\d+)"),
    *setting("speculative_model", r"\bspeculative_config=SpeculativeConfig\([^)]*\bmodel='([^']+)'",
             r"'speculative_config': \{[^}]*'model': '([^']+)'"),
    *setting("max_model_len", r"\bmax_seq_len=(\d+)", r"'max_model_len': (\d+)", r"Using max model len (\d+)",
             r"--max-model-len[= ](\d+)"),
    *setting("dtype", r"\bdtype=torch\.(\w+)", r"'dtype': '(\w+)'", r"'dtype': torch\.(\w+)"),
    *setting("kv_dtype", r"\bkv_cache_dtype'?[=:] ?'?(\w+)", r"Using (\w+) data type to store kv cache"),
    *setting("quantization", r"\bquantization'?[=:] ?'?([\w-]+)", r"--quantization[= ]([\w-]+)"),
    *setting("block_size", r"'block_size': (\d+)"),
    *setting("gpu_memory_utilization", r"'gpu_memory_utilization': ([\d.]+)",
             r"Desired GPU memory utilization is \(([\d.]+),", r"The current --gpu-memory-utilization=([\d.]+)",
             r"--gpu-memory-utilization[= ]([\d.]+)"),
    *setting("gpu_memory_utilization", r"actual GPU utilization = ([\d.]+)%", percent=True),  # Unsloth passes it
    *setting("gpu_memory_utilization", r"gpu_memory_utilization \(([\d.]+)\)", r"gpu_memory_utilization=([\d.]+)"),
    *setting("swap_space", r"'swap_space': ([\d.]+)", r"\bswap_space=([\d.]+)"),
    *setting("enable_lora", r"\benable_lora'?[=:] ?(True|False)"),
    *setting("max_lora_rank", r"'max_lora_rank': (\d+)", r"\bmax_lora_rank=(\d+)"),
    *setting("max_loras", r"'max_loras': (\d+)", r"\bmax_loras=(\d+)"),
    *setting("max_num_batched_tokens", r"max_num_batched_tokens[=:] ?(\d+)", r"'max_num_batched_tokens': (\d+)"),
    *setting("max_num_seqs", r"'max_num_seqs': (\d+)", r"\bmax_num_seqs=(\d+)", r"Num Sequences = (\d+)"),
    # the resolved value in the engine's config line, or the non-default args; Mamba states follow it
    *setting("prefix_caching", r"\benable_prefix_caching'?[=:] ?(True|False)"),
    *setting("prefix_caching", r"--enable-prefix-caching\b", value="True"),
    *setting("prefix_caching", r"--no-enable-prefix-caching\b", value="False"),
    *setting("enforce_eager", r"\benforce_eager'?[=:] ?(True|False)"),
    *setting("enforce_eager", r"--enforce-eager\b", r"Enforce eager set", value="True"),
    # the device the MoE kernels look their tuned configs up for (fused_moe.py names it in every release)
    *setting("gpu_name", r"device_name=(NVIDIA_[\w-]+?)(?:,|\.json)", r"GPU 0: (NVIDIA [^\n(]+?)\s*(?:\(|$)"),
    *WARNINGS,
)

# V0 wording, oldest first: 0.6.4 prints "Memory profiling results", 0.6 "# GPU blocks", 0.7 "# CUDA blocks" and
# "Loading model weights took", 0.8-0.10 "# cuda blocks" (vllm/executor/executor_base.py, vllm/worker/worker.py)
V0_MARKERS = ("Memory profiling results", "# GPU blocks", "# CUDA blocks", "Loading model weights took",
              "# cuda blocks", "Initializing a V0 LLM engine", "Falling back to V0")

VLLM = EngineFormat(
    engine="vllm", label="vLLM",
    detect=compiled(
        r"\bvLLM\b|\bvllm\b", r"kv_cache_utils\.py|gpu_worker\.py|gpu_model_runner\.py|gpu_executor\.py",
        r"# (?:GPU|CUDA|cuda) blocks:|KV cache size: [\d,]+ tokens|Available KV cache memory:|Maximum concurrency for",
        r"max seq len \(\d+\)", r"Memory profiling results: .*kv_cache_size="),
    versions=compiled(
        r"vLLM API server version v?(\d+\.\d+\S*)", r"LLM engine \(v(\d+\.\d+\S*?)\) with config",
        r"\bversion (\d+\.\d+\.\d+\S*)\s*$", r"^vllm (\d+\.\d+\.\d+\S*)\s*$", r"vLLM Version (\d+\.\d+\.\d+\S*)",
        r"\bvLLM: (\d+\.\d+\.\d+)"),
    numbers=VLLM_NUMBERS, settings=VLLM_SETTINGS,
    worker=compiled(r"\((?P<who>[^()]+?) pid=(?P<pid>\d+)(?:, ip=(?P<ip>[\d.]+))?\)")[0],
    markers=V0_MARKERS, dated_by_sites=True,
)
