"""`kvplan report`'s JSON payload: the size and capacity payloads unchanged, plus what the page adds.

The page (``kvplan.render.html``) is drawn from this dict alone and embeds it, so a reader can
check every number against the page. Its ``size`` items are `kvplan size --json` objects, one
per KV dtype, and its ``capacity`` items `kvplan capacity --json` objects, one per KV dtype ×
engine; the other keys are ``inputs``, ``curves``, ``explain``, ``engine_logs``, ``budgets``,
``probe`` (the `kvplan probe --json` files given), ``probe_checks``, ``warnings`` and ``notes``.
"""

from __future__ import annotations

from typing import Any

from kvplan.engines import Settings
from kvplan.planning.budget import DEFAULT_GPU
from kvplan.render.capacity import capacity_payload, explain_lines
from kvplan.render.engine_logs import budget_terms, engine_log_lines
from kvplan.render.explain import explain, group_explain
from kvplan.render.size import size_payload
from kvplan.workflows.report import Report


def _model_fields(report: Report) -> dict[str, Any]:
    """The config fields that decide the answer."""
    m = report.model
    kinds: dict[str, int] = {}
    for kind in m.layer_kinds:
        kinds[kind] = kinds.get(kind, 0) + 1
    quant = m.raw.get("quantization_config")
    quant = quant if isinstance(quant, dict) else {}
    linear = m.linear
    return {
        "model_type": m.model_type, "architectures": m.raw.get("architectures"), "model_dtype": m.dtype,
        "quantization": quant.get("quant_method"), "num_layers": m.num_layers, "layer_kinds": kinds,
        "num_attention_heads": m.num_attention_heads, "num_kv_heads": m.num_kv_heads,
        "head_dim": None if m.is_mla else m.head_dim, "v_head_dim": None if m.is_mla else m.v_head_dim,
        "hidden_size": m.hidden_size, "kv_lora_rank": m.kv_lora_rank,
        "qk_rope_head_dim": m.qk_rope_head_dim, "qk_nope_head_dim": m.qk_nope_head_dim,
        "mla_v_head_dim": m.mla_v_head_dim, "sliding_window": m.sliding_window,
        "attention_chunk_size": m.attention_chunk_size, "max_position_embeddings": m.max_model_len,
        "linear_state": None if linear is None else {
            "conv_kernel": linear.conv_kernel, "conv_channels": linear.conv_channels,
            "num_state_heads": linear.num_state_heads, "state_rows": linear.state_rows, "state_cols": linear.state_cols},
    }


def _resolved(report: Report, engine: str) -> Settings:
    """The engine's knobs with its release's defaults filled in (what it planned with), else the user's."""
    found = (c.settings for c in report.capacities if c.engine == engine and c.settings is not None)
    return next(found, report.request.question.settings)


def _budget_defaults(report: Report) -> list[str]:
    memory, asked, out = report.request.question.memory, report.request.question.settings, []
    if memory.gpu is None and memory.gpu_memory_bytes is None:
        out.append(f"GPU: {DEFAULT_GPU} (no GPU given)")
    v = _resolved(report, "vllm")
    if memory.overhead_bytes is None:
        out.append("overhead per GPU: kvplan's budget terms (section 3: CUDA context, NCCL, profile-run activations "
                   f"of {v.max_num_batched_tokens or 0:,} tokens, CUDA graphs; estimates are marked)")
    if "vllm" in report.engines and asked.vllm.gpu_memory_utilization is None:
        out.append(f"vLLM gpu_memory_utilization {v.vllm.gpu_memory_utilization} (the release's default)")
    if "sglang" in report.engines and asked.sglang.mem_fraction_static is None:
        out.append("SGLang mem_fraction_static: its default for this GPU and TP (section 3 shows the value)")
    if "trtllm" in report.engines and asked.trtllm.free_gpu_memory_fraction is None:
        out.append("TensorRT-LLM free_gpu_memory_fraction: its default (section 3 shows the value)")
    return out


def assumed(report: Report) -> list[str]:
    """Every default the answer rests on that the user did not set."""
    q, m = report.request.question, report.model
    out = []
    if q.cache.max_model_len is None:
        out.append(f"max_model_len {report.max_model_len:,}: the config's" if m.max_model_len else
                   f"max_model_len {report.max_model_len:,}: the config names none (vLLM's default)")
    if q.memory.kv_budget_bytes is None:
        out += _budget_defaults(report)
    if q.memory.weights_dtype is None and q.memory.quantization is None:
        out.append(f"weights: the checkpoint's dtype and quantization_config ({m.dtype})")
    if q.cache.block_size is None:
        out.append("block size: each engine's own (section 4); the size section pages in blocks of 16")
    out += _state_defaults(report)
    v = _resolved(report, "vllm")
    out.append(f"one sequence of max_model_len tokens in the size section; vLLM max_num_seqs {v.max_num_seqs or '-'}, "
               f"async scheduling {'on' if v.vllm.async_scheduling else 'off'}, hybrid KV cache manager "
               f"{'on' if v.vllm.hybrid_kv_cache_manager else 'off'}")
    return out


def _state_defaults(report: Report) -> list[str]:
    """The state dtypes the sizes rest on, where the model has states and the user left them to it."""
    m, cache = report.model, report.request.question.cache
    if m.linear is None:
        return []
    out = [f"linear/Mamba conv state dtype: the model's ({m.dtype})"] if cache.state_dtype == "auto" else []
    if cache.ssm_state_dtype == "auto":
        out.append("recurrent state dtype: the config's (mamba_ssm_dtype and its aliases), else the conv state's")
    return out


def inputs_payload(report: Report) -> dict[str, Any]:
    q, m = report.request.question, report.model
    memory = q.memory
    return {
        "model": m.model_id, "config": report.config_origin, "config_path": m.source, **_model_fields(report),
        "max_model_len": report.max_model_len, "kv_dtypes": [s.layout.kv_dtype.name for s in report.sizes],
        "parallel": {"tp": q.cache.tp, "pp": q.cache.pp, "dcp": q.cache.dcp}, "gpu": memory.gpu,
        "gpu_memory_bytes": memory.gpu_memory_bytes,
        "kv_budget_bytes": None if memory.kv_budget_bytes is None else list(memory.kv_budget_bytes),
        "overhead_bytes": memory.overhead_bytes, "weights_dtype": memory.weights_for(m),
        "block_size": q.cache.block_size,
        "engines": [{"engine": c.engine, "version": c.plan.version} for c in report.capacities[:len(report.engines)]],
        "assumed": assumed(report), "model_notes": list(m.notes),
    }


def curves_payload(report: Report) -> dict[str, Any]:
    """The three charts' data: concurrency vs context, KV memory vs context, capacity vs TP."""
    context = [{"kv_dtype": c.label, "engine": e, "points": [
        {"max_model_len": p.max_model_len, "kv_tokens": p.kv_tokens, "max_concurrency": p.max_concurrency,
         "requests_at_max_model_len": p.requests_at_max_len} for p in c.points if p.engine == e],
        "notes": [p.note for p in c.points if p.engine == e and p.note]}
        for c in report.context_curves for e in report.engines]
    memory = [{"kv_dtype": d, "points": [{"seq_len": p.max_model_len, "bytes_per_sequence_per_gpu": p.bytes_per_sequence_per_gpu,
                                          "bytes_per_sequence_paged_per_gpu": p.bytes_per_sequence_paged_per_gpu}
                                         for p in points]} for d, points in report.memory_curves]
    first = report.capacities[:len(report.engines)]
    budgets = [{"engine": c.engine, "kv_budget_bytes_per_gpu": min(c.kv_budget_bytes_per_gpu)} for c in first
               if not c.error and min(c.kv_budget_bytes_per_gpu) > 0]
    tp = [{"kv_dtype": d, "engine": e, "max_model_len": report.max_model_len, "points": [
        {"tp": t.tp, "kv_budget_bytes_per_gpu": t.point.kv_budget_bytes_per_gpu, "kv_tokens": t.point.kv_tokens,
         "requests_at_max_model_len": t.point.requests_at_max_len, "note": t.point.note or None}
        for t in points if t.point.engine == e]} for d, points in report.tp_curves for e in report.engines]
    return {"concurrency_vs_context": context, "kv_memory_vs_context": memory, "kv_budgets": budgets,
            "capacity_vs_tp": tp}


def explain_payload(report: Report) -> dict[str, Any]:
    """--explain of every size (per group: the formula with its values) and every capacity answer."""
    sizes = [{"kv_dtype": s.layout.kv_dtype.name, "groups": [group_explain(g, s) for g in s.layout.groups],
              "lines": explain(s)} for s in report.sizes]
    capacities = [{"engine": c.engine, "kv_dtype": c.plan.kv_dtype if not c.error else None,
                   "lines": explain_lines(c)} for c in report.capacities]
    return {"size": sizes, "capacity": capacities}


def _notes(payload: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(warnings, notes) of every answer, each text once with the KV dtypes it came from; warnings are
    refusals, errors and `warning:` notes."""
    versions = {p["engine"]: p["engine_version"] for p in payload["capacity"]}
    curves = zip(payload["capacity"], payload["curves"]["concurrency_vs_context"], strict=True)  # same order
    found: dict[tuple[str, str], list[str]] = {}
    for where, kv_dtype, text in (
            *(("kvplan size", p["kv_dtype"], n) for p in payload["size"] for n in p["notes"]),
            *((versions[p["engine"]], p["kv_dtype"], n) for p in payload["capacity"] for n in p["notes"]),
            *((versions[p["engine"]], p["kv_dtype"], f"warning: refuses to start: {p['refusal']}")
              for p in payload["capacity"] if p.get("refusal")),
            *((versions[c["engine"]], c["kv_dtype"], n) for p, c in curves  # a refusal is said once, not per point
              for n in c["notes"] if not p["error"])):
        found.setdefault((where, text), []).append(kv_dtype)
    several = len(payload["size"]) > 1
    warnings: list[str] = []
    notes: list[str] = []
    for (where, text), dtypes in found.items():
        line = f"{where}" + (f" (KV {', '.join(dict.fromkeys(dtypes))})" if several else "") + f": {text}"
        (warnings if text.startswith(("warning:", "error:")) else notes).append(line)
    return warnings, notes


def probe_check_rows(report: Report) -> list[dict[str, Any]]:
    rows = []
    for c in report.probe_checks:
        row = report.request.probes[c.probe]["results"][c.result]
        rows.append({"probe": c.probe, "result": c.result, "model": row["model"], "kv_dtype": row["kv_dtype"],
                     "tp": row["tp"], "same_model": c.same_model, "measured_bytes_per_token": c.measured_bytes_per_token,
                     "kvplan_bytes_per_token": c.kvplan_bytes_per_token, "compared_with": c.compared_with,
                     "match": None if c.kvplan_bytes_per_token is None else
                     c.measured_bytes_per_token == c.kvplan_bytes_per_token})
    return rows


def report_payload(report: Report) -> dict[str, Any]:
    """The `kvplan report --json` object, which the page embeds."""
    capacities = [capacity_payload(c) for c in report.capacities]
    payload: dict[str, Any] = {
        "model": report.model.model_id, "inputs": inputs_payload(report),
        "size": [size_payload(s) for s in report.sizes], "capacity": capacities,
        "budgets": [{"engine": p["engine"], "kv_dtype": p["kv_dtype"], "terms": budget_terms(p)} for p in capacities],
        "engine_logs": [{"engine": p["engine"], "kv_dtype": p["kv_dtype"], "lines": engine_log_lines(p)}
                        for p in capacities],
        "curves": curves_payload(report), "explain": explain_payload(report),
        "probe": list(report.request.probes), "probe_checks": probe_check_rows(report),
    }
    payload["warnings"], payload["notes"] = _notes(payload)
    return payload
