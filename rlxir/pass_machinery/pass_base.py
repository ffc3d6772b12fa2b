"""What a pass is, and where passes are found by name.

A pass is a small frozen attrs class deriving from `Pass`:

    @register_pass
    @attrs.frozen
    class Fuse(Pass):
        \"\"\"Fuse matmul+bias+activation chains and elementwise regions.\"\"\"

        name = "fuse"
        max_region: int = option(32, "most steps in one fused_elementwise region")

        def run(self, graph, ctx) -> bool:
            ...

`name` is the kebab-case name pipelines and the CLI use; each option is an attrs field
made with `option(default, doc)` and is written ``max-region=32`` in pipeline text. `run`
changes the graph in place and returns whether it changed anything (it must not claim a
change it did not make; the verify-each instrument checks that in tests).

Passes are found by name: the built-in ones are the modules of `rlxir.passes` (one module
per pass, imported on first use), out-of-tree ones register through the ``rlxir.passes``
entry-point group or by importing a plugin module (`load_plugin`, ``--plugin MODULE``).
Two passes of one name are refused.
"""

from __future__ import annotations

import abc
import contextlib
import importlib
import sys
import pkgutil
import typing
from collections.abc import Mapping
from importlib import metadata
from typing import Any, ClassVar

import attrs

from rlxir.errors import RlxError
from rlxir.ir.graph import Graph
from rlxir.ir.interface import Interface
from rlxir.targets.target import Target, get_target



class PassError(RlxError):
    """A pass could not do its job on this graph (a refusal, with the reason)."""


def option(default: Any, doc: str) -> Any:
    """Declare a pass option with its default and a one-line description."""
    return attrs.field(default=default, metadata={"doc": doc})


@attrs.define
class PassContext:
    """What passes share during one pipeline run.

    `target` is the backend declaration when a backend compiles (`compile` puts the target
    it was given here, derived ones included); `bindings` the symbol values; `stats`
    collects one row per pass run (the pass manager fills it). A pass reads its target
    through `target_for`, never from pipeline text, so every field of a derived target
    takes effect.
    """

    target: Target | None = None
    bindings: dict[str, int] = attrs.field(factory=dict)
    stats: list[PassStat] = attrs.field(factory=list)

    def target_for(self, pass_: Pass) -> Target:
        """The target `pass_` works for: its own `target` option when set (a pass run alone,
        ``rlxir opt --pipeline 'lower{target=cuda}'``), else this context's target.

        Raises `PassError` when neither names one, or the option names no known target.
        """
        named: str = getattr(pass_, "target", "")
        if not named and self.target is not None:
            return self.target  # resolved once, where the compile began
        if not named:
            raise PassError(f"{pass_.name} needs a target",
                            expected=f"{pass_.name}{{target=NAME}}, `rlxir opt --target NAME` or a backend's compile")
        try:
            return get_target(named)
        except RlxError as error:
            raise PassError(f"{pass_.name}: {error.message}", expected=error.expected) from None


class Pass(abc.ABC):
    """Base of all passes. Subclasses are frozen attrs classes; see the module docstring."""

    name: ClassVar[str] = ""
    requires: ClassVar[tuple[str, ...]] = ()
    """Passes that must appear earlier in any pipeline that contains this one."""
    must_precede: ClassVar[tuple[str, ...]] = ()
    """Passes that, when present, must appear later than this one."""

    @abc.abstractmethod
    def run(self, graph: Graph, ctx: PassContext) -> bool:
        """Transform `graph` in place; return True exactly when it changed."""

    # --- options ------------------------------------------------------------------------
    @classmethod
    def option_fields(cls) -> list[attrs.Attribute]:
        return [field for field in attrs.fields(cls)] if attrs.has(cls) else []

    @classmethod
    def option_types(cls) -> dict[str, Any]:
        hints = typing.get_type_hints(cls)
        return {field.name: hints.get(field.name, str) for field in cls.option_fields()}

    @classmethod
    def summary(cls) -> str:
        """The first paragraph of the pass's docstring, on one line."""
        paragraph = (cls.__doc__ or "").strip().split("\n\n")[0]
        return " ".join(paragraph.split())

    def non_default_options(self) -> dict[str, Any]:
        """Options whose value differs from the default, in declaration order."""
        values = {}
        for field in self.option_fields():
            value = getattr(self, field.name)
            if value != field.default:
                values[field.name] = value
        return values


def option_text_name(field_name: str) -> str:
    return field_name.replace("_", "-")


_PASSES: dict[str, type[Pass]] = {}
_SCANNED = {"builtin": False, "entry_points": False}
_PROBLEMS: list[str] = []


def register_pass(cls: type[Pass]) -> type[Pass]:
    """Class decorator: make `cls` findable by its `name`. Duplicate names are refused."""
    if not cls.name or cls.name != cls.name.lower() or "_" in cls.name or " " in cls.name:
        raise ValueError(f"pass name {cls.name!r} must be kebab-case, e.g. 'fuse-regions'")
    existing = _PASSES.get(cls.name)
    if existing is not None and existing is not cls:
        where = f"{existing.__module__}.{existing.__qualname__}"
        raise ValueError(f"a pass named {cls.name!r} is already registered (by {where})")
    _PASSES[cls.name] = cls
    return cls


def _import_builtin(name: str) -> None:
    module = "rlxir.passes." + name.replace("-", "_")
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as error:
        if error.name != module:
            raise


def _scan_builtins() -> None:
    if _SCANNED["builtin"]:
        return
    import rlxir.passes as package

    for info in pkgutil.iter_modules(package.__path__):
        importlib.import_module(f"rlxir.passes.{info.name}")
    _SCANNED["builtin"] = True


def _scan_entry_points() -> None:
    """Register the ``rlxir.passes`` entry points. One that fails to load, is not a `Pass`,
    or takes a name already registered by another class is not registered; each is kept in
    `entry_point_problems` (what `rlxir passes` reports and an unknown-pass error names),
    so a broken or clashing plugin is never skipped in silence, nor stops the other passes."""
    if _SCANNED["entry_points"]:
        return
    _SCANNED["entry_points"] = True
    _scan_builtins()  # the built-ins hold their names first, whichever pass is asked for first
    for entry in metadata.entry_points(group="rlxir.passes"):
        source = f"entry point {entry.name} = {entry.value}"
        try:
            with contextlib.redirect_stdout(sys.stderr):
                loaded = entry.load()
        except (Exception, SystemExit) as error:  # the plugin's own code failed: its defect
            _PROBLEMS.append(f"{source} failed while loading: {type(error).__name__}: {error}")
            continue
        if not (isinstance(loaded, type) and issubclass(loaded, Pass)):
            _PROBLEMS.append(f"{source} is not a Pass subclass, so it registers nothing")
            continue
        existing = _PASSES.get(loaded.name)
        if existing is not None and existing is not loaded:
            _PROBLEMS.append(f"{source} is not used: its pass name {loaded.name!r} is already registered by "
                             f"{existing.__module__}.{existing.__qualname__}")
            continue
        try:
            register_pass(loaded)
        except ValueError as error:
            _PROBLEMS.append(f"{source} is not used: {error}")


def entry_point_problems() -> list[str]:
    """Why each ``rlxir.passes`` entry point that registered nothing did not (after a scan)."""
    _scan_entry_points()
    return list(_PROBLEMS)


def get_pass(name: str) -> type[Pass] | None:
    """The pass class registered as `name` (built-in modules and plugins are loaded lazily)."""
    if name in _PASSES:
        return _PASSES[name]
    _import_builtin(name)
    if name not in _PASSES:
        _scan_entry_points()
    return _PASSES.get(name)


def available_passes() -> dict[str, type[Pass]]:
    """Every pass: built-in, from entry points, and from loaded plugins, sorted by name."""
    _scan_builtins()
    _scan_entry_points()
    return dict(sorted(_PASSES.items()))


def load_plugin(module_name: str) -> list[str]:
    """Import a plugin module (its passes register on import); returns the new pass names.

    The built-in passes are registered first, so a plugin pass that takes a built-in's name
    is refused whichever is used first. Whatever the module prints while importing goes to
    stderr (standard output is the report's, JSON included), and anything it raises,
    `SystemExit` too, is an `RlxError` naming the module.
    """
    before = set(_PASSES)
    if not module_name.strip() or module_name.startswith("."):
        raise RlxError(f"cannot load plugin {module_name!r}: not an absolute module name",
                       expected="an importable module name such as my_passes or pkg.passes")
    _scan_builtins()
    try:
        with contextlib.redirect_stdout(sys.stderr):
            importlib.import_module(module_name)
    except ImportError as error:
        raise RlxError(f"cannot load plugin {module_name!r}: {error}", expected="an importable module name") from None
    except SystemExit as stop:
        raise RlxError(f"plugin {module_name!r} called sys.exit({stop.code!r}) while loading",
                       expected="a plugin module that registers its passes and returns") from None
    except Exception as error:  # the plugin's own code failed on import: its defect, reported as such
        raise RlxError(f"plugin {module_name!r} failed while loading: {type(error).__name__}: {error}",
                       expected="a plugin module that imports cleanly (python -c 'import MODULE' shows the "
                                "traceback)") from None
    return sorted(set(_PASSES) - before)


def plugin_module_of(cls: type[Pass]) -> str | None:
    """The module that defined pass class `cls` when it is not one of rlxir's own, else None."""
    module = cls.__module__
    if module == "rlxir" or module.startswith("rlxir."):
        return None
    return module


def make_pass(name: str, options: Mapping[str, Any] | None = None) -> Pass:
    """An instance of pass `name` with `options` (keyed by field name, values typed)."""
    cls = get_pass(name)
    if cls is None:
        problems = entry_point_problems()
        raise RlxError(f"unknown pass {name!r}" + "".join(f"\n  note: {problem}" for problem in problems))
    return cls(**dict(options or {}))


@attrs.frozen
class PassEntry:
    """One configured pass in a pipeline: the instance and the options its text wrote."""

    instance: Pass
    written: tuple = ()  # ((field_name, value), ...) in the order the spec wrote them

    @property
    def name(self) -> str:
        return self.instance.name

    def text(self) -> str:
        if not self.written:
            return self.name
        options = ",".join(f"{option_text_name(key)}={_option_text(value)}" for key, value in self.written)
        return f"{self.name}{{{options}}}"


def _option_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return ":".join(str(item) for item in value)
    return str(value)


@attrs.frozen
class PassStat:
    """One pass run: position, spec text, node counts before/after, seconds, changed."""

    index: int
    spec: str
    nodes_before: int
    nodes_after: int
    seconds: float
    changed: bool


def check_interface_kept(entry: PassEntry, graph: Graph, before: Interface) -> Interface:
    """Raise `PassError` naming the pass and each change when it changed the graph's
    interface (input, param or output names, order or types); every route that runs passes
    (opt, compile, fit, compare, run) checks this after each pass. Returns the interface
    as it is now (equal to `before`)."""
    after = Interface.of(graph)
    changes = before.differences(after)
    if not changes:
        return after
    # Point at the output line when only outputs changed, else at the graph header.
    only_outputs = (before.inputs, before.params) == (after.inputs, after.params)
    loc = (graph.output_loc if only_outputs else None) or graph.loc
    raise PassError(f"pass {entry.text()} changed the interface of graph {graph.name}: " + "; ".join(changes),
                    loc, "the inputs, params and outputs of the graph kept as they were (names, order, types)")
