"""`kvplan fit --disaggregated`: the two pools as JSON (``disaggregated`` beside fit's keys) and as lines.

JSON keys: ``disaggregated`` {``ratio``, ``prefill``, ``decode``}, each pool {``role``, ``replicas``,
``requests_per_replica``, ``gpu``, ``tp``, ``pp``, ``dp``, ``ep``, ``kv_dtype``, ``gpus_per_replica``,
``kv_budget_bytes_per_gpu``, ``kv_tokens``, ``transfer`` (the ``role`` summary of ``capacity --role``), ``command``}
(``null`` when no layout holds one request).
"""

from __future__ import annotations

from typing import Any

from kvplan.planning.disaggregated import Disaggregated, Pool
from kvplan.render import gib
from kvplan.render.capacity import capacity_payload, launch_of
from kvplan.render.payload import plain


def pool_json(pool: Pool | None) -> dict[str, Any] | None:
    if pool is None:
        return None
    payload, written = capacity_payload(pool.result), launch_of(pool.result, pool.launch)
    layout = payload.layout
    return {"role": pool.role, "replicas": pool.replicas, "requests_per_replica": pool.requests_per_replica,
            "gpu": payload.gpu, "tp": layout.tp, "pp": layout.pp, "dp": layout.dp, "ep": layout.ep,
            "kv_dtype": payload.kv_dtype, "gpus_per_replica": layout.gpus,
            "kv_budget_bytes_per_gpu": payload.kv_budget_bytes_per_gpu, "kv_tokens": payload.kv_tokens,
            "transfer": plain(pool.result.extras.role), "command": written.command if written else None}


def disaggregated_json(d: Disaggregated) -> dict[str, Any]:
    return {"ratio": f"{d.ratio[0]}:{d.ratio[1]}", "prefill": pool_json(d.prefill), "decode": pool_json(d.decode)}


def disaggregated_lines(d: Disaggregated) -> list[str]:
    lines = []
    for pool in (d.prefill, d.decode):
        if pool is None:
            continue
        p = pool_json(pool)
        assert p is not None
        lines += [f"{pool.role} pool: {pool.replicas} replica(s) of {p['gpus_per_replica']} {p['gpu']} (tp {p['tp']}"
                  f", pp {p['pp']}); KV budget {gib(p['kv_budget_bytes_per_gpu'])} per GPU, {p['kv_tokens']:,} "
                  f"tokens, {pool.requests_per_replica} requests at max length each; "
                  f"{gib(p['transfer']['transfer_bytes_per_request'])} moved per request",
                  f"launch ({pool.role}): {p['command']}"]
    return lines or ["disaggregated: no layout holds one request"]
