"""`--format kserve` and `--format llm-d`: checked against the CRD KServe publishes (tests/data/kubernetes/SOURCE.md),
and the pod's memory = the engine's processes + the pinned host tier + /dev/shm.

Qwen3-32B at TP 4 on an H100 (64 layers, 2 of 8 KV heads per rank × 128 × K,V × 2 B = 65,536 B per token per rank).
GiB = 2**30, MiB = 2**20.
"""

from __future__ import annotations

import gzip
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from kvplan.engines import Settings
from kvplan.launch.pod import PROCESS_BYTES_PER_RANK, pod
from kvplan.planning.capacity import capacity

GIB, MIB = 2**30, 2**20
CRD = Path(__file__).resolve().parents[1] / "data" / "kubernetes" / "serving.kserve.io_llminferenceservices.yaml.gz"


@cache
def schema(version: str) -> dict[str, Any]:
    """The openAPIV3Schema of one version of the vendored CRD."""
    with gzip.open(CRD, "rt", encoding="utf-8") as f:
        crd = yaml.load(f, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return next(v for v in crd["spec"]["versions"] if v["name"] == version)["schema"]["openAPIV3Schema"]


def pod_spec_schema() -> dict[str, Any]:
    """The Kubernetes core PodSpec, as the CRD embeds it (spec.template)."""
    return schema("v1alpha2")["properties"]["spec"]["properties"]["template"]


def validate(document: Any, against: dict[str, Any]) -> None:
    jsonschema.Draft7Validator(against).validate(document)


def cli_yaml(run_cli: Any, *args: str) -> Any:
    code, out, err = run_cli("capacity", "Qwen/Qwen3-32B", "--gpu", "H100", "--tp", "4", "--max-model-len", "32k",
                             *args)
    assert code == 0, err
    return yaml.safe_load(out)


def test_the_schema_check_catches_a_bad_document() -> None:
    good = {"apiVersion": "serving.kserve.io/v1alpha2", "kind": "LLMInferenceService", "metadata": {"name": "m"},
            "spec": {"model": {"uri": "hf://m"}, "template": {"containers": [{"name": "main"}]}}}
    validate(good, schema("v1alpha2"))
    for bad in ({**good, "spec": {"model": {}}},  # model.uri is required
                {**good, "spec": {**good["spec"], "replicas": "two"}},
                {**good, "spec": {**good["spec"], "template": {"containers": [{"name": "main", "resources": {
                    "limits": {"memory": "lots"}}}]}}}):  # not a quantity
        with pytest.raises(jsonschema.ValidationError):
            validate(bad, schema("v1alpha2"))


@pytest.mark.parametrize("args", [
    pytest.param(("--engine", "vllm", "--kv-offloading-size", "400"), id="vllm-native-tier"),
    pytest.param(("--engine", "sglang", "--hicache-ratio", "1.5"), id="sglang-hicache"),
    pytest.param(("--engine", "vllm", "--tp", "16", "--gpus-per-node", "8"), id="vllm-two-nodes"),
])
def test_kserve_llminferenceservice_validates(run_cli: Any, args: tuple[str, ...]) -> None:
    doc = cli_yaml(run_cli, *args, "--format", "kserve")
    validate(doc, schema("v1alpha2"))
    main = doc["spec"]["template"]["containers"][0]
    assert main["resources"]["requests"] == main["resources"]["limits"]
    assert doc["spec"]["template"]["volumes"][0]["emptyDir"]["medium"] == "Memory"
    if "16" in args:  # a replica over two nodes: a leader and a worker pod of 8 GPUs each
        assert doc["spec"]["worker"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "8"


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_llm_d_patch_validates(run_cli: Any, engine: str) -> None:
    doc = cli_yaml(run_cli, "--engine", engine, "--format", "llm-d")
    assert doc["apiVersion"] == "kustomize.config.k8s.io/v1beta1" and doc["kind"] == "Kustomization"
    (patch,) = doc["patches"]
    deployment = yaml.safe_load(patch["patch"])
    assert (deployment["apiVersion"], deployment["kind"]) == ("apps/v1", "Deployment")
    assert deployment["metadata"]["name"] == patch["target"]["name"] == "qwen-qwen3-32b-decode"
    validate(deployment["spec"]["template"]["spec"], pod_spec_schema())
    assert deployment["spec"]["template"]["spec"]["containers"][0]["name"] == engine  # merged by name


def test_pod_memory_is_engine_plus_pinned_host_tier_plus_shm() -> None:
    r = capacity("Qwen/Qwen3-32B", engine="vllm", gpu="H100", tp=4, max_model_len=32768,
                 settings=Settings.of(kv_offloading_bytes=400 * GIB, cpu_offload_bytes=2 * GIB))
    p = pod(r)
    host = r.extras.host_memory
    # pinned: the native tier's 400 GiB over 4 ranks, page-aligned chunks (≤ 400 GiB), + 2 GiB of weights per GPU
    assert p.pinned_host_bytes == host.pinned_bytes_per_node == 4 * (host.kv_tier_bytes_per_rank + 2 * GIB)
    assert 400 * GIB - 4 * 2**20 < 4 * host.kv_tier_bytes_per_rank <= 400 * GIB
    # /dev/shm (vLLM 0.25.0 shm_broadcast.py): broadcast (16 MiB + 1 + 4 readers) × 10, 4 responses of
    # (24 MiB + 1 + 1) × 10, the TP group's (4 MiB + 1 + 4) × 6; + the 1 GiB NCCL allowance
    queues = (16 * MIB + 5) * 10 + 4 * (24 * MIB + 2) * 10 + (4 * MIB + 5) * 6
    assert p.shm_bytes == queues + GIB == 1_199_571_104 + GIB
    assert p.process_bytes == 4 * PROCESS_BYTES_PER_RANK and p.gpus == 4 and p.pods == 1
    assert p.memory_bytes == p.process_bytes + p.pinned_host_bytes + p.shm_bytes


def test_the_manifest_carries_the_pods_memory(run_cli: Any) -> None:
    doc = cli_yaml(run_cli, "--engine", "sglang", "--hicache-ratio", "1.5", "--format", "kserve")
    r = capacity("Qwen/Qwen3-32B", engine="sglang", gpu="H100", tp=4, max_model_len=32768,
                 settings=Settings.of(hicache_ratio=1.5))
    p = pod(r)
    main = doc["spec"]["template"]["containers"][0]
    assert main["resources"]["limits"]["memory"] == f"{-(-p.memory_bytes // MIB)}Mi"
    assert "--enable-hierarchical-cache" in main["command"] and main["resources"]["limits"]["nvidia.com/gpu"] == "4"
    # SGLang: no message queues of vLLM's; the NCCL allowance alone
    assert doc["spec"]["template"]["volumes"][0]["emptyDir"]["sizeLimit"] == "1024Mi"
