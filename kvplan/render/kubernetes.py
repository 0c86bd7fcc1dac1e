"""What a cluster takes: a KServe ``LLMInferenceService`` (``--format kserve``) and the Kustomize patch llm-d's guides
apply to their model server's Deployment (``--format llm-d``), from one answer and its pod (``kvplan.launch.pod``).

KServe: ``serving.kserve.io/v1alpha2`` ``LLMInferenceService`` (the version the CRD stores; v1alpha1 is still
served), its ``spec.template`` a pod spec with the launch command, the GPUs, container memory (request = limit) and a
memory-backed ``/dev/shm``; a replica over several nodes adds ``spec.worker`` with the same container. Both are
checked against the CRD KServe publishes (tests/data/kubernetes/, with its source).
llm-d: a Kustomization whose ``patches`` change the decode Deployment's container (strategic merge: by container name)
with the same command, GPUs, memory and ``/dev/shm``.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from kvplan.launch.pod import Pod
from kvplan.units import MIB, cdiv

KSERVE_API = "serving.kserve.io/v1alpha2"
KUSTOMIZE_API = "kustomize.config.k8s.io/v1beta1"
GPU_RESOURCE = "nvidia.com/gpu"
SHM_VOLUME = "dshm"


def slug(model: str) -> str:
    """A Kubernetes name (RFC 1123 label) from a model id: `Qwen/Qwen3-32B` -> `qwen-qwen3-32b`."""
    return re.sub(r"[^a-z0-9]+", "-", model.lower()).strip("-")[:63].rstrip("-") or "model"


def quantity(num_bytes: int) -> str:
    """Bytes as a Kubernetes quantity, rounded up to a whole MiB."""
    return f"{cdiv(num_bytes, MIB)}Mi"


def container(name: str, command: str, p: Pod) -> dict[str, Any]:
    resources = {"memory": quantity(p.memory_bytes), GPU_RESOURCE: str(p.gpus)}
    return {"name": name, "command": shlex.split(command), "resources": {"requests": resources, "limits": resources},
            "volumeMounts": [{"name": SHM_VOLUME, "mountPath": "/dev/shm"}]}


def pod_spec(name: str, command: str, p: Pod) -> dict[str, Any]:
    return {"containers": [container(name, command, p)],
            "volumes": [{"name": SHM_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": quantity(p.shm_bytes)}}]}


def kserve(payload: Any, p: Pod) -> dict[str, Any]:
    """An LLMInferenceService serving the answer's launch command on pods of its size."""
    spec: dict[str, Any] = {
        "model": {"uri": f"hf://{payload.model}", "name": payload.model}, "replicas": 1,
        "parallelism": {k: v for k, v in (("tensor", payload.layout.tp), ("pipeline", payload.layout.pp)) if v > 1},
        "template": pod_spec("main", payload.command, p)}
    if p.pods > 1:
        spec["worker"] = pod_spec("main", payload.command, p)
    return {"apiVersion": KSERVE_API, "kind": "LLMInferenceService", "metadata": {"name": slug(payload.model)},
            "spec": spec}


def deployment_patch(name: str, engine: str, command: str, p: Pod) -> dict[str, Any]:
    """A strategic-merge patch of one Deployment: its engine container and /dev/shm."""
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"template": {"spec": pod_spec(engine, command, p)}}}


def llm_d(payload: Any, p: Pod, roles: tuple[tuple[str, Any, Pod], ...] = ()) -> dict[str, Any]:
    """The Kustomization patching llm-d's model-server Deployment (`decode`), or one per role of a disaggregated
    plan (`roles`: (role, payload, pod))."""
    base = slug(payload.model)
    found = roles or (("decode", payload, p),)
    patches = [{"target": {"kind": "Deployment", "name": f"{base}-{role}"},
                "patch": block_yaml(deployment_patch(f"{base}-{role}", answer.engine, answer.command, sized))}
               for role, answer, sized in found]
    return {"apiVersion": KUSTOMIZE_API, "kind": "Kustomization", "patches": patches}


def pod_json(p: Pod) -> dict[str, Any]:
    return {"gpus": p.gpus, "pods": p.pods, "process_bytes": p.process_bytes, "pinned_host_bytes": p.pinned_host_bytes,
            "shm_bytes": p.shm_bytes, "memory_bytes": p.memory_bytes, "rule": p.rule}


def block_yaml(data: Any, indent: int = 0) -> str:
    """Block-style YAML (mappings, lists of mappings, multi-line strings as literal blocks; scalars as JSON)."""
    import json

    pad = " " * indent
    if isinstance(data, dict):
        return "".join(f"{pad}{k}:{_value(v, indent + 2)}" for k, v in data.items())
    if isinstance(data, list):
        return "".join(f"{pad}-{_value(v, indent + 2, item=True)}" for v in data)
    return f"{pad}{json.dumps(data)}\n"


def _value(v: Any, indent: int, item: bool = False) -> str:
    import json

    if isinstance(v, str) and "\n" in v:
        lines = "".join(f"{' ' * indent}{line}\n" for line in v.splitlines())
        return f" |\n{lines}"
    if isinstance(v, dict) and v and item:  # a list's mapping starts on the dash's line
        return " " + block_yaml(v, indent).lstrip(" ")
    if isinstance(v, (dict, list)) and v:
        return "\n" + block_yaml(v, indent)
    return f" {json.dumps(v)}\n"
