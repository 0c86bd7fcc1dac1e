"""Frozen dataclasses whose methods are generated on first use, with (almost) nothing compiled.

A dataclass's ``__init__``, ``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__`` and ``__delattr__`` are written
as source text and compiled when the class is defined (one compile per method on Python 3.11): 0.3-0.8 ms a
class, most of kvplan's own import time. There are twelve layer specs, and a model uses one to four of them (a Llama
only ``FullAttn``). So a subclass of ``Record`` puts that work off until the class is first called (or one of its
instances unpickled), and a class that a run never builds never pays for it.

From its first instance on, a record is what ``@dataclass(frozen=True, kw_only=True)`` makes (``class X(Record,
kw_only=False)``: ``@dataclass(frozen=True)``): ``fields``, ``replace`` and ``asdict`` work, and so do equality,
hashing and the frozen assignment errors. Only dataclass's field bookkeeping runs; the six methods are plain
functions over the fields' values (the same answers) and ``__init__`` is a template code object renamed per class
(kvplan.records.initializer), so a class costs no parse. Its subclasses are records too, so each one sees its bases'
fields. One limit, checked by tests/test_records.py: calling ``dataclasses.fields(cls)`` or ``inspect.signature(cls)``
on a class that nothing has built yet needs ``materialize(cls)`` first.
"""

from __future__ import annotations

import _thread
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import Field, FrozenInstanceError, dataclass, fields
from inspect import signature as inspect_signature  # dataclasses imports inspect already
from operator import attrgetter
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:  # typing has it from 3.11, typing_extensions costs 3 ms to import: type checkers alone read it
    def dataclass_transform(**_: Any) -> Callable[[type], type]:
        return lambda cls: cls

_PENDING = "__record_pending__"
# The short path writes dataclass's bookkeeping itself, with names private to CPython 3.11's dataclasses module
# (kvplan.records.bookkeeping, .initializer), checked against dataclass's own on 3.11 (tests/test_records.py). Any
# other Python, or KVPLAN_RECORDS_BY_DATACLASS=1 (the tests' cross-check), gets dataclass's own methods: the same
# records, each class compiled as a dataclass is.
SHORT_PATH = sys.version_info[:2] == (3, 11) and not os.environ.get("KVPLAN_RECORDS_BY_DATACLASS")
_GENERATING = _thread.allocate_lock()  # _thread: a builtin module, nothing to import


def _pending_init(self: Any, *args: Any, **kwargs: Any) -> None:
    """A pending record's ``__init__`` until its methods exist: generate them, then build with the real one.

    A placeholder rather than a metaclass ``__call__``: that would add a Python call to every instance of every
    record for good, where this one runs once a class. A thread calling the class while another generates its
    methods reaches this function too, waits in ``materialize``, then uses the generated ``__init__``."""
    cls = type(self)
    materialize(cls)
    if cls.__init__ is _pending_init:
        raise TypeError(f"{cls.__qualname__} declares no record")  # Record itself
    cls.__init__(self, *args, **kwargs)


@dataclass_transform(frozen_default=True, kw_only_default=True)
class Record:
    """Base of the records: ``class FullAttn(Record): ...`` declares fields as a dataclass does.

    A pending subclass inherits ``_pending_init`` as its ``__init__``, from here or from a pending base: a base's
    ``materialize`` gives its pending subclasses their own placeholder before its generated ``__init__`` (which
    they would inherit otherwise) exists."""

    if not TYPE_CHECKING:  # type checkers read the fields' __init__ that dataclass_transform describes
        __init__ = _pending_init

    def __init_subclass__(cls, kw_only: bool = True, **kwargs: Any) -> None:
        """``class Part(Record, kw_only=False)``: fields passed by position too, as ``@dataclass(frozen=True)``."""
        super().__init_subclass__(**kwargs)
        setattr(cls, _PENDING, kw_only)  # pending, and how its fields are passed
        if "__init__" not in vars(cls) and _under_generated_base(cls):
            cls.__init__ = _pending_init  # type: ignore[method-assign]

    def __setstate__(self, state: dict[str, Any]) -> None:  # pickle builds instances without calling the class
        materialize(type(self))
        self.__dict__.update(state)


class Value:
    """A small slotted value whose fields are its class's ``FIELDS``: equal, hashed and shown by them, in that order.
    Where a NamedTuple would do: it is compiled when its module is imported, and a record's methods are made when
    first built; a Value costs neither (kvplan.config.mtp's MtpModules, a vision Tower, a RopeCache)."""

    __slots__ = ()
    FIELDS: tuple[str, ...] = ()

    def _values(self) -> tuple[Any, ...]:
        return tuple([getattr(self, name) for name in self.FIELDS])

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{name}={getattr(self, name)!r}' for name in self.FIELDS)})"


def materialize(cls: type) -> None:
    """Generate the dataclass methods of `cls` and of its record bases now (nothing where they already are).

    One thread at a time; a class stays marked pending until its methods exist, so a thread that calls it meanwhile
    waits here, then builds its instance with the generated ``__init__``."""
    with _GENERATING:
        for klass in reversed(cls.__mro__):  # bases first: a dataclass reads its bases' fields
            if _PENDING in klass.__dict__:
                _keep_subclasses_pending(klass)
                _generate(klass, kw_only=klass.__dict__[_PENDING])
                delattr(klass, _PENDING)


def _under_generated_base(cls: type) -> bool:
    """Whether `cls` would inherit the __init__ of a record base already generated (not the placeholder)."""
    owner = next(b for b in cls.__mro__[1:] if "__init__" in vars(b))
    return owner is not Record and issubclass(owner, Record) and _PENDING not in vars(owner)


def _keep_subclasses_pending(klass: type) -> None:
    """Pending direct subclasses that inherit `klass`'s __init__ get their own placeholder (see Record)."""
    subclasses: list[type] = klass.__subclasses__()
    for sub in subclasses:
        if _PENDING in vars(sub) and "__init__" not in vars(sub):
            sub.__init__ = _pending_init  # type: ignore[misc]


def _generate(klass: type, *, kw_only: bool) -> None:
    """@dataclass(frozen=True, kw_only=kw_only) on `klass` with nothing compiled but ``__init__``: dataclass would
    compile six methods from source (parsing them is most of the cost); ``__repr__``, ``__eq__``, ``__hash__`` and the
    frozen ``__setattr__`` / ``__delattr__`` are the same checks written once below, and ``__init__`` is compiled
    from a shorter source of the same signature. A method the class body defines itself is kept, as dataclass keeps
    it; a class with something rarer (an InitVar, slots, its own ``__setattr__``) gets dataclass's own methods."""
    own = {name: value for name, value in vars(klass).items() if value is not _pending_init}
    if not SHORT_PATH or not _plain(klass, own):
        _generate_by_dataclass(klass, own, kw_only=kw_only)
        return
    from kvplan.records.bookkeeping import declare_fields
    from kvplan.records.initializer import init_fn

    all_fields = declare_fields(klass, kw_only=kw_only)
    if all_fields is None:
        with _bases_unfrozen(klass):  # dataclass refuses a non-frozen class over frozen bases; frozen is set below
            dataclass(kw_only=kw_only, init=False, repr=False, eq=False)(klass)
        params = klass.__dataclass_params__  # type: ignore[attr-defined]
        params.init = params.repr = params.eq = params.frozen = True  # what the class has: the methods below
        all_fields = list(fields(klass))
    if "__init__" not in own:
        _set(klass, "__init__", init_fn(klass, all_fields))
    if own.get("__doc__") is None:  # dataclass's docstring: the name and signature, read once __init__ exists
        klass.__doc__ = klass.__name__ + str(inspect_signature(klass)).replace(" -> None", "")
    names = frozenset(f.name for f in all_fields)
    _set(klass, "__setattr__", _frozen_setattr_fn(klass, names))
    _set(klass, "__delattr__", _frozen_delattr_fn(klass, names))
    _add_repr_eq_hash(klass, own, all_fields)


def _generate_by_dataclass(klass: type, own: dict[str, Any], *, kw_only: bool) -> None:
    if vars(klass).get("__init__") is _pending_init:  # dataclass writes no __init__ over one the class has
        del klass.__init__  # type: ignore[misc]
    dataclass(frozen=True, kw_only=kw_only, repr=False, eq=False)(klass)
    params = klass.__dataclass_params__  # type: ignore[attr-defined]
    params.repr = params.eq = True
    _add_repr_eq_hash(klass, own, fields(klass))


def _add_repr_eq_hash(klass: type, own: dict[str, Any], all_fields: Sequence[Field[Any]]) -> None:
    compared = _values([f.name for f in all_fields if f.compare])
    if "__repr__" not in own:
        klass.__repr__ = _repr_fn(klass, tuple(f.name for f in all_fields if f.repr))  # type: ignore[assignment]
    if "__eq__" not in own:
        klass.__eq__ = _eq_fn(klass, compared)  # type: ignore[assignment]
    if "__hash__" not in own or (own["__hash__"] is None and "__eq__" in own):  # dataclass's has_explicit_hash
        hashed = _values([f.name for f in all_fields if (f.compare if f.hash is None else f.hash)])
        klass.__hash__ = _hash_fn(klass, hashed)  # type: ignore[assignment]


def _plain(klass: type, own: dict[str, Any]) -> bool:
    """Whether `klass` is what the short path covers: no InitVar, no slots, no own __setattr__ / __delattr__."""
    if "__setattr__" in own or "__delattr__" in own:
        return False
    for base in klass.__mro__[:-1]:
        if "__slots__" in vars(base):
            return False
    for hint in own.get("__annotations__", {}).values():  # noqa: SIM110 (a loop: no generator per record)
        if "InitVar" in str(hint):
            return False
    return True


@contextmanager
def _bases_unfrozen(klass: type) -> Iterator[None]:
    frozen = [p for b in klass.__mro__[1:] if (p := vars(b).get("__dataclass_params__")) is not None and p.frozen]
    for params in frozen:
        params.frozen = False
    try:
        yield
    finally:
        for params in frozen:
            params.frozen = True


def _set(klass: type, name: str, fn: Callable[..., Any]) -> None:
    fn.__qualname__ = f"{klass.__qualname__}.{fn.__name__}"
    setattr(klass, name, fn)


def _frozen_setattr_fn(klass: type, names: frozenset[str]) -> Callable[[Any, str, Any], None]:
    def __setattr__(self: Any, name: str, value: Any) -> None:
        if type(self) is klass or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(klass, self).__setattr__(name, value)  # type: ignore[arg-type]
    return __setattr__


def _frozen_delattr_fn(klass: type, names: frozenset[str]) -> Callable[[Any, str], None]:
    def __delattr__(self: Any, name: str) -> None:
        if type(self) is klass or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(klass, self).__delattr__(name)  # type: ignore[arg-type]
    return __delattr__


def _values(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """The fields' values as a tuple (attrgetter gives a bare value for one name; dataclass compares tuples)."""
    if not names:
        return lambda _: ()
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return attrgetter(*names)


def _eq_fn(klass: type, values: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any, Any], Any]:
    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is self.__class__:
            return values(self) == values(other)
        return NotImplemented
    __eq__.__qualname__ = f"{klass.__qualname__}.__eq__"
    return __eq__


def _hash_fn(klass: type, values: Callable[[Any], tuple[Any, ...]]) -> Callable[[Any], int]:
    def __hash__(self: Any) -> int:
        return hash(values(self))
    __hash__.__qualname__ = f"{klass.__qualname__}.__hash__"
    return __hash__


def _repr_fn(klass: type, names: tuple[str, ...]) -> Callable[[Any], str]:
    running: set[tuple[int, int]] = set()  # dataclass's recursion guard: a record inside itself shows as ...

    def __repr__(self: Any) -> str:
        key = id(self), _thread.get_ident()
        if key in running:
            return "..."
        running.add(key)
        try:
            name: str = self.__class__.__qualname__
            return name + "(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in names) + ")"
        finally:
            running.discard(key)
    __repr__.__qualname__ = f"{klass.__qualname__}.__repr__"
    return __repr__
