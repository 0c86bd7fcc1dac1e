"""A capacity answer -> the launch command of its engine release, every flag one that release's parser has.

Always written: the model, TP, the length, the budget knob (vLLM --gpu-memory-utilization, the release's
default filled in, or --kv-cache-memory-bytes when a KV budget was given; SGLang --mem-fraction-static;
TRT-LLM --kv_cache_free_gpu_memory_fraction), vLLM's --max-num-seqs, a KV dtype other than auto. The other
knobs only where they were asked (not the release default). A knob the release has no flag for is left out
and named in a note. The layout beyond the request objects (vLLM DP and EP, SGLang's --ep-size, nodes) comes
from the command that was read (``extra``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import field
from functools import cache
from typing import Any

from kvplan.engines import Engine, get_engine
from kvplan.engines.spelling import Spelling
from kvplan.launch.tables import FlagTable, flag_table, table_release
from kvplan.planning.capacity import CapacityResult
from kvplan.records import Record
from kvplan.units import GIB


class Written(Record):
    """The launch command of one answer."""

    engine: str  # the kvplan release name (vllm@0.33)
    release: str  # the parser's release (0.33.0)
    argv: tuple[str, ...]
    flags: dict[str, Any]  # flag -> value (a switch: true), in the order written
    layout: dict[str, int]
    notes: tuple[str, ...] = field(default=())

    @property
    def command(self) -> str:
        """The words joined as ``shlex.join`` joins them."""
        return " ".join(map(quoted, self.argv))


# shlex.quote's safe characters (its [^\w@%+=:,./-], ASCII): importing shlex for the one call was a tenth of what
# writing the launch line costs.
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-")


def quoted(word: str) -> str:
    """``shlex.quote``: a word of safe characters as it is, an empty one '', any other in single quotes (a ' inside
    as '"'"'). tests/launch/test_round_trip.py checks it against shlex."""
    if not word:
        return "''"
    if _SAFE.issuperset(word):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"


def engine_name(result: CapacityResult) -> str:
    """The kvplan release name whose profile gave the answer (`vLLM 0.33` -> `vllm@0.33`, `SGLang 0.5.23` ->
    `sglang@0.5.23`: the most specific name of that row)."""
    return _release_name(result.engine, result.plan.version)


@cache
def _release_name(engine: str, version: str) -> str:
    from kvplan.engines import get_engine, registry

    names = [n for n in registry() if n.startswith(f"{engine}@") and get_engine(n).version == version]
    return max(names, key=len) if names else engine


def layout_of(result: CapacityResult, extra: Mapping[str, Any]) -> dict[str, int]:
    """{tp, pp, dp, ep, dcp, nodes, gpus_per_node} of one replica of the answer: the engine's replica where it plans
    data parallel (vLLM: dp engines of tp × pp GPUs; SGLang: its DP attention ranks inside the TP group), else the
    command's replicas of tp × pp GPUs."""
    cache, tp, pp = result.cache, result.tp, result.pp
    planned_dp, planned_ep = (cache.dp, cache.ep) if cache is not None else (1, 1)
    dp = planned_dp if planned_dp > 1 else int(extra.get("dp", 1) or 1)
    gpus = get_engine(result.engine).replica_gpus(cache.parallel) if cache is not None and planned_dp > 1 \
        else tp * pp * dp
    ep_given = extra.get("ep")
    ep = planned_ep if planned_ep > 1 else (
        (tp * dp if ep_given else 1) if isinstance(ep_given, bool) else int(ep_given or 1))
    return {"tp": tp, "pp": pp, "dp": dp, "ep": ep, "dcp": result.dcp, **_nodes(gpus, dp, extra)}


def _nodes(gpus: int, dp: int, extra: Mapping[str, Any]) -> dict[str, int]:
    """Nodes of one replica and GPUs on each: --nnodes; vLLM's DP ranks per node (--data-parallel-size-local,
    0.9.0 on: dp / local nodes); TensorRT-LLM's --gpus_per_node (the replica's GPUs over it)."""
    per_node = int(extra.get("gpus_per_node") or 0)
    nodes = int(extra.get("nodes", 0) or 0) or (-(-dp // int(extra["dp_local"])) if extra.get("dp_local") else 0)
    nodes = nodes or (-(-gpus // per_node) if per_node else 1)
    return {"nodes": nodes, "gpus_per_node": per_node or -(-gpus // nodes)}


def _values(profile: Engine, result: CapacityResult, extra: Mapping[str, Any]) -> dict[str, Any]:
    """Knob -> value to write (None: not written)."""
    asked, settings, memory, cache = result.asked, result.settings, result.memory, result.cache
    assert settings is not None and cache is not None and profile.spelling is not None
    return {**_layout_values(profile.spelling, result, extra), "length": result.max_model_len,
            "seqs": settings.max_num_seqs, **_budget_values(profile, result),
            "kv_dtype": None if cache.kv_dtype_name.is_auto else cache.kv_dtype_name.spelled(profile.spelling.kv_dtypes),
            "block": cache.block_size, "batched": asked.max_num_batched_tokens if asked else None,
            "eager": True if asked and asked.enforce_eager else None,
            "chunked": asked.sglang.chunked_prefill_size if asked else None,
            "quantization": memory.quantization if memory else None, **_extras(result)}


def _layout_values(spelling: Spelling, result: CapacityResult, extra: Mapping[str, Any]) -> dict[str, Any]:
    """The replica's layout as the engine spells it: EP a switch (vLLM) or a size, DP attention a switch beside the DP
    size (SGLang), the nodes by --nnodes (vLLM's DP ranks per node where it spreads them) or GPUs per node."""
    layout, planned_dp = layout_of(result, extra), result.cache.dp if result.cache else 1
    ep = layout["ep"] if layout["ep"] > 1 else None
    by_count = spelling.nodes == "nnodes"
    return {"tp": result.tp, "pp": result.pp if result.pp > 1 else None, "dcp": result.dcp if result.dcp > 1 else None,
            "dp": layout["dp"] if layout["dp"] > 1 else None,
            "dp_attention": True if spelling.data_parallel == "attention" and planned_dp > 1 else None,
            "ep": (True if ep else None) if spelling.expert_parallel == "switch" else ep,
            "nodes": layout["nodes"] if layout["nodes"] > 1 and not extra.get("dp_local") and by_count else None,
            "dp_local": extra.get("dp_local"), "gpus_per_node": None if by_count else extra.get("gpus_per_node")}


def _budget_values(profile: Engine, result: CapacityResult) -> dict[str, Any]:
    """A given KV budget where the engine takes it as a flag (vLLM --kv-cache-memory-bytes), else its memory
    fraction (the release's default filled in)."""
    budget = result.memory.kv_budget_bytes if result.memory else None
    assert result.settings is not None and profile.spelling is not None
    if budget and profile.takes_kv_budget:
        return {"budget": budget[0], "fraction": None}
    return {"budget": None, "fraction": profile.memory_fraction(result.settings)}


def _extras(result: CapacityResult) -> dict[str, Any]:
    """What shares the GPU beside the cache, as asked: a draft, LoRA slots, host memory (GiB)."""
    asked = result.asked
    if asked is None:
        return {}
    spec = {k: v for k, v in (("model", asked.speculative_model), ("method", asked.speculative_method),
                              ("num_speculative_tokens", asked.num_speculative_tokens)) if v is not None}
    lora = asked.max_lora_rank is not None or asked.max_loras is not None
    return {"speculative": json.dumps(spec) if spec else None, "lora": True if lora else None,
            "loras": asked.max_loras, "lora_rank": asked.max_lora_rank, "cpu_loras": asked.max_cpu_loras,
            "lora_modules": list(asked.lora_target_modules) if asked.lora_target_modules else None,
            "cpu_offload": _gib(asked.cpu_offload_bytes), **_host_tier(result), **_role(result)}


EITHER = ("kv_transfer", "disaggregation")  # one engine's spelling of the role or the other's: no note for the other


def _role(result: CapacityResult) -> dict[str, Any]:
    """A prefill or decode instance: vLLM's KV transfer config (kv_producer / kv_consumer), SGLang's mode."""
    role = result.extras.role
    if role is None:
        return {}
    kv_role = {"prefill": "kv_producer", "decode": "kv_consumer"}[role.role]
    return {"kv_transfer": json.dumps({"kv_connector": role.transfer, "kv_role": kv_role}, separators=(",", ":")),
            "disaggregation": role.role}


def _host_tier(result: CapacityResult) -> dict[str, Any]:
    """The host KV tier as its connector is asked for: vLLM's native size (GiB, all ranks), SGLang's HiCache (a ratio
    or whole GB per rank, and its storage backend). LMCache and Mooncake's own sizes live in their config files (the
    answer's host_tier.flags)."""
    tier, asked = result.extras.host_tier, result.asked
    if tier is None or asked is None:
        return {}
    if tier.connector in ("hicache", "mooncake"):
        size = asked.kv_offloading_bytes
        return {"hicache": True, "hicache_ratio": asked.sglang.hicache_ratio,
                "hicache_size": round(size / 10**9) if size else None,
                "hicache_storage": "mooncake" if tier.connector == "mooncake" else None}
    return {"kv_offload": _gib(asked.kv_offloading_bytes)}


def _gib(size_bytes: int | None) -> float | None:
    return size_bytes / GIB if size_bytes else None


def _flag(spelling: Spelling, table: FlagTable, knob: str, value: Any) -> tuple[str | None, str | None]:
    """(flag, note): the release's flag for a knob whose value it takes, or a note why it is not written."""
    if knob not in spelling.flags:
        return None, f"{knob} {value}: kvplan writes no {table.engine} flag for it yet; add it to the command"
    name = next((f for f in spelling.flags[knob] if table.has(f)), None)
    if name is None:
        key = spelling.yaml_keys.get(knob)
        yaml = f" (trtllm-serve takes it as kv_cache_config.{key} in --extra_llm_api_options YAML)" if key else ""
        return None, f"{knob} {value}: {table.engine} {table.release} has no flag for it{yaml}"
    flag = table.flags[name]
    if flag.choices is not None and not flag.switch and value not in flag.choices:
        return None, f"{name} {value}: not one of {table.engine} {table.release}'s choices"
    return name, None


def write_launch(result: CapacityResult, extra: Mapping[str, Any] | None = None) -> Written:
    """The command that launches the answer's engine release with the answer's knobs."""
    extra = extra or {}
    name = engine_name(result)
    engine, release = table_release(name)
    table, profile = flag_table(engine, release), get_engine(name)
    assert profile.spelling is not None  # table_release refuses an engine without a launch command
    argv, flags, notes = [*profile.spelling.written_entry, result.model.model_id], {}, []
    for knob, value in _values(profile, result, extra).items():
        if value is None or value is False or (knob in EITHER and knob not in profile.spelling.flags):
            continue
        flag, note = _flag(profile.spelling, table, knob, value)
        if flag is None:
            notes += [note] if note else []
            continue
        flags[flag] = value
        argv += [flag] if table.flags[flag].switch else [flag, *(map(str, value) if isinstance(value, list) else
                                                                 [str(value)])]
    return Written(engine=name, release=release, argv=tuple(argv), flags=flags, layout=layout_of(result, extra),
                   notes=tuple(notes))
