"""The cache question: one frozen, validated object from the command line (or a script) to the formulas.

``CacheRequest`` holds every knob that shapes a KV cache (parallel sizes, dtypes, block size, quant group,
state dtypes, the user's overrides) and what the cache holds (``max_model_len`` tokens per sequence,
``batch`` sequences). It checks itself at construction, so the library refuses what the CLI refuses, with
the same message; it is hashable, and its layout part (``shape_fields``) is the key of ``build_layout``'s cache.

Names are the library's, one per concept (``max_model_len``, never seq_len or context); the CLI alone knows
the engines' spellings of each flag.
"""

from __future__ import annotations

from dataclasses import fields, replace
from functools import cached_property, lru_cache
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from kvplan.dtypes import DEFAULT_QUANT_GROUP, KNOWN_NAMES, KvDtypeName, check_dtype_name
from kvplan.errors import InputError, ShardingError
from kvplan.formulas.layers import Overrides
from kvplan.records import Record, materialize
from kvplan.units import MAX_COUNT, MAX_TOKENS

if TYPE_CHECKING:
    from kvplan.config.model import ModelConfig

FALLBACK_MAX_MODEL_LEN = 2048  # vLLM's default when a config names no length (config/model.py get_max_model_len)
DEFAULT_BLOCK_SIZE = 16  # vLLM CacheConfig.DEFAULT_BLOCK_SIZE: what `kvplan size` pages in when not told
# Past every block an engine makes: vLLM's largest are Mamba-aligned hybrid blocks (16,608 tokens for
# Nemotron-3-Ultra in vLLM 0.33's own planning records, tests/data/vllm-oracle); attention alone pages in 16-256.
MAX_BLOCK_SIZE = 65_536


PARALLEL_NAMES = ("tp", "pp", "dcp", "dp", "ep")


class Parallel(Record, kw_only=False):
    """One replica's parallel sizes, each checked once here (a whole number, at least 1), and the sizes the engines
    derive from them; which of them an engine's replica is, is the engine's (``Engine.replica_gpus``)."""

    tp: int = 1  # tensor parallel: KV heads split (floor, replicated past the head count), MLA replicated
    pp: int = 1  # pipeline parallel: layers split as vLLM's get_pp_indices
    dcp: int = 1  # decode context parallel: a sequence's tokens split over dcp of the tp ranks
    dp: int = 1  # data parallel, each engine's own: vLLM D engines of tp × pp GPUs; SGLang DP attention inside tp
    ep: int = 1  # expert parallel ranks (vLLM --enable-expert-parallel: dp × tp; SGLang --ep-size, dividing tp)

    def __post_init__(self) -> None:
        if not all(type(v) is int and 0 < v <= MAX_COUNT for v in (self.tp, self.pp, self.dcp, self.dp, self.ep)):
            for name in PARALLEL_NAMES:
                _check_size(name, getattr(self, name))

    @property
    def group_gpus(self) -> int:
        """tp × pp: one tensor × pipeline group (a replica where data parallel runs inside it, or not at all)."""
        return self.tp * self.pp

    @property
    def dp_gpus(self) -> int:
        """dp × tp × pp: dp engines of tp × pp GPUs each (vLLM's data parallel)."""
        return self.dp * self.tp * self.pp

    @property
    def dp_tp(self) -> int:
        """dp × tp: the ranks a MoE flattened over data parallel runs on (vLLM: its MoE TP, or EP)."""
        return self.dp * self.tp

    @property
    def attention_tp(self) -> int:
        """tp // dp: the TP size of one attention group when dp splits the tp GPUs (SGLang's DP attention)."""
        return self.tp // self.dp


class CacheRequest(Record):
    """One cache question. ``None`` means "the model's" (max_model_len) or "the engine's" (block_size)."""

    tp: int = 1  # tensor-parallel size: KV heads split (floor, replicated past the head count), MLA replicated
    pp: int = 1  # pipeline-parallel size: layers split as vLLM's get_pp_indices
    dcp: int = 1  # decode-context-parallel size: a sequence's tokens split over dcp of the tp ranks
    dp: int = 1  # data parallel, each engine's own: vLLM D engines of tp × pp GPUs; SGLang DP attention inside tp
    ep: int = 1  # expert parallel ranks (vLLM --enable-expert-parallel: dp × tp; SGLang --ep-size, dividing tp)
    kv_dtype: str = "auto"  # parsed to a KvDtypeName (its canonical name); auto: the checkpoint's KV quantization, else
    # the model dtype
    block_size: int | None = None  # tokens per block (0: not paged); None: the engine's (kv_cache: 16)
    quant_group: int = DEFAULT_QUANT_GROUP  # int8/int4 KV: elements per fp16 scale
    state_dtype: str = "auto"  # linear/Mamba conv states, and recurrent ones unless ssm_state_dtype (vLLM mamba_cache_dtype)
    ssm_state_dtype: str = "auto"  # recurrent states (vLLM mamba_ssm_cache_dtype; auto: the config's own)
    overrides: Overrides | None = None  # what the user says instead of the config (attention, KV heads, kinds, window)
    max_model_len: int | None = None  # tokens per sequence; None: the model's own (vLLM's 2048 without one)
    batch: int = 1  # sequences held at once

    def __post_init__(self) -> None:
        if not all(type(v) is int and 0 < v <= MAX_COUNT for v in _COUNTS(self)):
            Parallel(self.tp, self.pp, self.dcp, self.dp, self.ep)
            for name in ("quant_group", "batch"):
                _check_positive(name, getattr(self, name), MAX_COUNT)
        if self.max_model_len is not None:
            _check_positive("max_model_len", self.max_model_len, MAX_TOKENS)
        if self.block_size is not None:
            _check_block_size(self.block_size)
        object.__setattr__(self, "kv_dtype", KvDtypeName(self.kv_dtype))  # parsed once: the canonical name
        if not KNOWN_NAMES.issuperset(_DTYPES(self)):  # the spellings users type: one set lookup each
            for name in ("state_dtype", "ssm_state_dtype"):
                check_dtype_name(getattr(self, name), name)
        for name in ("state_dtype", "ssm_state_dtype"):
            _check_state_dtype(getattr(self, name), name)

    @property
    def kv_dtype_name(self) -> KvDtypeName:
        """The KV dtype as parsed (``kv_dtype`` is the same value, typed as the name it compares with)."""
        assert isinstance(self.kv_dtype, KvDtypeName)
        return self.kv_dtype

    @cached_property
    def parallel(self) -> Parallel:
        """The parallel sizes as one value (checked with the request)."""
        return Parallel(self.tp, self.pp, self.dcp, self.dp, self.ep)

    @property
    def shape_fields(self) -> tuple[Any, ...]:
        """The fields a layout depends on but the block size (nor the length or the batch): build_layout's cache
        key, with the block size it pages in."""
        return _SHAPE_FIELDS(self)

    def length(self, model: ModelConfig) -> int:
        """Tokens per sequence: the request's, else the model's, else vLLM's fallback."""
        return self.max_model_len or model.max_model_len or FALLBACK_MAX_MODEL_LEN

    def paged_in(self, default: int) -> int:
        """The block size, or `default` where the request leaves it to the engine."""
        return default if self.block_size is None else self.block_size


def _check_size(name: str, value: int) -> None:
    """A parallel size: a whole number, at least 1 (the wording sharding.check_parallel used)."""
    if type(value) is int and 0 < value <= MAX_COUNT:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ShardingError(f"{name} must be at least 1, got {value!r}", arg=name)
    if value > MAX_COUNT:
        raise ShardingError(f"{name} must be at most {MAX_COUNT:,}, got {value}", arg=name)


def _check_positive(name: str, value: int, most: int) -> None:
    if type(value) is int and 0 < value <= most:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{name} must be a whole number, got {value!r}", arg=name)
    if not 0 < value <= most:
        raise InputError(f"{name} must be positive and at most {most:,}, got {value}", arg=name)


# A Mamba/linear state is kept in a float type: vLLM 0.33 config/cache.py:175 MambaDType = Literal["auto", "float32",
# "float16", "bfloat16"] (0.10 had only auto and float32); an fp8 or int4 state (accepted before) is no engine's.
STATE_DTYPE_NAMES = frozenset({"auto", "fp32", "float32", "float", "bf16", "bfloat16", "fp16", "float16", "half"})


def _check_state_dtype(value: str, name: str) -> None:
    if value.lower() not in STATE_DTYPE_NAMES:
        raise InputError(f"{name} {value!r}: a Mamba/linear state is kept in auto, fp32, bf16 or fp16 (vLLM's "
                         "mamba_cache_dtype choices)", arg=name)


def _check_block_size(value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_BLOCK_SIZE:
        raise InputError(f"block_size must be 0 (no paging) or 1 to {MAX_BLOCK_SIZE:,} tokens (engines page in 16 to "
                         f"256; vLLM's largest, a Mamba hybrid's aligned block, is 16,608), got {value!r}",
                         arg="block_size")


materialize(CacheRequest)  # its fields are read here, and NO_REQUEST below builds one anyway
_SHAPE_FIELDS = attrgetter(*(f.name for f in fields(CacheRequest) if f.name not in ("max_model_len", "batch",
                                                                                  "block_size")))
_COUNTS = attrgetter("tp", "pp", "dcp", "dp", "ep", "quant_group", "batch")
_DTYPES = attrgetter("kv_dtype", "state_dtype", "ssm_state_dtype")
NO_REQUEST = CacheRequest()


def cache_request(request: CacheRequest | None = None, **fields: Any) -> CacheRequest:
    """`request` (default: every field's default) with `fields` changed: how scripts give a question as keywords.
    Requests are values: the same keywords give the same (remembered) request."""
    if not fields:
        return request or NO_REQUEST
    if request is not None:
        return replace(request, **fields)
    try:
        return _from_fields(tuple(fields.items()))
    except TypeError:  # an unhashable value: CacheRequest refuses it with its own message
        return CacheRequest(**fields)


@lru_cache(maxsize=4096)
def _from_fields(items: tuple[tuple[str, Any], ...]) -> CacheRequest:
    return CacheRequest(**dict(items))
