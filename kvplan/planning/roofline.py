"""A memory-bound lower bound on one decode step, from the GPU catalog's peak bandwidth.

One decode step of a batch reads every weight once and every cached token of the batch at least
once, so on a GPU whose memory moves at most B bytes per second, no step of that batch is faster
than ``(weight bytes + KV bytes) / B``. ``kvplan capacity`` reports it for the batch the engine
admits at once: ``floor(max concurrency)`` requests of max_model_len tokens, each holding its
steady-state bytes, on the most loaded GPU. It is a floor on latency, not a throughput promise:
compute, kernel launches and attention kernels below the roofline all add to it (``kvplan probe``
measures how close the paged-decode kernels come on a real GPU).
"""

from __future__ import annotations

from kvplan.engines import EnginePlan
from kvplan.planning.gpus import GPUS
from kvplan.records import Record


class DecodeFloor(Record):
    """The bandwidth floor of one decode step: weights and admitted KV read once, at the GPU's peak."""

    requests: int  # max_model_len requests decoding together (what the engine admits at once)
    weights_bytes: int  # per GPU, read once per step
    kv_bytes: int  # per GPU: every admitted request's cache, read once per step
    bandwidth_bytes_per_s: int  # the catalog's peak (vendor data sheet)
    gpu: str

    @property
    def bytes_per_step(self) -> int:
        return self.weights_bytes + self.kv_bytes

    @property
    def seconds(self) -> float:
        return self.bytes_per_step / self.bandwidth_bytes_per_s

    @property
    def tokens_per_s(self) -> float:
        """The matching ceiling on decode throughput: one token per request per step."""
        return self.requests / self.seconds


def decode_floor(plan: EnginePlan, gpu: str | None, weights_bytes: int | None) -> DecodeFloor | None:
    """The floor for the batch the plan admits; None without a catalog GPU, weights, or one request."""
    requests = int(plan.requests_at_max_len)
    if gpu not in GPUS or weights_bytes is None or requests < 1 or plan.refusal is not None:
        return None
    return DecodeFloor(requests=requests, weights_bytes=weights_bytes, gpu=gpu,
                       kv_bytes=requests * plan.steady_bytes_per_request,
                       bandwidth_bytes_per_s=GPUS[gpu].bandwidth_bytes_per_s)
