"""What each public keyword means: one line each, added to every public function's docstring (``@documented``)
with the other spellings it is taken under. The CLI's help says the same of its flags (`kvplan capacity --help`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from kvplan.api.keywords import ALIASES

F = TypeVar("F", bound=Callable[..., Any])

PARAMETERS = {
    "model": "a model id (bundled, HF cache or hub), a config.json or folder, or a loaded ModelConfig",
    "models": "model ids or ModelConfigs (one id alone is one model)",
    "log": "a start-up log: its text, a path (pathlib.Path) to it, or a parsed StartupLog",
    "request": "a CacheRequest: the cache question whole (keywords change it)",
    "revision": "hub revision (branch, tag or commit) of the config",
    "dtype": "the model's dtype as vLLM's --dtype: auto, bfloat16, float16, float32",
    "engine": "vllm, sglang, trtllm, hf, or a release (vllm@0.19)",
    "tp": "tensor parallel size", "pp": "pipeline parallel size", "dcp": "decode context parallel size",
    "dp": "data parallel size, as the engine runs it", "ep": "expert parallel ranks",
    "max_model_len": "tokens per sequence: 32768 or '32k' (default: the model's)",
    "batch": "sequences held at once (fit: requests to serve)",
    "kv_dtype": "KV cache dtype: auto, bf16, fp8, fp8_e5m2, int8, int4, ...",
    "block_size": "tokens per block (0: no paging; default: the engine's)",
    "quant_group": "int8/int4 KV: elements per fp16 scale",
    "state_dtype": "linear/Mamba conv state dtype", "ssm_state_dtype": "recurrent state dtype",
    "attention": "override the attention kind: mha, gqa, mqa, mla", "kv_heads": "override the number of KV heads",
    "layer_types": "override the layer kinds: '0-15:full,16-31:sliding'",
    "window": "override the window (sliding) or chunk (chunked), tokens",
    "max_num_batched_tokens": "vLLM profile-run tokens; TRT-LLM max_num_tokens",
    "max_num_seqs": "vLLM sampler rows of the profile run", "enforce_eager": "vLLM/TRT-LLM: no CUDA graphs",
    "gpu_memory_utilization": "vLLM: fraction of total memory", "entry_point": "vLLM: serve or llm",
    "sampler": "vLLM profile-run sampler", "moe_backend": "vLLM MXFP4 experts backend",
    "disable_hybrid_kv_cache_manager": "vLLM: sliding windows kept in full",
    "no_async_scheduling": "vLLM: one batch fewer in flight",
    "mem_fraction_static": "SGLang: fraction of free memory, weights included",
    "free_gpu_memory_fraction": "TRT-LLM: fraction of the memory free after load",
    "speculative_model": "draft checkpoint (id, config.json or folder)",
    "speculative_method": "draft_model, eagle, eagle3, mtp, ngram",
    "num_speculative_tokens": "tokens drafted per step", "max_lora_rank": "LoRA slots of this rank",
    "max_loras": "LoRA slots on the GPU", "lora_target_modules": "LoRA modules: a list, 'q_proj,v_proj' or 'all'",
    "max_cpu_loras": "vLLM adapters cached in host memory", "limit_mm_per_prompt": "vLLM images per prompt",
    "cpu_offload_bytes": "weights kept in host memory per GPU: bytes, or '10GiB' (a bare '10' is GiB)",
    "kv_offloading_bytes": "host KV tier: bytes, or '10GiB' (a bare '10' is GiB)",
    "hicache_ratio": "SGLang HiCache host pool = ratio × device pool",
    "lmcache_cpu_bytes": "LMCache max_local_cpu_size per rank: bytes, or '10GiB'",
    "mooncake_segment_bytes": "SGLang HiCache's Mooncake store global_segment_size: bytes, or '10GiB'",
    "role": "prefill or decode: one instance of a disaggregated deployment",
    "host_memory_bytes": "one node's RAM: bytes or '512GiB'",
    "disaggregated": "fit: prefill and decode pools (returned in the result's .disaggregated)",
    "pd_ratio": "fit with disaggregated: prefill:decode replicas, '1:2'",
    "gpu": "GPU type: H100, H200, A100-80G, L40S, ... (fit: a list or 'H100,L4')",
    "gpu_memory_bytes": "the GPU's memory instead of the catalog's: bytes or '79GiB'",
    "kv_budget_bytes": "KV memory per GPU as the engine logs it: bytes, '20GiB', or one per PP stage",
    "overhead_bytes": "everything but the weights per GPU, measured: bytes or '3GiB'",
    "non_torch_bytes": "non-torch memory per GPU as vLLM logs it: bytes or '2.1GiB'",
    "weights_dtype": "what-if weights: bf16, fp16, fp32, fp8, int8, int4",
    "quantization": "vLLM --quantization: the checkpoint's own method, or fp8 at load",
    "gpus_per_node": "GPUs of one node", "prices": "price per GPU-hour: {'H100': 2.49} or 'H100=2.49,H200=3.5'",
    "max_replicas": "most data-parallel replicas", "max_gpus": "most GPUs in all", "nodes": "most nodes in all",
    "cache": "a CacheRequest whose fields the keywords change", "settings": "engine Settings beyond the keywords",
    "memory": "a Memory beyond the keywords", "progress": "called as progress(done, total)",
    "shared_prefix": "prompt tokens all batch requests share", "beam_width": "beams per request",
    "prompt_len": "prompt tokens of max_model_len", "allocator": "contiguous, paged or exact",
}


def _aliases(name: str) -> str:
    others = [a for a, k in ALIASES.items() if k == name]
    return f" (also {', '.join(others)})" if others else ""


def parameter_lines(func: Callable[..., Any]) -> list[str]:
    """One line per parameter of `func`: its name, default, meaning and other spellings."""
    lines = []
    for name, p in inspect.signature(func).parameters.items():
        default = "" if p.default is inspect.Parameter.empty else f" = {p.default!r}"
        lines.append(f"    {name}{default}: {PARAMETERS.get(name, '')}{_aliases(name)}")
    return lines


def documented(func: F) -> F:
    """Add the parameters, one line each, to `func`'s docstring."""
    func.__doc__ = "\n".join([inspect.cleandoc(func.__doc__ or ""), "", "Parameters (every keyword also takes the "
                              "CLI's text form: '32k', '20GiB', 'vllm,sglang'):", *parameter_lines(func)])
    return func
