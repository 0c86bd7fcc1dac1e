"""`kvplan size` and `kvplan models`: the size payload (its keys are a contract) and its tables."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kvplan.formulas.layout import Group
from kvplan.formulas.sizing import KvCacheResult
from kvplan.render import human_bytes
from kvplan.render.tables import Table
from kvplan.specs import AttnSpec, LayerSpec, MLAAttn, parts
from kvplan.units import cdiv

if TYPE_CHECKING:
    from rich.console import RenderableType


def _attention_part(spec: LayerSpec) -> LayerSpec:
    """What a layer group's heads columns show: its (first) attention cache."""
    return next((p for p in parts(spec) if isinstance(p, (MLAAttn, AttnSpec))), spec)


def _heads_and_dims(group: Group) -> dict[str, int]:
    spec, per_gpu = _attention_part(group.spec), _attention_part(group.spec_per_gpu)
    if isinstance(spec, MLAAttn):
        return {"num_kv_heads": 1, "num_kv_heads_per_gpu": 1, "head_dim": spec.latent_dim, "v_head_dim": 0,
                "kv_lora_rank": spec.kv_lora_rank, "qk_rope_head_dim": spec.qk_rope_head_dim}
    if isinstance(spec, AttnSpec):
        assert isinstance(per_gpu, AttnSpec)
        return {"num_kv_heads": spec.num_kv_heads, "num_kv_heads_per_gpu": per_gpu.num_kv_heads,
                "head_dim": spec.head_dim, "v_head_dim": spec.v_head_dim}
    return {"num_kv_heads": 0, "num_kv_heads_per_gpu": 0, "head_dim": 0, "v_head_dim": 0}


def group_payload(group: Group, result: KvCacheResult) -> dict[str, Any]:
    layers_on_gpu = group.stage_layers[result.heaviest_stage]
    return {
        "kind": group.spec.kind,
        "num_layers": group.num_layers,
        "num_layers_per_gpu": layers_on_gpu,
        **_heads_and_dims(group),
        "window": group.window,
        "bytes_per_token_per_layer": group.bytes_per_token_per_layer,
        "bytes_per_token": group.num_layers * group.bytes_per_token_per_layer,
        "bytes_per_token_per_gpu": cdiv(layers_on_gpu * group.bytes_per_token_per_layer_per_gpu, result.layout.dcp),
        "state_bytes_per_sequence": group.num_layers * group.state_bytes_per_layer,
        "state_bytes_per_sequence_per_gpu": layers_on_gpu * group.state_bytes_per_layer_per_gpu,
        **({"encoder_tokens": group.encoder_tokens,
            "encoder_bytes_per_sequence": group.num_layers * group.encoder_tokens
            * group.encoder_bytes_per_token_per_layer} if group.encoder_tokens else {}),
    }


def size_payload(result: KvCacheResult) -> dict[str, Any]:
    """The `kvplan size --json` contract (keys are stable; new keys may be added)."""
    layout = result.layout
    return {
        "model": layout.model.model_id,
        "source": layout.model.source,
        "attention": layout.attention,
        "kv_dtype": layout.kv_dtype.name,
        "parallel": {"tp": layout.tp, "pp": layout.pp, "dcp": layout.dcp},
        "layer_groups": [group_payload(g, result) for g in layout.groups],
        "bytes_per_token": result.bytes_per_token,
        "bytes_per_token_per_gpu": result.bytes_per_token_per_gpu,
        "seq_len": result.max_model_len,
        "batch": result.batch,
        "block_size": layout.block_size,
        "bytes_per_sequence": result.bytes_per_sequence,
        "bytes_per_sequence_per_gpu": result.bytes_per_sequence_per_gpu,
        "bytes_per_sequence_paged": result.bytes_per_sequence_paged,
        "bytes_per_sequence_paged_per_gpu": result.bytes_per_sequence_paged_per_gpu,
        "total_bytes": result.total_bytes,
        "total_bytes_per_gpu": result.total_bytes_per_gpu,
        "total_bytes_paged": result.total_bytes_paged,
        "total_bytes_paged_per_gpu": result.total_bytes_paged_per_gpu,
        "total_bytes_all_gpus": result.total_bytes_all_gpus,
        "num_gpus": layout.num_gpus,
        "max_model_len": layout.model.max_model_len,
        "model_dtype": layout.model.dtype,
        "notes": list(result.notes),
    }


def size_tables(payload: dict[str, Any]) -> list[RenderableType]:
    """The `kvplan size` table: one row per layer group, then the totals."""
    par = payload["parallel"]
    title = (f"{payload['model']}: {payload['attention']}, KV {payload['kv_dtype']}, "
             f"tp {par['tp']} pp {par['pp']} dcp {par['dcp']}")
    groups = Table(title=title, title_justify="left")
    for name in ("layers", "kind", "KV heads (per GPU)", "head dim K/V", "window", "B/token", "B/token/GPU"):
        groups.add_column(name, justify="left" if name == "kind" else "right")
    for g in payload["layer_groups"]:
        window = "-" if g["window"] is None else f"{g['window']:,}"
        groups.add_row(str(g["num_layers"]), g["kind"], f"{g['num_kv_heads']} ({g['num_kv_heads_per_gpu']})",
                       f"{g['head_dim']}/{g['v_head_dim']}", window, f"{g['bytes_per_token']:,}",
                       f"{g['bytes_per_token_per_gpu']:,}")
    totals = Table(title=f"{payload['batch']} × {payload['seq_len']:,} tokens, block size {payload['block_size']}",
                   title_justify="left")
    for i, name in enumerate(("", "whole model (B)", "", "per GPU (B)", "")):
        totals.add_column(name, justify="right" if i else "left")
    rows = [("bytes / token", "bytes_per_token", "bytes_per_token_per_gpu"),
            ("bytes / sequence", "bytes_per_sequence", "bytes_per_sequence_per_gpu"),
            ("bytes / sequence, paged", "bytes_per_sequence_paged", "bytes_per_sequence_paged_per_gpu"),
            ("total", "total_bytes", "total_bytes_per_gpu"),
            ("total, paged", "total_bytes_paged", "total_bytes_paged_per_gpu")]
    for label, whole, per_gpu in rows:
        totals.add_row(label, f"{payload[whole]:,}", human_bytes(payload[whole]), f"{payload[per_gpu]:,}",
                       human_bytes(payload[per_gpu]))
    gpus = payload["num_gpus"]
    totals.add_row(f"total, all {gpus} GPUs" if gpus > 1 else "total, 1 GPU", f"{payload['total_bytes_all_gpus']:,}",
                   human_bytes(payload["total_bytes_all_gpus"]), "", "")
    return [groups, totals]


def models_tables(rows: list[dict[str, Any]]) -> list[RenderableType]:
    """`kvplan models`: one row per bundled model."""
    table = Table(title="bundled models (KV dtype auto)", title_justify="left")
    for name in ("id", "attention", "layers", "kv heads", "head dim", "bytes/token", "max len"):
        table.add_column(name, justify="left" if name in ("id", "attention") else "right")
    for r in rows:
        table.add_row(r["id"], r["attention"], str(r["num_layers"]), str(r["num_kv_heads"]), str(r["head_dim"]),
                      f"{r['bytes_per_token']:,}", f"{r['max_model_len'] or '-':,}" if r["max_model_len"] else "-")
    return [table]


def model_row(result: KvCacheResult) -> dict[str, Any]:
    """`kvplan models --json`: one object per model, from a size result."""
    payload = size_payload(result)
    first = next((g for g in payload["layer_groups"] if g["kind"] not in ("linear", "none")), None) or {}
    return {"id": payload["model"], "attention": payload["attention"],
            "num_layers": sum(g["num_layers"] for g in payload["layer_groups"]),
            "num_kv_heads": first.get("num_kv_heads", 0), "head_dim": first.get("head_dim", 0),
            "bytes_per_token": payload["bytes_per_token"], "kv_dtype": payload["kv_dtype"],
            "max_model_len": payload["max_model_len"],
            "layer_kinds": {g["kind"]: g["num_layers"] for g in payload["layer_groups"]}}
