"""`kvplan size` and `kvplan models`."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from kvplan.cli.common import (
    Attention,
    BlockSize,
    Dcp,
    Explain,
    Json,
    KvDtypeOpt,
    KvHeads,
    LayerTypes,
    Pp,
    QuantGroup,
    Tp,
    Window,
    emit,
    overrides,
    reports_errors,
    warn,
)
from kvplan.config import bundled_index, load_model
from kvplan.formulas import kv_cache
from kvplan.render import size_payload, size_tables
from kvplan.units import parse_positive_tokens, parse_tokens


@reports_errors
def size(
    model: Annotated[str, typer.Argument(help="Model id (bundled or in the HF cache), config.json, or folder.")],
    tp: Tp = 1, pp: Pp = 1, dcp: Dcp = 1,
    seq_len: Annotated[str | None, typer.Option("--seq-len", help="Tokens per sequence (4096, 32k); "
                                                "default: the model's max length.")] = None,
    batch: Annotated[str, typer.Option("--batch", help="Number of sequences.")] = "1",
    kv_dtype: KvDtypeOpt = "auto", block_size: BlockSize = 16, quant_group: QuantGroup = 8,
    attention: Attention = None, kv_heads: KvHeads = None, layer_types: LayerTypes = None, window: Window = None,
    json: Json = False, explain: Explain = False,
    state_dtype: Annotated[str, typer.Option("--state-dtype", help="Linear-attention/Mamba state dtype (vLLM's "
                                             "mamba_ssm_cache_dtype): auto (the model's), fp32, bf16, fp16.")] = "auto",
    shared_prefix: Annotated[str, typer.Option("--shared-prefix", help="Prompt tokens all --batch requests share "
                                               "(prefix caching; paged engines share full blocks only).")] = "0",
    beam_width: Annotated[int, typer.Option("--beam-width", help="Beams per request.")] = 1,
    prompt_len: Annotated[str | None, typer.Option("--prompt-len", help="Prompt tokens of --seq-len (shared by the "
                                                   "beams); the rest is generated per beam. Default: all.")] = None,
    allocator: Annotated[str | None, typer.Option("--allocator", help="contiguous|paged|exact: the allocator "
                                                  "reported in the workload section (all three are shown).")] = None,
) -> None:
    """KV cache per token, per sequence and per GPU."""
    m = load_model(model)
    result = kv_cache(
        m, tp=tp, pp=pp, dcp=dcp, batch=parse_positive_tokens(batch, "--batch"),
        seq_len=parse_positive_tokens(seq_len, "--seq-len") if seq_len is not None else None,
        kv_dtype=kv_dtype, block_size=block_size, quant_group=quant_group,
        overrides=overrides(attention, kv_heads, layer_types, window, m.num_layers), state_dtype=state_dtype,
    )
    warn(result.notes)

    payload, tables = size_payload(result), size_tables  # type: Any, Any
    if shared_prefix != "0" or beam_width != 1 or prompt_len or allocator:  # workflows load only when asked
        from kvplan.workflows.size_section import with_workload

        payload, tables = with_workload(
            result, payload, allocator=allocator, beam_width=beam_width, shared_prefix_tokens=parse_tokens(shared_prefix),
            prompt_tokens=parse_positive_tokens(prompt_len, "--prompt-len") if prompt_len else None)
    lines = None
    if explain:
        from kvplan.explain import explain as explain_lines

        lines = explain_lines(result)
    emit(payload, json, tables, lines)


def model_row(model_id: str) -> dict[str, Any]:
    payload = size_payload(kv_cache(load_model(model_id), seq_len=1))
    first = next((g for g in payload["layer_groups"] if g["kind"] not in ("linear", "none")), None) or {}
    return {"id": model_id, "attention": payload["attention"], "num_layers": sum(
        g["num_layers"] for g in payload["layer_groups"]), "num_kv_heads": first.get("num_kv_heads", 0),
        "head_dim": first.get("head_dim", 0), "bytes_per_token": payload["bytes_per_token"],
        "kv_dtype": payload["kv_dtype"], "max_model_len": payload["max_model_len"],
        "layer_kinds": {g["kind"]: g["num_layers"] for g in payload["layer_groups"]}}


def models_tables(rows: list[dict[str, Any]]) -> list[Any]:
    from rich.table import Table

    table = Table(title="bundled models (KV dtype auto)", title_justify="left")
    for name in ("id", "attention", "layers", "kv heads", "head dim", "bytes/token", "max len"):
        table.add_column(name, justify="left" if name in ("id", "attention") else "right")
    for r in rows:
        table.add_row(r["id"], r["attention"], str(r["num_layers"]), str(r["num_kv_heads"]), str(r["head_dim"]),
                      f"{r['bytes_per_token']:,}", f"{r['max_model_len'] or '-':,}" if r["max_model_len"] else "-")
    return [table]


@reports_errors
def models(json: Json = False) -> None:
    """The bundled models: attention kind, layers, KV heads, head dim, bytes per token."""
    emit([model_row(model_id) for model_id in bundled_index()], json, models_tables)
