"""`kvplan mcp` end to end: a client of the official MCP SDK spawns `python -m kvplan mcp` over stdio, lists the
tools with their JSON Schemas, and gets the CLI's answers; kvplan's errors come back as tool errors, one line."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

import kvplan

mcp = pytest.importorskip("mcp")
anyio = pytest.importorskip("anyio")
jsonschema = pytest.importorskip("jsonschema")
ROOT = Path(__file__).resolve().parents[2]
TOOLS = ["size", "capacity", "fit", "reconcile", "models", "engines"]
ASK = {"model": "Qwen/Qwen3-8B", "gpu": "H100", "tensor_parallel_size": 2, "max_model_len": "32k"}
LOG = ROOT / "tests" / "data" / "logs" / "vllm-v066-internvl3-78b-tp8-l40s.log"


def session(calls: list[tuple[str, dict[str, Any]]]) -> tuple[Any, list[Any]]:
    """The server's tools, then each call's result: one server process, spawned as an MCP client does."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    server = StdioServerParameters(command=sys.executable, args=["-m", "kvplan", "mcp"], env=env, cwd=str(ROOT))

    async def run() -> tuple[Any, list[Any]]:
        async with stdio_client(server) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            listed = await client.list_tools()
            return listed, [await client.call_tool(name, arguments) for name, arguments in calls]

    return anyio.run(run)


@pytest.fixture(scope="module")
def served() -> tuple[Any, list[Any]]:
    return session([
        ("capacity", ASK),
        ("capacity", {"model": "Qwen/Qwen3-8B", "gpu": "H900"}),
        ("size", {"model": "Qwen/Qwen3-8B", "tp": 2, "max_model_len": 32768, "batch": 8}),
        ("fit", {"model": "Qwen/Qwen3-8B", "gpu": "H100,L40S", "max_model_len": "32k", "batch": 16}),
        ("reconcile", {"log": LOG.read_text(), "model": "Qwen/Qwen2.5-72B"}),
        ("capacity", {"model": "Qwen/Qwen3-8B", "tensr_parallel_size": 2}),
    ])


def test_the_tools_are_listed_with_their_schemas(served: tuple[Any, list[Any]]) -> None:
    listed, _ = served
    assert [t.name for t in listed.tools] == TOOLS
    for tool in listed.tools:
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        jsonschema.Draft202012Validator.check_schema(tool.output_schema)
        assert tool.output_schema["type"] == "object" and tool.description
    capacity = next(t for t in listed.tools if t.name == "capacity")
    assert capacity.input_schema["required"] == ["model"] and "gpu_memory_utilization" in capacity.input_schema[
        "properties"]


def test_capacity_is_the_cli_answer(served: tuple[Any, list[Any]], run_cli: Any) -> None:
    listed, (answer, *_) = served
    code, out, err = run_cli("capacity", "Qwen/Qwen3-8B", "--gpu", "H100", "--tp", "2", "--max-model-len", "32k",
                             "--json")
    assert code == 0, err
    assert not answer.is_error and answer.structured_content == json.loads(out)
    assert json.loads(answer.content[0].text) == json.loads(out)
    schema = next(t for t in listed.tools if t.name == "capacity").output_schema
    jsonschema.Draft202012Validator(schema).validate(answer.structured_content)


def test_an_error_is_a_tool_error_with_kvplans_message(served: tuple[Any, list[Any]]) -> None:
    _, (_, unknown_gpu, *_, typo) = served
    with pytest.raises(kvplan.KvplanError) as library:
        kvplan.capacity("Qwen/Qwen3-8B", gpu="H900")
    assert unknown_gpu.is_error and unknown_gpu.content[0].text == str(library.value)
    assert "\n" not in unknown_gpu.content[0].text
    assert typo.is_error and "did you mean 'tensor_parallel_size'" in typo.content[0].text


def test_size_fit_and_reconcile_answer_as_the_cli(served: tuple[Any, list[Any]], run_cli: Any) -> None:
    _, (_, _, size, fit, reconcile, _) = served
    _, out, _ = run_cli("size", "Qwen/Qwen3-8B", "--tp", "2", "--max-model-len", "32768", "--batch", "8", "--json")
    assert size.structured_content == json.loads(out)
    _, out, _ = run_cli("fit", "Qwen/Qwen3-8B", "--gpu", "H100,L40S", "--max-model-len", "32k", "--batch", "16",
                        "--json")
    assert fit.structured_content == json.loads(out)
    _, out, _ = run_cli("reconcile", str(LOG), "--model", "Qwen/Qwen2.5-72B", "--json")
    assert reconcile.structured_content == json.loads(out)
