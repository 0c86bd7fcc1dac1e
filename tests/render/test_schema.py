"""`kvplan schema COMMAND`: JSON Schemas generated from the typed payloads validate what the commands print, for
every bundled model; a key the payload does not declare, or a value of another type, fails."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kvplan.config import bundled_index
from kvplan.render.schema import COMMANDS, command_schema

jsonschema = pytest.importorskip("jsonschema")
REPO = Path(__file__).resolve().parents[2]
LOG = "tests/data/logs/vllm-v066-internvl3-78b-tp8-l40s.log"


def schema(run_cli: Any, command: str) -> dict[str, Any]:
    code, out, err = run_cli("schema", command)
    assert code == 0, err
    printed = json.loads(out)
    assert printed == command_schema(command)
    jsonschema.Draft202012Validator.check_schema(printed)
    return printed


def validate(instance: Any, against: dict[str, Any]) -> None:
    jsonschema.Draft202012Validator(against).validate(instance)


def test_capacity_json_of_every_bundled_model_validates(run_cli: Any) -> None:
    capacity = schema(run_cli, "capacity")
    failed = []
    for model in bundled_index():
        code, out, _ = run_cli("capacity", model, "--gpu", "H200", "--json")
        if code == 2:  # a model an engine cannot plan (its error, one line) prints no JSON
            continue
        try:
            validate(json.loads(out), capacity)
        except jsonschema.ValidationError as exc:
            failed.append(f"{model}: {exc.message} at {list(exc.absolute_path)}")
    assert not failed, failed


@pytest.mark.parametrize("args", [
    pytest.param(("size", "Qwen/Qwen3-8B", "--tp", "2", "--explain"), id="size-explain"),
    pytest.param(("size", "meta-llama/Llama-3.1-8B", "--shared-prefix", "1k", "--batch", "8"), id="size-workload"),
    pytest.param(("capacity", "Qwen/Qwen3-8B", "--engine", "vllm,sglang", "--kv-cache-dtype", "auto,fp8"),
                 id="capacity-list"),
    pytest.param(("capacity", "Qwen/Qwen3-8B", "--explain"), id="capacity-explain"),
    pytest.param(("fit", "Qwen/Qwen3-8B", "--max-model-len", "32k", "--batch", "16", "--gpu", "H100,L40S"), id="fit"),
    pytest.param(("compare", "Qwen/Qwen3-8B", "meta-llama/Llama-3.1-8B", "--engine", "vllm"), id="compare"),
    pytest.param(("reconcile", LOG, "--model", "Qwen/Qwen2.5-72B"), id="reconcile"),
    pytest.param(("models",), id="models"),
    pytest.param(("engines",), id="engines"),
    pytest.param(("waste", "meta-llama/Llama-3.1-8B", "--lengths", "fixed:1000:8", "--max-model-len", "4k"), id="waste"),
])
def test_each_command_json_validates(run_cli: Any, args: tuple[str, ...]) -> None:
    code, out, err = run_cli(*args, "--json")
    assert code in (0, 1), err
    validate(json.loads(out), schema(run_cli, args[0]))


def test_sweep_json_lines_validate(run_cli: Any) -> None:
    code, out, err = run_cli("sweep", "Qwen/Qwen3-8B", "--max-model-len", "4k,32k", "--engine", "vllm", "--json")
    assert code == 0, err
    line = schema(run_cli, "sweep")
    for text in out.splitlines():
        validate(json.loads(text), line)


def test_the_schema_refuses_an_undeclared_key_and_a_wrong_type(run_cli: Any) -> None:
    _, out, _ = run_cli("capacity", "Qwen/Qwen3-8B", "--json")
    answer, capacity = json.loads(out), schema(run_cli, "capacity")
    with pytest.raises(jsonschema.ValidationError):
        validate({**answer, "undeclared": 1}, capacity)
    with pytest.raises(jsonschema.ValidationError):
        validate({**answer, "kv_tokens": "many"}, capacity)
    without = dict(answer)
    del without["kv_tokens"]
    with pytest.raises(jsonschema.ValidationError):
        validate(without, capacity)


def test_the_published_schemas_are_current() -> None:
    """docs/reference/schemas/COMMAND.json: `python tools/readme_examples.py` writes them."""
    for command in COMMANDS:
        published = REPO / "docs" / "reference" / "schemas" / f"{command}.json"
        assert json.loads(published.read_text()) == command_schema(command), command


def test_a_command_without_json_has_no_schema(run_cli: Any) -> None:
    code, out, err = run_cli("schema", "launch")
    assert code == 2 and out == "" and "has no --json output" in err
