"""`kvplan engines`: the engine releases kvplan follows and what changed in each, with its source."""

from __future__ import annotations

from typing import Annotated

from kvplan.cli.common import emit
from kvplan.cli.engine_options import Engines
from kvplan.cli.expand import command
from kvplan.cli.options import OUTPUT, Json, option

Release = Annotated[str | None, option("--release", "One release's rules, with the file:line they were read from "
                                      "(vllm@0.19, sglang@0.5.2).", OUTPUT, "NAME")]


@command
def engines(engine: Engines = None, release: Release = None, json: Json = False) -> None:
    """The releases kvplan follows per engine (every vLLM minor from 0.8, SGLang, TensorRT-LLM, transformers): a
    summary; with --release (or --engine) the rules new in each release, with the file:line of its code; --json
    all of it."""
    from kvplan.engines.listing import engine_releases
    from kvplan.render.engines import engines_payload, engines_summary, engines_tables

    asked = [release] if release else engine
    payload = engines_payload(engine_releases(asked))
    emit(payload, json, engines_tables if asked else engines_summary)
