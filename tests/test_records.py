"""`kvplan.records.Record`: from its first instance on, a record is the dataclass @dataclass(frozen=True,
kw_only=True) makes; until then its methods are not generated (the point: start-up time)."""

from __future__ import annotations

import dataclasses
import inspect
import pickle
import subprocess
import sys
import threading
from typing import Any

import pytest

from kvplan import specs
from kvplan.records import Record, materialize

RECORDS = [cls for cls in vars(specs).values() if isinstance(cls, type) and cls.__module__ == specs.__name__
           and cls is not specs.AttnSpec]  # a base: its fields are checked through its four subclasses


def _run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout


def _eager_twin(cls: type) -> type:
    """The class as a plain dataclass would make it: the same body and bases, decorated at once."""
    body = {k: v for k, v in cls.__dict__.items() if k not in ("__dict__", "__weakref__", "__dataclass_fields__",
                                                                "__dataclass_params__", "__match_args__")}
    body = {k: v for k, v in body.items() if not callable(v) or isinstance(v, property) or k == "__annotations__"}
    bases = tuple(_eager_twin(b) if dataclasses.is_dataclass(b) else b for b in cls.__bases__)
    return dataclasses.dataclass(frozen=True, kw_only=True)(type(cls.__name__, bases, body))


@pytest.mark.parametrize("cls", RECORDS, ids=lambda c: c.__name__)
def test_a_record_is_the_frozen_keyword_only_dataclass(cls: type) -> None:
    materialize(cls)
    twin = _eager_twin(cls)
    assert [(f.name, f.type, f.default) for f in dataclasses.fields(cls)] == \
           [(f.name, f.type, f.default) for f in dataclasses.fields(twin)]
    assert str(inspect.signature(cls)) == str(inspect.signature(twin))
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    assert params.frozen and all(f.kw_only for f in dataclasses.fields(cls))


def test_instances_compare_hash_repr_and_stay_frozen() -> None:
    a = specs.SlidingAttn(num_kv_heads=8, head_dim=128, v_head_dim=128, window=4096)
    b = specs.SlidingAttn(num_kv_heads=8, head_dim=128, v_head_dim=128, window=4096)
    assert a == b and hash(a) == hash(b) and a != dataclasses.replace(b, window=1024)
    assert repr(a) == "SlidingAttn(num_kv_heads=8, head_dim=128, v_head_dim=128, window=4096)"
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.window = 1  # type: ignore[misc]
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'chunk_size'"):
        specs.ChunkedAttn(num_kv_heads=8, head_dim=128, v_head_dim=128)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="takes 1 positional argument but 4 were given"):
        specs.FullAttn(8, 128, 128)  # type: ignore[call-arg]


def test_repr_equality_and_hash_are_the_dataclass_ones() -> None:
    """materialize writes __repr__, __eq__ and __hash__ without compiling them: they answer as the dataclass's do."""
    @dataclasses.dataclass(frozen=True, kw_only=True)
    class SlidingAttn:  # the plain dataclass of specs.SlidingAttn's fields
        num_kv_heads: int
        head_dim: int
        v_head_dim: int
        window: int

    SlidingAttn.__qualname__ = specs.SlidingAttn.__qualname__
    values = {"num_kv_heads": 8, "head_dim": 128, "v_head_dim": 64, "window": 4096}
    record, twin = specs.SlidingAttn(**values), SlidingAttn(**values)
    assert repr(record) == repr(twin) and hash(record) == hash(twin)
    assert record == dataclasses.replace(record) and record != dataclasses.replace(record, window=1)
    assert record.__eq__(twin) is NotImplemented and twin.__eq__(record) is NotImplemented
    assert record.__dataclass_params__.eq and record.__dataclass_params__.repr  # type: ignore[attr-defined]

    class One(Record):
        x: Any = None

    class Shown(Record):
        x: int
        hidden: int = dataclasses.field(default=0, repr=False, compare=False)

    nested = One()
    object.__setattr__(nested, "x", nested)
    assert repr(nested).endswith(".One(x=...)") and hash(One(x=1)) == hash((1,)) and One() == One(x=None)
    assert repr(Shown(x=1, hidden=2)).endswith(".Shown(x=1)") and Shown(x=1, hidden=2) == Shown(x=1)
    assert hash(Shown(x=1, hidden=2)) == hash((1,))


def test_methods_are_generated_on_first_instantiation_only() -> None:
    """The deferral is real: importing the specs generates no spec's methods, building one generates its own and
    its bases' (AttnSpec for FullAttn), and a plain `kvplan size` of a Llama generates FullAttn's alone."""
    made = ("def made(): return sorted(n for n, c in vars(specs).items()\n"
            "                          if isinstance(c, type) and '__dataclass_fields__' in vars(c))\n")
    out = _run(f"from kvplan import specs\n{made}print(made())\n"
               "specs.FullAttn(num_kv_heads=1, head_dim=2, v_head_dim=2)\nprint(made())")
    assert out.splitlines() == ["[]", "['AttnSpec', 'FullAttn']"]
    out = _run(f"import io, contextlib\nfrom kvplan import specs\nfrom kvplan.cli import main\n{made}"
               "with contextlib.redirect_stdout(io.StringIO()):\n"
               "    main(['size', 'meta-llama/Llama-2-70b', '--tp', '4'])\n"
               "print(made())")
    assert out.splitlines() == ["['AttnSpec', 'FullAttn']"]


def test_an_instance_unpickled_where_its_class_was_never_built_is_a_whole_record() -> None:
    """pickle makes instances without __init__: the class is generated then too, so equality and hashing hold."""
    data = pickle.dumps(specs.LinearState(conv_kernel=4, conv_channels=8, num_state_heads=2, state_rows=3,
                                          state_cols=5))
    code = ("import pickle, sys\nfrom kvplan import specs\nx = pickle.loads(sys.stdin.buffer.read())\n"
            "y = specs.LinearState(conv_kernel=4, conv_channels=8, num_state_heads=2, state_rows=3, state_cols=5)\n"
            "print(x == y, hash(x) == hash(y), x.state_elements)")
    out = subprocess.run([sys.executable, "-c", code], input=data, check=True, capture_output=True).stdout
    assert out.decode().split() == ["True", "True", str(3 * 8 + 2 * 3 * 5)]


def test_a_subclass_sees_the_fields_of_a_base_not_yet_built() -> None:
    class Base(Record):
        a: int

    class Child(Base):
        b: int = 2

    assert "__dataclass_fields__" not in vars(Base)
    assert Child(a=1) == Child(a=1, b=2) and [f.name for f in dataclasses.fields(Child)] == ["a", "b"]
    assert "__dataclass_fields__" in vars(Base)


def _built_at_once(cls: type[Any], threads: int) -> tuple[list[Any], list[Exception]]:
    """`cls(x=1)` called by `threads` threads released together: what they built, and what they raised."""
    start = threading.Barrier(threads)
    built: list[Any] = []
    errors: list[Exception] = []

    def build() -> None:
        start.wait()
        try:
            built.append(cls(x=1))
        except TypeError as exc:
            errors.append(exc)

    workers = [threading.Thread(target=build) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return built, errors


def test_threads_that_build_a_record_first_all_get_one() -> None:
    """Threads calling a pending class at once: one generates its methods, the others wait and use them (no call
    falls into object.__init__ while the methods are being written)."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # a thread switch at almost every bytecode
    try:
        for _ in range(20):
            class Point(Record):
                x: int
                y: int = 0

            built, errors = _built_at_once(Point, 8)
            assert not errors and len(built) == 8 and all(p == Point(x=1, y=0) for p in built)
    finally:
        sys.setswitchinterval(previous)


def test_a_subclass_of_a_record_already_built_builds_with_its_own_fields() -> None:
    """A record has no metaclass: a pending class's __init__ is a placeholder. A subclass defined before or after its
    base was built still generates its own __init__ rather than calling the base's."""
    class Base(Record):
        a: int

    class Before(Base):
        b: int = 2

    assert Base(a=1).a == 1

    class After(Base):
        c: int = 3

    assert (Before(a=1), After(a=1)) == (Before(a=1, b=2), After(a=1, c=3))
    assert [f.name for f in dataclasses.fields(After)] == ["a", "c"] and After(a=1, c=4).c == 4
    assert str(inspect.signature(Before)) == "(*, a: 'int', b: 'int' = 2) -> None"
    with pytest.raises(dataclasses.FrozenInstanceError):
        After(a=1).c = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        Record()


def test_default_factories_fields_left_out_of_init_and_post_init_are_dataclass_ones() -> None:
    """The generated __init__ (shorter source than dataclass's) keeps its factories, init=False fields and
    __post_init__."""
    class Made(Record):
        xs: list[int] = dataclasses.field(default_factory=list)
        n: int = dataclasses.field(default=5, init=False)
        ys: list[int] = dataclasses.field(default_factory=lambda: [1], init=False)
        seen: tuple[int, ...] = ()

        def __post_init__(self) -> None:
            object.__setattr__(self, "seen", (len(self.xs), self.n))

    made, other = Made(), Made(xs=[1, 2])
    assert made.xs == [] and made.xs is not Made().xs and made.ys == [1] and made.n == 5 and made.seen == (0, 5)
    assert other.seen == (2, 5) and list(inspect.signature(Made).parameters) == ["xs", "seen"]
    with pytest.raises(TypeError):
        Made(n=1)  # type: ignore[call-arg]


def test_a_positional_record_is_the_frozen_dataclass() -> None:
    """`class X(Record, kw_only=False)` is @dataclass(frozen=True): fields passed by position or by name."""
    class Pair(Record, kw_only=False):
        a: int
        b: int = 2

    @dataclasses.dataclass(frozen=True)
    class Twin:
        a: int
        b: int = 2

    materialize(Pair)
    assert str(inspect.signature(Pair)) == str(inspect.signature(Twin)) == "(a: 'int', b: 'int' = 2) -> None"
    assert Pair(1) == Pair(a=1, b=2) == Pair(1, 2) and Pair.__match_args__ == ("a", "b")  # type: ignore[attr-defined]
    assert repr(Pair(1)).endswith("Pair(a=1, b=2)") and hash(Pair(1)) == hash(Twin(1))
    with pytest.raises(TypeError, match="takes from 2 to 3 positional arguments but 4 were given"):
        Pair(1, 2, 3)  # type: ignore[call-arg]

    class Wrong(Record, kw_only=False):
        a: int = 1
        b: int

    with pytest.raises(TypeError, match="non-default argument 'b' follows default argument"):
        Wrong(b=1)



_DESCRIBE = """
import dataclasses, importlib, sys
import kvplan.records as records
import kvplan.records.bookkeeping as bookkeeping
if sys.argv[1] == "dataclass":  # the path through dataclasses.dataclass (_generate imports it when it runs)
    bookkeeping.declare_fields = lambda klass, **_: None
module, name = sys.argv[2].split(":")
cls = getattr(importlib.import_module(module), name)
records.materialize(cls)
shown = lambda v: "MISSING" if v is dataclasses.MISSING else repr(sorted(v) if isinstance(v, frozenset) else v)
print([(f.name, f.type, shown(f.default), shown(f.default_factory), f.init, f.repr, f.hash, f.compare, f.kw_only,
        dict(f.metadata), shown(vars(cls).get(f.name, "absent"))) for f in dataclasses.fields(cls)])
print(cls.__dataclass_params__, cls.__match_args__, cls.__doc__)
"""


@pytest.mark.parametrize("where", ["kvplan.config.model:ModelConfig", "kvplan.engines.rules:BudgetRules",
                                   "kvplan.planning.weights.part:Part", "kvplan.engines.vllm.mamba:MambaRules",
                                   "kvplan.planning.request:CapacityRequest", "kvplan.config.defaults:Default"])
def test_a_records_fields_are_recorded_as_dataclass_records_them(where: str) -> None:
    """kvplan.records.bookkeeping writes __dataclass_fields__, __dataclass_params__ and __match_args__ itself: the
    same fields (defaults, factories, flags), class attributes, parameters and docstring as dataclass's path."""
    lean, by_dataclass = (subprocess.run([sys.executable, "-c", _DESCRIBE, how, where], check=True,
                                         capture_output=True, text=True).stdout for how in ("lean", "dataclass"))
    assert lean == by_dataclass and "MISSING" in lean


@pytest.mark.parametrize("argv", [
    ["capacity", "deepseek-ai/DeepSeek-V3", "--gpu", "H200", "--tp", "8", "--max-model-len", "32k", "--json"],
    ["capacity", "Qwen/Qwen3-Next-80B-A3B-Thinking", "--gpu", "H100", "--tp", "4", "--engine", "sglang", "--json"],
    ["fit", "meta-llama/Llama-3.1-70B", "--max-model-len", "32k", "--concurrency", "64", "--gpu", "H100",
     "--format", "json"],
    ["size", "google/gemma-3-27b-it", "--json"],
])
def test_the_short_path_answers_as_dataclass_itself(argv: list[str]) -> None:
    # Off CPython 3.11 (or with KVPLAN_RECORDS_BY_DATACLASS=1) every record is made by dataclass(): the same
    # answers, byte for byte, as the short path's on the commands that build most records.
    import os

    def run(**env: str) -> str:
        done = subprocess.run([sys.executable, "-m", "kvplan", *argv], capture_output=True, text=True,
                              env={**os.environ, "COLUMNS": "120", **env}, check=False)
        return f"{done.returncode}\n{done.stdout}\n{done.stderr}"

    assert run(KVPLAN_RECORDS_BY_DATACLASS="1") == run(KVPLAN_RECORDS_BY_DATACLASS="")


def test_a_value_compares_hashes_and_shows_its_fields_in_order() -> None:
    from kvplan.records import Value

    class Point(Value):
        __slots__ = ("x", "y")
        FIELDS = ("x", "y")

        def __init__(self, x: int, y: int) -> None:
            self.x, self.y = x, y

    class Other(Point):
        __slots__ = ()

    assert Point(1, 2) == Point(1, 2) and hash(Point(1, 2)) == hash((1, 2)) and repr(Point(1, 2)) == "Point(x=1, y=2)"
    assert Point(1, 2) != Point(2, 1) and Point(1, 2) != Other(1, 2) and Point(1, 2) != (1, 2)
