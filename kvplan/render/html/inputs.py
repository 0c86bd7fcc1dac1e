"""The page's header (the answer at a glance) and section 1: the inputs, where the config came
from, the fields that decided the answer, the engine releases applied and every default assumed."""

from __future__ import annotations

from collections.abc import Iterable

from kvplan.render import human_bytes
from kvplan.render.capacity import CapacityPayload
from kvplan.render.html.markup import Html, esc, items, num, section, tag
from kvplan.render.report import ReportPayload
from kvplan.render.report_inputs import InputsPayload
from kvplan.render.size import SizePayload


def _dl(rows: Iterable[tuple[str, str]]) -> Html:
    return Html('<dl class="kv">' + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in rows) + "</dl>")


def gpu_of(payload: ReportPayload) -> tuple[str | None, int | None]:
    """The GPU and its memory, as the first engine that answered saw them."""
    first = next((p for p in payload.capacity if p.gpu), None)
    return (first.gpu, first.gpu_memory_bytes) if first else (None, None)


def _card(key: str, value: str, sub: str) -> str:
    return (f'<div class="card"><div class="k">{esc(key)}</div><div class="v">{esc(value)}</div>'
            f'<div class="s">{esc(sub)}</div></div>')


def _engine_line(p: CapacityPayload) -> str:
    if p.error or p.refusal:
        return f"{p.kv_dtype}: refused"
    conc = p.max_concurrency_log or f"{num(p.requests_at_max_model_len)} requests fit"
    return f"{p.kv_dtype}: {num(p.kv_tokens)} tokens, {conc}"


def _engine_card(payload: ReportPayload, engine: str) -> str:
    rows = [p for p in payload.capacity if p.engine == engine]
    head = rows[0]
    value = "refused" if head.error or head.refusal else f"{num(head.kv_tokens)} tokens"
    return _card(head.engine_version, value, " · ".join(_engine_line(p) for p in rows))


def header(payload: ReportPayload, command: str | None) -> Html:
    inputs, first = payload.inputs, payload.size[0]
    par = inputs.parallel
    gpu, _ = gpu_of(payload)
    where = f"{gpu or 'no GPU'} · tp {par.tp} pp {par.pp}" + (f" dcp {par.dcp}" if par.dcp > 1 else "")
    sub = (f"{where} · max_model_len {num(inputs.max_model_len)} · KV {', '.join(inputs.kv_dtypes)} · "
           + ", ".join(e.version for e in inputs.engines))
    cards = [_card("KV per token", human_bytes(first.bytes_per_token),
                   f"{num(first.bytes_per_token_per_gpu)} B per GPU ({first.kv_dtype})"),
             _card(f"one {num(first.seq_len)}-token sequence", human_bytes(first.bytes_per_sequence_paged),
                   f"{human_bytes(first.bytes_per_sequence_paged_per_gpu)} per GPU, paged")]
    cards += [_engine_card(payload, e.engine) for e in inputs.engines]
    cmd = tag("code", command, "cmd") if command else ""
    return Html(f'<header><div class="inner"><h1>KV cache plan: {esc(payload.model)}</h1>'
                f'<p class="sub">{esc(sub)}</p>{cmd}<div class="glance">{"".join(cards)}</div></div></header>')


def _model_rows(i: InputsPayload, size: SizePayload) -> list[tuple[str, str]]:
    f = i.fields
    kinds: dict[str, int] = {}
    for g in size.layer_groups:
        kinds[g.kind] = kinds.get(g.kind, 0) + g.num_layers
    rows = [("model", i.model), ("config", i.config),
            ("architecture", f"{', '.join(f.architectures or ['-'])} (model_type {f.model_type})"),
            ("weights", f.model_dtype + (f", quantization {f.quantization}" if f.quantization else "")),
            ("layers", f"{f.num_layers}: " + ", ".join(f"{k} {n}" for k, n in kinds.items())),
            ("attention", size.attention), ("heads / KV heads", f"{f.num_attention_heads} / {f.num_kv_heads}")]
    if f.kv_lora_rank:
        rows += [("MLA latent", f"kv_lora_rank {f.kv_lora_rank} + qk_rope_head_dim {f.qk_rope_head_dim}"),
                 ("head dim K / V (decompressed)", f"{f.qk_nope_head_dim} + {f.qk_rope_head_dim} / "
                                                   f"{f.mla_v_head_dim}")]
    else:
        rows.append(("head dim K / V", f"{f.head_dim} / {f.v_head_dim}"))
    rows.append(("hidden size", num(f.hidden_size)))
    if f.sliding_window:
        rows.append(("sliding window", f"{num(f.sliding_window)} tokens"))
    if f.attention_chunk_size:
        rows.append(("attention chunk", f"{num(f.attention_chunk_size)} tokens"))
    if s := f.linear_state:
        rows.append(("linear state", f"conv_kernel {s.conv_kernel}, conv_channels {s.conv_channels}, "
                                     f"{s.num_state_heads} heads × {s.state_rows} × {s.state_cols}"))
    rows.append(("config max length", num(f.max_position_embeddings)))
    return rows


def _run_rows(payload: ReportPayload) -> list[tuple[str, str]]:
    i, first = payload.inputs, payload.size[0]
    par = i.parallel
    gpu, memory = gpu_of(payload)
    budget = i.kv_budget_bytes
    return [("max_model_len", num(i.max_model_len)),
            ("parallel", f"tp {par.tp}, pp {par.pp}, dcp {par.dcp}: {first.num_gpus} GPU(s)"),
            ("GPU", "-" if gpu is None else f"{gpu}, {num(memory)} B ({human_bytes(memory or 0)})"),
            ("KV dtypes", ", ".join(i.kv_dtypes)),
            ("KV budget", "given: " + ", ".join(f"{num(b)} B" for b in budget) if budget else
             "estimated by each engine's rule (section 3)"),
            ("overhead", f"given: {num(i.overhead_bytes)} B" if i.overhead_bytes is not None else "-"),
            ("weights dtype", i.weights_dtype or "the checkpoint's"),
            ("block size", num(i.block_size) if i.block_size else "each engine's"),
            ("engine rules", ", ".join(f"{e.version} ({e.engine})" for e in i.engines))]


def inputs_section(payload: ReportPayload) -> Html:
    i = payload.inputs
    body = [f'<div class="cols"><div><h3>Model</h3>{_dl(_model_rows(i, payload.size[0]))}</div>'
            f"<div><h3>This plan</h3>{_dl(_run_rows(payload))}</div></div>",
            tag("p", Html(f'config file: <code class="mono">{esc(i.config_path)}</code>')),
            "<h3>Assumed (not set on the command line)</h3>", items(i.assumed),
            items(i.model_notes)]
    return section("inputs", 1, "Inputs and provenance", "What the answer was computed from. Byte counts are exact "
                   "integers; GiB = 2^30 B.", body)
