"""Weights from a checkpoint's own safetensors headers: a local folder, and a hub id through a stand-in hub.

The checkpoints are written here: a JSON header with every tensor's dtype, shape and byte range, and no tensor
data at all (the files end after the header), so a reader that touched a tensor would fail. The stand-in hub is
an HTTP server on 127.0.0.1 answering what huggingface_hub asks for: HEAD/GET of config.json and the index, a
ranged GET (``Range: bytes=0-100000``) of each shard's header. HF_ENDPOINT points at it; HF_HOME, HF_HUB_CACHE
and KVPLAN_CACHE at tmp_path.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import kvplan
from kvplan.config.checkpoint import read_header
from kvplan.planning.weights import param_count, weight_bytes, weight_bytes_per_gpu

# A Llama of 2 layers, width 64, 4 heads of 16, 2 KV heads, MLP 128, vocabulary 128, untied (no table has it).
TINY = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
        "num_attention_heads": 4, "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 128,
        "max_position_embeddings": 256, "tie_word_embeddings": False, "torch_dtype": "bfloat16"}
# per layer: q 64·64 + k, v 32·64 + o 64·64 + gate, up 128·64 + down 64·128 + 2 norms 64 = 36,992
# whole: 2 × 36,992 + embedding and lm_head 2 × 128·64 + final norm 64 = 90,432
TINY_PARAMS = 90_432
BYTES = {"BF16": 2, "F16": 2, "F32": 4, "F8_E4M3": 1, "U8": 1, "I32": 4}


def layer_tensors(i: int, dtype: str = "BF16") -> dict[str, tuple[str, tuple[int, ...]]]:
    p = f"model.layers.{i}."
    return {p + "self_attn.q_proj.weight": (dtype, (64, 64)), p + "self_attn.k_proj.weight": (dtype, (32, 64)),
            p + "self_attn.v_proj.weight": (dtype, (32, 64)), p + "self_attn.o_proj.weight": (dtype, (64, 64)),
            p + "mlp.gate_proj.weight": (dtype, (128, 64)), p + "mlp.up_proj.weight": (dtype, (128, 64)),
            p + "mlp.down_proj.weight": (dtype, (64, 128)), p + "input_layernorm.weight": ("BF16", (64,)),
            p + "post_attention_layernorm.weight": ("BF16", (64,))}


def ends() -> dict[str, tuple[str, tuple[int, ...]]]:
    return {"model.embed_tokens.weight": ("BF16", (128, 64)), "lm_head.weight": ("BF16", (128, 64)),
            "model.norm.weight": ("BF16", (64,))}


def safetensors_header(tensors: dict[str, tuple[str, tuple[int, ...]]]) -> bytes:
    """The first bytes of a safetensors file: 8-byte length + JSON header (data offsets as if data followed)."""
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        size = BYTES[dtype]
        for dim in shape:
            size *= dim
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text


def write_folder(folder: Path, shards: list[dict[str, tuple[str, tuple[int, ...]]]],
                 config: dict[str, Any] = TINY) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text(json.dumps(config))
    if len(shards) == 1:
        (folder / "model.safetensors").write_bytes(safetensors_header(shards[0]))
        return folder
    names = [f"model-{k + 1:05d}-of-{len(shards):05d}.safetensors" for k in range(len(shards))]
    for name, shard in zip(names, shards, strict=True):
        (folder / name).write_bytes(safetensors_header(shard))
    weight_map = {t: name for name, shard in zip(names, shards, strict=True) for t in shard}
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    return folder


# ----------------------------------------------------------------------------------------- a local folder


def test_a_local_folder_with_one_file(tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "tiny", [{**layer_tensors(0), **layer_tensors(1), **ends()}])
    m = kvplan.load_model(str(folder))
    counted = param_count(m)
    assert counted.total == TINY_PARAMS
    assert counted.source == f"safetensors headers of {folder}" and not counted.estimate
    assert weight_bytes(m) == 2 * TINY_PARAMS
    assert weight_bytes(m, "fp32") == 4 * TINY_PARAMS  # an unquantized checkpoint: the dtype applies
    # tp 2: everything halves but the 5 norms of 64 (2 per layer + final), whole on each rank
    assert weight_bytes_per_gpu(m, tp=2) == 2 * ((TINY_PARAMS - 5 * 64) // 2 + 5 * 64)


def test_a_local_folder_with_an_index_and_shards(tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "sharded", [{**layer_tensors(0), **ends()}, layer_tensors(1)])
    m = kvplan.load_model(str(folder))
    assert param_count(m).total == TINY_PARAMS
    # the last stage: layer 1 + final norm + lm_head (the first: layer 0 + the embedding, 64 fewer)
    assert weight_bytes_per_gpu(m, pp=2) == 2 * (36_992 + 64 + 128 * 64)


def test_the_header_is_read_not_the_tensors(tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "tiny", [{**layer_tensors(0), **layer_tensors(1), **ends()}])
    data = (folder / "model.safetensors").read_bytes()
    assert len(data) == 8 + struct.unpack("<Q", data[:8])[0]  # no tensor bytes in the file at all
    assert read_header(folder / "model.safetensors")["lm_head.weight"]["shape"] == [128, 64]


def test_a_quantized_checkpoint_counts_as_stored(tmp_path: Path) -> None:
    # fp8 linear weights (1 B) with an fp32 weight_scale_inv per 128×128 block (one block per matrix here)
    shard = {**ends()}
    for i in range(2):
        for name, (_, shape) in layer_tensors(i).items():
            if len(shape) == 2:
                shard[name] = ("F8_E4M3", shape)
                shard[name.replace(".weight", ".weight_scale_inv")] = ("F32", (1, 1))
            else:
                shard[name] = ("BF16", shape)
    config = {**TINY, "quantization_config": {"quant_method": "fp8", "weight_block_size": [128, 128]}}
    m = kvplan.load_model(str(write_folder(tmp_path / "fp8", [shard], config)))
    linear = 2 * (36_992 - 128)
    assert weight_bytes(m) == linear + 14 * 4 + 2 * (2 * 128 * 64 + 64 + 4 * 64)
    assert "as the checkpoint stores them" in param_count(m).notes[0]


def test_stacked_and_per_expert_tensors(tmp_path: Path) -> None:
    # a 2-layer Mixtral: 4 experts per layer stored one by one (w1, w2, w3), a router
    config = {**TINY, "architectures": ["MixtralForCausalLM"], "model_type": "mixtral", "num_local_experts": 4,
              "num_experts_per_tok": 2}
    shard = {**ends()}
    for i in range(2):
        base = {k: v for k, v in layer_tensors(i).items() if ".mlp." not in k}
        shard |= base | {f"model.layers.{i}.block_sparse_moe.gate.weight": ("BF16", (4, 64))}
        for e in range(4):
            for w, shape in (("w1", (128, 64)), ("w3", (128, 64)), ("w2", (64, 128))):
                shard[f"model.layers.{i}.block_sparse_moe.experts.{e}.{w}.weight"] = ("BF16", shape)
    m = kvplan.load_model(str(write_folder(tmp_path / "moe", [shard], config)))
    counted = param_count(m)
    assert counted.moe_experts == 2 * 4 * 3 * 128 * 64 and counted.router == 2 * 4 * 64
    assert weight_bytes_per_gpu(m, tp=2, ep=2) == weight_bytes_per_gpu(m, tp=2)  # 2 whole experts = 4 halves


# ----------------------------------------------------------------------------------------- a stand-in hub

REPO = "acme/tiny-hub"
SHARDS = {"model-00001-of-00002.safetensors": {**layer_tensors(0), **ends()},
          "model-00002-of-00002.safetensors": layer_tensors(1)}
FILES = {"config.json": json.dumps({**TINY, "hidden_act": "silu"}).encode(),
         "model.safetensors.index.json": json.dumps({"weight_map": {t: f for f, s in SHARDS.items() for t in s}}).encode(),
         **{name: safetensors_header(shard) + b"\0" * 4096 for name, shard in SHARDS.items()}}
COMMIT = hashlib.sha1(f"{REPO}@main".encode()).hexdigest()


class StandIn(BaseHTTPRequestHandler):
    server: Any

    def do_HEAD(self) -> None:
        self._answer(body=False)

    def do_GET(self) -> None:
        self._answer(body=True)

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _answer(self, body: bool) -> None:
        self.server.seen.append((self.command, self.path.rpartition("/")[2], self.headers.get("Range")))
        match = re.fullmatch(rf"/{REPO}/resolve/([^/]+)/([^?]+)", self.path)
        data = FILES.get(match.group(2)) if match and match.group(1) in ("main", COMMIT) else None
        if data is None:
            self._send(404, {"X-Error-Code": "EntryNotFound", "X-Repo-Commit": COMMIT}, b"", body)
            return
        headers = {"X-Repo-Commit": COMMIT, "ETag": f'"{hashlib.sha1(data).hexdigest()}"'}
        ranged = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("Range") or "")
        if ranged:
            first, last = int(ranged.group(1)), min(int(ranged.group(2)), len(data) - 1)
            headers["Content-Range"] = f"bytes {first}-{last}/{len(data)}"
            self._send(206, headers, data[first:last + 1], body)
            return
        self._send(200, headers, data, body)

    def _send(self, status: int, headers: dict[str, str], data: bytes, body: bool) -> None:
        self.send_response(status)
        for name, value in {**headers, "Content-Length": str(len(data))}.items():
            self.send_header(name, value)
        self.end_headers()
        if body:
            self.wfile.write(data)


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), StandIn)
    server.daemon_threads = True
    server.seen = []  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    monkeypatch.setenv("KVPLAN_CACHE", str(tmp_path / "kvplan"))
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(constants, "HF_TOKEN_PATH", str(tmp_path / "hf" / "token"))
    yield server
    server.shutdown()
    server.server_close()


def test_a_hub_id_reads_its_headers_then_works_offline(hub: Any, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    m = kvplan.load_model(REPO)
    counted = param_count(m)
    assert counted.total == TINY_PARAMS and counted.source == f"safetensors headers of {REPO}@{COMMIT[:12]} on the hub"
    shard_requests = [(method, rng) for method, name, rng in hub.seen if name.endswith(".safetensors")]
    assert shard_requests and all(method == "GET" and rng == "bytes=0-100000" for method, rng in shard_requests)
    assert (tmp_path / "kvplan" / "checkpoints" / "acme--tiny-hub" / f"{COMMIT}.json").is_file()
    hub.shutdown()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    from kvplan.planning.weights.counts import _weight_parts

    _weight_parts.cache_clear()
    again = param_count(kvplan.load_model(REPO))
    assert (again.total, again.source) == (TINY_PARAMS, counted.source)


def test_offline_without_cached_headers_falls_back_to_its_type(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    snapshot = tmp_path / "hub" / "models--acme--cold" / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps(TINY))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("KVPLAN_CACHE", str(tmp_path / "kvplan"))
    counted = param_count(kvplan.load_model("acme/cold"))
    # no headers: llama's own table at this config's sizes (kvplan.planning.weights.derived), before the formula
    assert counted.total == TINY_PARAMS and counted.source.startswith("tensor table of type:llama at this config")
