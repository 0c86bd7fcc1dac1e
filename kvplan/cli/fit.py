"""`kvplan fit`: the cheapest setups (GPU type, TP × PP, replicas, KV dtype) that serve a load."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kvplan.cli.common import emit
from kvplan.cli.engine_options import EngineArgs, Engines, Gpu, memory_options
from kvplan.cli.expand import Expand, command
from kvplan.cli.launch import Format, fit_manifest, output_format, yaml_text
from kvplan.cli.options import (
    MEMORY,
    PARALLEL,
    GpusPerNode,
    Json,
    KvDtypes,
    ModelArgs,
    cache_options,
    listed,
    option,
    switch,
)
from kvplan.errors import InputError
from kvplan.formulas import CacheRequest
from kvplan.planning.request import CapacityRequest, Memory

if TYPE_CHECKING:
    from kvplan.planning.fit import FitResult

MAX_PRICE_FILE_BYTES = 1024**2


def read_prices(spec: str) -> dict[str, float]:
    """`H100=2.49,H200=3.5`, or a .toml/.csv file of prices."""
    from kvplan.planning.prices import parse_prices, prices_from_file_text

    if "=" in spec:
        return parse_prices(spec)
    try:
        with Path(spec).open("rb") as handle:
            text = handle.read(MAX_PRICE_FILE_BYTES).decode("utf-8", errors="replace")
    except OSError as exc:
        raise InputError(f"cannot read the price file {spec}: {exc.strerror or exc}", arg="prices") from None
    return prices_from_file_text(text, Path(spec).suffix)


Price = Annotated[str | None, option("--price", "Price per GPU-hour: H100=2.49,H200=3.5, or a .toml or .csv "
                                     "file; .toml: H100 = 2.49; .csv: gpu,price; ranks by cost per hour.", MEMORY, "PRICES")]
MaxReplicas = Annotated[int | None, option("--max-replicas", "Most data-parallel replicas (1: one replica serves "
                                           "it all; default: as many as --max-gpus allows).", PARALLEL, "N")]
Nodes = Annotated[int | None, option("--nodes", "Most nodes in all, of --gpus-per-node GPUs each (default 8; "
                                     "--max-gpus within it).", PARALLEL, "N")]
MaxGpus = Annotated[int | None, option("--max-gpus", "Most GPUs in all, replicas × tp × pp (default 8 nodes).",
                                       PARALLEL, "N")]
Disaggregated = Annotated[bool, switch("--disaggregated", "Prefill and decode pools, each with its budget, transfer bytes "
                                       "and launch command; the decode pool holds the load (with its decode reserve), "
                                       "the prefill pool --pd-ratio of its replicas.", PARALLEL)]
PdRatio = Annotated[str, option("--pd-ratio", "Prefill:decode replicas with --disaggregated.", PARALLEL, "P:D")]
# tp, pp, dp, ep and the KV dtype are what fit searches; the GPU is a list of types here.
FitCache = Annotated[CacheRequest, Expand(cache_options, without=("tp", "pp", "dp", "ep", "kv_dtype"))]
FitMemory = Annotated[Memory, Expand(memory_options, without=("gpu",))]


@command
def fit(model: ModelArgs, cache: FitCache, settings: EngineArgs, memory: FitMemory, gpu: Gpu = None,
        prices: Price = None, max_replicas: MaxReplicas = None, engine: Engines = None, kv_dtype: KvDtypes = None,
        gpus_per_node: GpusPerNode = 8, max_gpus: MaxGpus = None, nodes: Nodes = None, json: Json = False,
        format: Format = None, disaggregated: Disaggregated = False, pd_ratio: PdRatio = "1:1") -> None:
    """Cheapest setups serving --batch requests (also --concurrency) of --max-model-len tokens: GPU type,
    replicas × layout (TP × PP; for a model with experts also DP attention + EP), KV dtype.

    Without --gpu, every GPU type of the catalog. Ranking: cost per hour (--price; unpriced last), GPUs, fewer PP
    stages, precise KV dtype, requests, smaller TP.
    --kv-cache-dtype takes a comma list or any (auto and fp8). A draft model, LoRA slots, ... beside the KV cache
    are in every layout tried. Exit 0 when a setup serves the load; 1 when none does (the closest are shown).
    """
    from kvplan.cli.progress import progress
    from kvplan.planning.fit import fit as run

    fmt = output_format(format, json)
    engines = _one_engine(engine)
    if cache.max_model_len is None:
        raise InputError("fit needs max_model_len: the tokens of each request (32k)", arg="max_model_len")
    question = CapacityRequest(model=model, cache=cache, settings=settings, memory=memory)
    searched: dict[str, Any] = dict(
        concurrency=cache.batch, gpu=[g for g in gpu.split(",") if g.strip()] if gpu else None, max_gpus=max_gpus,
        kv_dtype=listed(kv_dtype, "kv_dtype", "auto"), gpus_per_node=8 if gpus_per_node is None else gpus_per_node,
        nodes=nodes, max_replicas=max_replicas, prices=read_prices(prices) if prices else None)
    if disaggregated:
        return _disaggregated(question, pd_ratio, fmt, engines[0], searched)
    with progress("fitting") as step:
        result = run(question, engine=engines[0], progress=step, **searched)
    _show(result, fmt)
    if result.best is None:
        raise typer.Exit(1)


def _show(result: FitResult, fmt: str) -> None:
    """fit's answer as YAML, JSON or tables with the winner's launch command."""
    from kvplan.render.fit import fit_payload, fit_tables
    from kvplan.render.tables import CommandLine

    payload = fit_payload(result, commands=fmt != "table")
    if fmt == "yaml":
        print(yaml_text(fit_manifest(payload)), end="")
        return
    best = payload.best
    launch = [CommandLine(f"launch, each of {best.replicas} replica{'s' * (best.replicas != 1)}", best.command)] \
        if fmt == "table" and best is not None and best.command else None
    told = [*([result.why] if result.why and fmt == "table" else []), *(launch or [])]
    emit(payload, fmt == "json", fit_tables, told or None, notes=result.notes)


def _one_engine(engine: list[str] | None) -> tuple[str, ...]:
    engines = listed(engine, "engine", "vllm")
    if len(engines) > 1 or engines[0].lower() == "all":
        raise InputError("fit takes one engine: vllm, sglang, trtllm or hf (or one release)", arg="engine")
    return engines


def _disaggregated(question: CapacityRequest, ratio: str, fmt: str, engine: str, options: dict[str, Any]) -> None:
    """fit --disaggregated: fit's answer for the decode side and the two pools (exit 1 when none holds the load)."""
    from kvplan.planning.disaggregated import disaggregated, parse_ratio
    from kvplan.render.disaggregated import disaggregated_json, disaggregated_lines
    from kvplan.render.fit import fit_payload, fit_tables
    from kvplan.render.payload import plain

    if fmt == "yaml":
        raise InputError("--disaggregated: choose table or json", arg="format")
    found = disaggregated(question, ratio=parse_ratio(ratio), engine=engine, **options)
    payload = fit_payload(found.fitted, commands=fmt == "json")
    if fmt == "json":
        data = plain(payload)
        emit({**(data if isinstance(data, dict) else {}), "disaggregated": disaggregated_json(found)}, True,
             fit_tables, notes=found.fitted.notes)
    else:
        emit(payload, False, fit_tables, disaggregated_lines(found), notes=found.fitted.notes)
    if found.decode is None or not found.decode.replicas:
        raise typer.Exit(1)
