"""`kvplan engines`: the engine releases kvplan follows and what changed in each, with its source."""

from __future__ import annotations

from kvplan.cli.common import emit
from kvplan.cli.engine_options import Engines
from kvplan.cli.expand import command
from kvplan.cli.options import Json


@command
def engines(engine: Engines = None, json: Json = False) -> None:
    """The releases kvplan follows per engine (every vLLM minor from 0.8, SGLang, TensorRT-LLM, transformers) and,
    for each, the rules new in it with the file:line of that release's code. --engine narrows it (vllm,
    vllm@0.19)."""
    from kvplan.engines.listing import engine_releases
    from kvplan.render.engines import engines_payload, engines_tables

    emit(engines_payload(engine_releases(engine)), json, engines_tables)
