"""`@command`: a typer command that asks for library objects instead of their options, and reports errors.

A parameter annotated ``Annotated[T, Expand(builder)]`` is replaced, in the signature typer reads, by the
builder's own parameters (each an option defined once, in ``kvplan.cli.options`` or ``engine_options``); when
the command runs, the builder makes the object from them and the command receives it. So a command takes one
``CacheRequest``, not fifteen options, and no option is declared twice. ``Expand(builder, without=(...))`` leaves
out options a command takes in another form (a comma list of KV dtypes) or not at all.

A ``KvplanError`` becomes one line on stderr with the library's argument names said as the flags this command
declares (``max_model_len`` -> ``--max-model-len``), and its exit code.
"""

from __future__ import annotations

import functools
import inspect
import re
import sys
from collections.abc import Callable
from contextvars import ContextVar
from typing import Annotated, Any, NamedTuple, TypeVar, get_args, get_origin, get_type_hints

import typer

from kvplan.errors import KvplanError

F = TypeVar("F", bound=Callable[..., Any])


class Expand(NamedTuple):
    """Marks a parameter to be built by `builder` from the builder's own options."""

    builder: Callable[..., Any]
    without: tuple[str, ...] = ()


def _expand_of(annotation: Any) -> Expand | None:
    if get_origin(annotation) is not Annotated:
        return None
    return next((a for a in get_args(annotation)[1:] if isinstance(a, Expand)), None)


def _parameters(func: Callable[..., Any], skip: tuple[str, ...] = ()) -> list[inspect.Parameter]:
    hints = _type_hints(func)
    return [p.replace(annotation=hints.get(p.name, p.annotation)) for p in inspect.signature(func).parameters.values()
            if p.name not in skip]


def _type_hints(func: Callable[..., Any]) -> dict[str, Any]:
    """``get_type_hints(func, include_extras=True)`` for the parameters. An annotation that names a module-level alias
    (``cache: CapacityCache``, ``tp: Tp``) is looked up, not compiled and evaluated as typing does each string; any
    other form goes to typing."""
    hints: dict[str, Any] = {}
    names = getattr(func, "__globals__", {})
    for name, text in func.__annotations__.items():
        if name == "return":
            continue
        found = names.get(text, _UNNAMED) if type(text) is str else _UNNAMED
        if found is _UNNAMED or found is None:
            return get_type_hints(func, include_extras=True)
        hints[name] = found
    return hints


_UNNAMED = object()


def flags_of(parameters: list[inspect.Parameter]) -> dict[str, str]:
    """Parameter name -> the flag typer declares for it (arguments and context parameters have none)."""
    out = {}
    for p in parameters:
        info = next((a for a in get_args(p.annotation)[1:] if isinstance(a, typer.models.OptionInfo)), None)
        decls = [d for d in (info.param_decls or ()) if d.startswith("--")] if info else []
        if info and isinstance(info.default, str) and info.default.startswith("--"):
            decls.insert(0, info.default)
        if decls:
            out[p.name] = decls[0]
    return out


def error_message(exc: KvplanError, flags: dict[str, str]) -> str:
    """A library error as this command prints it: the arguments it names said as the command's flags."""
    message = str(exc)
    for name in exc.arg_names:
        if name in flags:  # not inside a path or an id ('/models/x', 'org/model'): those are values
            message = re.sub(rf"(?<![\w/-]){re.escape(name)}(?![\w/-])", flags[name], message)
    return message


_GIVEN: ContextVar[frozenset[str]] = ContextVar("given", default=frozenset())
_CONTEXT = "kvplan_context"  # the click context typer hands a command that asks for one (not an option)


def given_options() -> frozenset[str]:
    """The running command's parameters given on its command line (or the environment), not left to their
    defaults (click's parameter sources): what a pasted launch command must agree with."""
    return _GIVEN.get()


def _given(ctx: Any) -> frozenset[str]:
    return frozenset(name for name in ctx.params
                     if getattr(ctx.get_parameter_source(name), "name", "DEFAULT") not in ("DEFAULT", "DEFAULT_MAP"))


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print one line on stderr and return the Exit to raise (a newline in, say, a file name is printed as a
    space: the error stays one line)."""
    print(f"kvplan: error: {' '.join(message.splitlines())}", file=sys.stderr)
    return typer.Exit(code)


def command(func: F) -> F:
    """Expand the command's Expand parameters into their builders' options; report KvplanErrors in one line."""
    shown: list[inspect.Parameter] = []
    built: list[tuple[str, Expand, list[str]]] = []
    for p in _parameters(func):
        expand = _expand_of(p.annotation)
        if expand is None:
            shown.append(p.replace(kind=inspect.Parameter.KEYWORD_ONLY))
            continue
        options = _parameters(expand.builder, skip=expand.without)
        shown += [o.replace(kind=inspect.Parameter.KEYWORD_ONLY) for o in options]
        built.append((p.name, expand, [o.name for o in options]))
    names = [p.name for p in shown]
    assert len(names) == len(set(names)), f"{func.__name__}: an option is declared twice: {names}"
    flags = flags_of(shown)

    own = next((p.name for p in shown if p.annotation is typer.Context), None)  # the command asks for the context

    @functools.wraps(func)
    def wrapper(**kwargs: Any) -> Any:
        ctx = kwargs[own] if own else kwargs.pop(_CONTEXT, None)
        token = _GIVEN.set(_given(ctx) if ctx is not None else frozenset())
        try:
            for name, expand, options in built:
                kwargs[name] = expand.builder(**{o: kwargs.pop(o) for o in options})
            return func(**kwargs)
        except KvplanError as exc:
            raise fail(error_message(exc, flags), exc.exit_code) from None
        finally:
            _GIVEN.reset(token)

    context = [] if own else [inspect.Parameter(_CONTEXT, inspect.Parameter.KEYWORD_ONLY, annotation=typer.Context)]
    wrapper.__signature__ = inspect.Signature([*shown, *context])  # type: ignore[attr-defined]
    wrapper.__annotations__ = {p.name: p.annotation for p in (*shown, *context)}
    wrapper.flags = flags  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]
