"""Plain option values without pydantic: where most of `kvplan size`'s start-up went.

Since typer 0.22 every parameter value goes through a pydantic ``TypeAdapter``: the first option value imports
pydantic (about 0.1 s) and each parameter builds a validator (about 1 ms each, 20-50 per command). kvplan's
options are all plain ``str``, ``int``, ``float``, ``bool`` or ``list[str]`` (the builders in
``kvplan.cli.options`` and ``engine_options`` parse sizes, lengths and lists themselves), so they are
converted here the way click converts them, with click's messages; any other annotation still goes to typer's
own path. ``install()`` swaps the builder typer's parameters call (``typer.core.build_runtime_param``); when a
typer release moves it, nothing is swapped and typer's own path runs (slower, same answers).
"""

from __future__ import annotations

from typing import Any

PLAIN = (str, int, float, bool)
_ERRORS = {int: "is not a valid integer", float: "is not a valid float"}
_TRUE, _FALSE = ("1", "true", "t", "yes", "y", "on"), ("0", "false", "f", "no", "n", "off")


def convert(value: Any, kind: type) -> Any:
    """click's conversion of one CLI value to `kind` (ValueError with click's message)."""
    if isinstance(value, kind) and not (kind is int and isinstance(value, bool)):
        return value
    text = str(value).strip()
    if kind is bool:
        if text.lower() in _TRUE or text.lower() in _FALSE:
            return text.lower() in _TRUE
        raise ValueError(f"{value!r} is not a valid boolean.")
    if kind is str:
        return str(value)
    try:
        return kind(text)
    except ValueError:
        raise ValueError(f"{value!r} {_ERRORS[kind]}.") from None


def _plain_kind(descriptor: Any) -> tuple[type, bool] | None:
    """(element type, is a list) where the annotation is one kvplan converts itself, else None."""
    info = descriptor.parameter_info
    if info.parser is not None or descriptor.file_annotation is not None or descriptor.is_ranged \
            or descriptor.is_choice or descriptor.is_path:
        return None
    annotation = descriptor.annotation
    if annotation in PLAIN:
        return annotation, False
    if descriptor.is_list and getattr(annotation, "__args__", ()) == (str,):
        return str, True
    return None


def install() -> bool:
    """Use plain conversion for plain parameters in this process; False where typer has no hook for it."""
    try:
        from typer import core
        from typer._click.exceptions import BadParameter
        from typer._coercion import RuntimeParam
    except ImportError:
        return False
    typer_build = getattr(core, "build_runtime_param", None)
    if typer_build is None or getattr(typer_build, "kvplan", False):
        return typer_build is not None

    class PlainRuntimeParam(RuntimeParam):  # not a dataclass of its own: that compiles six methods (start-up time)
        kind: type = str
        many: bool = False

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            try:
                return [convert(v, self.kind) for v in value] if self.many else convert(value, self.kind)
            except ValueError as exc:
                raise BadParameter(str(exc), ctx=ctx, param=param) from None

    def build(descriptor: Any) -> Any:
        plain = _plain_kind(descriptor)
        if plain is None:
            return typer_build(descriptor)
        param = PlainRuntimeParam(annotation=descriptor.annotation, parameter_info=descriptor.parameter_info)
        object.__setattr__(param, "kind", plain[0])  # RuntimeParam is frozen: set as its dataclass __init__ sets
        object.__setattr__(param, "many", plain[1])
        return param

    build.kvplan = True  # type: ignore[attr-defined]
    core.build_runtime_param = build  # type: ignore[attr-defined]
    return True
