"""Fuzzing the config loader: any document ends in a ModelConfig (that kv_cache accepts) or a
KvplanError subclass with a one-line message; never another exception.

Examples per test follow the hypothesis profile (tests/conftest.py): "ci" by default,
HYPOTHESIS_PROFILE=full for the 10,000-example run. Counts: --hypothesis-show-statistics.
"""

from __future__ import annotations

import json
import os
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from strategies import Doc, broken_docs, config_bytes, parallel_args, valid_docs
from typer.testing import CliRunner

import kvplan
from kvplan.cli import app
from kvplan.config import normalize
from kvplan.config.hf import MAX_CONFIG_BYTES
from kvplan.render import to_json
from kvplan.render.explain import explain
from kvplan.render.size import size_payload
from kvplan.units import parse_bytes, parse_tokens

RESULT_FIELDS = ("bytes_per_token", "bytes_per_token_per_gpu", "bytes_per_sequence", "bytes_per_sequence_per_gpu",
                 "bytes_per_sequence_paged", "bytes_per_sequence_paged_per_gpu", "total_bytes", "total_bytes_per_gpu",
                 "total_bytes_paged", "total_bytes_paged_per_gpu", "total_bytes_all_gpus")
CLI_OPTIONS = [("--tp", "2"), ("--pp", "3"), ("--dcp", "2"), ("--kv-dtype", "fp8"), ("--seq-len", "4k"),
               ("--batch", "3"), ("--block-size", "0"), ("--explain",)]
CLI_EXAMPLES = max(10, settings.default.max_examples // 20)


def assert_one_line(exc: kvplan.KvplanError) -> None:
    message = str(exc)
    assert message.strip() and "\n" not in message and "Traceback" not in message, repr(message)


def exercise(model: kvplan.ModelConfig, **args: Any) -> kvplan.KvCacheResult | None:
    """kv_cache plus everything the CLI reads from it; None when kvplan refuses the input."""
    try:
        result = kvplan.kv_cache(model, **args)
        values = {name: getattr(result, name) for name in RESULT_FIELDS}
        to_json(size_payload(result))
        explain(result)
    except kvplan.KvplanError as exc:
        assert_one_line(exc)
        return None
    for name, value in values.items():
        assert isinstance(value, int) and value >= 0, (name, value)
    return result


def assert_sane(model: kvplan.ModelConfig) -> None:
    """What every loaded model must satisfy, however odd its document was."""
    assert model.num_layers == len(model.layer_kinds) > 0
    assert set(model.layer_kinds) <= {"full", "sliding", "chunked", "linear", "none"}
    assert model.num_attention_heads > 0 and model.num_kv_heads > 0 and model.head_dim > 0 and model.v_head_dim > 0
    assert model.is_mla or model.num_attention_heads % model.num_kv_heads == 0
    assert ("sliding" in model.layer_kinds) == bool(model.sliding_window and model.sliding_window > 0)
    assert ("chunked" in model.layer_kinds) == bool(model.attention_chunk_size and model.attention_chunk_size > 0)
    assert ("linear" in model.layer_kinds) == (model.linear is not None)
    assert model.dtype in ("bf16", "fp16")
    assert model.max_model_len is None or model.max_model_len > 0


def load_or_refuse(doc: dict[str, Any]) -> kvplan.ModelConfig | None:
    try:
        model = normalize(doc, model_id="fuzz", source="fuzz.json")
    except kvplan.KvplanError as exc:
        assert_one_line(exc)
        return None
    assert_sane(model)
    return model


@given(valid_docs())
def test_valid_documents_load_as_written(case: Doc) -> None:
    doc, expected = case
    model = normalize(doc, model_id="fuzz", source="fuzz.json")
    assert_sane(model)
    assert (model.num_layers, model.num_attention_heads, model.num_kv_heads, model.head_dim) == (
        expected.num_layers, expected.num_attention_heads, expected.num_kv_heads, expected.head_dim)
    assert model.is_mla == expected.is_mla
    assert frozenset(model.layer_kinds) == expected.kinds
    result = kvplan.kv_cache(model, max_model_len=4096)  # tp 1, the model's dtype: always answerable
    assert result.bytes_per_sequence > 0


@given(broken_docs(), parallel_args())
def test_broken_documents_end_in_a_model_or_a_kvplan_error(doc: dict[str, Any], args: dict[str, Any]) -> None:
    model = load_or_refuse(doc)
    if model is not None:
        exercise(model, **args)


@given(valid_docs(), parallel_args())
def test_valid_documents_with_any_parallel_layout(case: Doc, args: dict[str, Any]) -> None:
    model = normalize(case[0], model_id="fuzz", source="fuzz.json")
    exercise(model, **args)


@given(valid_docs() | broken_docs(), parallel_args(), st.sampled_from(["vllm", "sglang", "trtllm", "hf", "x"]),
       st.one_of(st.tuples(st.integers(-(2**34), 2**38)).map(lambda b: {"kv_budget_bytes": b}),
                 st.integers(1, 2**38).map(lambda m: {"gpu_memory_bytes": m}),
                 st.sampled_from(["H100", "A100-80G", "H200", "B200", "nope"]).map(lambda g: {"gpu": g})))
def test_capacity_on_fuzzed_models(doc: Doc | dict[str, Any], args: dict[str, Any], engine: str,
                                   memory: dict[str, Any]) -> None:
    """capacity() on any loadable config, engine and memory: an answer or a KvplanError."""
    from kvplan.planning.capacity import capacity

    model = load_or_refuse(doc[0] if isinstance(doc, tuple) else doc)
    if model is None:
        return
    length = args["max_model_len"] if args["max_model_len"] is None or args["max_model_len"] > 0 else None
    try:
        result = capacity(model, engine=engine, tp=args["tp"], pp=args["pp"], dcp=args["dcp"],
                          kv_dtype=args["kv_dtype"], max_model_len=length, **memory)
    except kvplan.KvplanError as exc:
        assert_one_line(exc)
        return
    assert result.plan.kv_tokens >= 0


layer_ranges = st.lists(st.tuples(st.integers(-2, 130), st.integers(-2, 130),
                                   st.sampled_from(["full", "sliding", "chunked", "mla", "linear", "none", "x"])),
                         max_size=4).map(lambda parts: ",".join(f"{a}-{b}:{k}" for a, b, k in parts))


@given(valid_docs(), st.none() | st.sampled_from(["mha", "gqa", "mqa", "mla", "MHA", "bogus"]),
       st.none() | st.integers(-2, 130), st.none() | layer_ranges | st.text(max_size=12),
       st.none() | st.sampled_from(["0", "1", "4k", "-1", "1.5", "x", "128"]), parallel_args())
def test_overrides_end_in_a_result_or_a_kvplan_error(case: Doc, attention: str | None, kv_heads: int | None,
                                                     layer_types: str | None, window: str | None,
                                                     args: dict[str, Any]) -> None:
    """The --attention/--kv-heads/--layer-types/--window path of `kvplan size`, on any valid model."""
    from kvplan.cli.options import overrides

    model = normalize(case[0], model_id="fuzz", source="fuzz.json")
    try:
        ov = overrides(attention, kv_heads, layer_types, window)
    except kvplan.KvplanError as exc:
        assert_one_line(exc)
        return
    exercise(model, overrides=ov, **args)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@given(data=config_bytes())
@example(data=b"\xff\xfe{}")
@example(data=b"[" * 100_000)
@example(data=b'{"num_hidden_layers": 1e400, "num_attention_heads": 8, "hidden_size": 512}')
@example(data=b'{"num_hidden_layers": NaN, "num_attention_heads": 8, "hidden_size": 512}')
@example(data=b'{"num_hidden_layers": ' + b"9" * 5000 + b"}")
def test_config_files_load_or_fail_cleanly(scratch: Path, data: bytes) -> None:
    path = scratch / "config.json"
    path.write_bytes(data)
    try:
        model = kvplan.load_model(str(path))
    except kvplan.KvplanError as exc:
        assert_one_line(exc)
        return
    assert_sane(model)
    exercise(model, max_model_len=1024)


names = st.text(st.sampled_from("abcXYZ019-_./~ \t\x00é:*?[]"), max_size=40) | st.text(max_size=300)


@given(name=names)
@example(name="a" * 300)  # ENAMETOOLONG from stat() was an OSError traceback
@example(name="~nosuchuser_kvplan/config.json")  # RuntimeError from expanduser()
@example(name="~nosuchuser_kvplan")
@example(name="a/" + "b" * 300)
@example(name="/" + "x" * 5000)
def test_any_model_name_resolves_or_fails_cleanly(name: str) -> None:
    try:
        kvplan.load_model(name)
    except kvplan.KvplanError as exc:
        assert_one_line(exc)


@settings(max_examples=CLI_EXAMPLES)
@given(data=config_bytes(), options=st.lists(st.sampled_from(CLI_OPTIONS), max_size=3, unique=True))
def test_cli_size_on_fuzzed_files(scratch: Path, data: bytes, options: list[tuple[str, ...]]) -> None:
    path = scratch / "cli-config.json"
    path.write_bytes(data)
    args = [arg for option in options for arg in option]
    result = CliRunner().invoke(app, ["size", str(path), "--json", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    if result.exit_code == 0:
        json.loads(result.stdout)
    else:
        assert result.exit_code == 2, (result.exit_code, result.stderr)
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("kvplan: error: "), lines


# ------------------------------------------------------------------------------------ big files

def test_ten_megabyte_valid_config_loads(tmp_path: Path) -> None:
    doc = {"model_type": "llama", "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
           "hidden_size": 4096, "padding": "x" * (10 * 1024**2)}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(doc))
    assert path.stat().st_size > 10 * 1024**2
    model = kvplan.load_model(str(path))
    # 2 (K, V) × 32 layers × 8 KV heads × (4096 / 32 = 128) × 2 B = 131,072 B per token
    assert kvplan.kv_cache(model, max_model_len=1).bytes_per_token == 131_072


@pytest.mark.parametrize("body", [
    pytest.param(b"{" + b'"a":' * 2_500_000 + b"1", id="10MB-truncated-object"),
    pytest.param(b"[" * (10 * 1024**2), id="10MB-deep-array"),
    pytest.param(os.urandom(10 * 1024**2), id="10MB-random-bytes"),
    pytest.param(b'{"a": [' + b"1," * (5 * 1024**2) + b"1]}", id="10MB-object-without-fields"),
])
def test_ten_megabyte_broken_files_are_config_errors(tmp_path: Path, body: bytes) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(body)
    with pytest.raises(kvplan.ConfigError) as info:
        kvplan.load_model(str(path))
    assert_one_line(info.value)


def test_oversized_file_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "config.json"
    with path.open("wb") as f:  # sparse: the size check must come before any read
        f.truncate(MAX_CONFIG_BYTES + 1)
    with pytest.raises(kvplan.ConfigError, match="larger than"):
        kvplan.load_model(str(path))


# ------------------------------------------------------------------------------- regressions

def test_context_longer_than_ten_million_tokens_loads() -> None:
    # Llama-4-Scout ships max_position_embeddings 10,485,760; a length cap of 10M refused it.
    doc = {"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 8,
           "hidden_size": 1024, "max_position_embeddings": 10_485_760}
    assert normalize(doc, model_id="scout-like", source="t").max_model_len == 10_485_760


# ------------------------------------------------------------------------------------ sizes

@given(st.text(max_size=40) | st.from_regex(r"\A\s*-?\d{0,40}(\.\d{0,40})?\s*[kKmMgGtTiIbBxX]{0,3}\s*\Z"))
def test_any_size_text_parses_or_fails_cleanly(text: str) -> None:
    for parse in (parse_tokens, parse_bytes):
        try:
            value = parse(text)
        except kvplan.InputError as exc:
            assert_one_line(exc)
        else:
            assert isinstance(value, int) and value >= 0


@given(st.integers(0, 10**18), st.integers(0, 10**6 - 1), st.sampled_from(["", "k", "m"]))
def test_token_counts_parse_exactly(whole: int, millionths: int, suffix: str) -> None:
    unit = {"": 1, "k": 1024, "m": 1024**2}[suffix]
    text = f"{whole}.{millionths:06d}{suffix}"
    exact = Fraction(whole) + Fraction(millionths, 10**6)
    if (exact * unit).denominator == 1:
        assert parse_tokens(text) == exact * unit
    else:
        with pytest.raises(kvplan.InputError, match="not a whole number"):
            parse_tokens(text)


@pytest.mark.parametrize(("text", "expected"), [
    ("123456789123456789", 123_456_789_123_456_789),  # float parsing returned ...784
    ("4.1GB", 4_100_000_000),  # float: 4.1 × 1e9 = 4099999999.9999995 was refused as "not whole"
    ("8.2GB", 8_200_000_000),
    ("12.13GiB", 13_024_488_325),  # 12.13 × 2**30 = 13,024,488,325.12: rounded down to whole bytes
    ("1.5B", 1),  # a fraction of a byte is dropped
])
def test_sizes_parse_without_float_rounding(text: str, expected: int | None) -> None:
    if expected is None:
        with pytest.raises(kvplan.InputError):
            parse_bytes(text)
    else:
        assert parse_bytes(text) == expected


def test_a_400_digit_size_is_an_input_error() -> None:
    with pytest.raises(kvplan.InputError):  # float('9' * 400) is inf: int(inf) raised OverflowError
        parse_tokens("9" * 400)


@pytest.mark.parametrize("pp", [0, -1, -7])
def test_pp_layer_counts_refuses_non_positive_pp(pp: int) -> None:
    """Regression: the public pp_layer_counts(32, 0) divided by zero; pp -1 returned negative counts."""
    from kvplan.formulas import pp_layer_counts

    with pytest.raises(kvplan.ShardingError, match="pp must be at least 1"):
        pp_layer_counts(32, pp)


def test_an_overlong_id_with_a_hub_cache_present_is_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Regression: with a hub cache on disk, stat() of models--org--<300 chars> raised ENAMETOOLONG."""
    (tmp_path / "hub").mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    with pytest.raises(kvplan.ConfigError, match="unknown model"):
        kvplan.load_model("org/" + "b" * 300)
