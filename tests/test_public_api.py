"""vaultmem uses its dependencies (the standard library included) through their public names
only (docs/architecture.md, "Standing on public APIs").

Every module in vaultmem/ is read as source, and any of these fails the build:
- `import x._y` or `from x._y import ...`: a private module of anything but vaultmem;
- `from x import _y`: a private name of anything but vaultmem;
- `obj._name` (and `getattr`/`setattr`/`hasattr`/`delattr` of `"_name"`), where no part of
  vaultmem defines `_name` (a function, class, method, module global, `self._x`/`cls._x`,
  class field, parameter, or a name bound in a module): an attribute only a dependency can have.
Dunder names (`__init__`) are public protocol, and `_` alone is a name like any other.

`ALLOWED` lists the private-looking names that the library documents as public, each with
its reason. A name vaultmem defines itself is not checked wherever it is used, so one that
happens to share a dependency's private attribute's name hides it: keep vaultmem's own
private names distinct from the ones its dependencies use.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator

import pytest
from test_layers import sources  # every module's source by its dotted name

# `module.name` uses that start with `_` and are the documented public API of the module, with why.
ALLOWED = {
    # os documents `_exit` as how a child exits after fork() without the parent's cleanup
    # handlers ("should normally only be used in the child process after a fork()"): the
    # watcher's merge child (storage/segments.py) needs exactly that
    "os._exit": "documented for a forked child",
}


def private(name: str) -> bool:
    """A name a library keeps to itself: a leading underscore, not a dunder, not `_` alone."""
    return name.startswith("_") and name != "_" and not (name.startswith("__") and name.endswith("__"))


@functools.cache
def parsed(source: str) -> ast.Module:
    """A module's tree, parsed once per text: the planted copies differ in one module only."""
    return ast.parse(source)


def defined_names(modules: dict[str, str]) -> set[str]:
    """Every private name vaultmem defines: functions, classes, methods, assigned names (module
    globals, class fields, locals), `self._x`/`cls._x`, parameters, import aliases."""
    names: set[str] = set()
    for source in modules.values():
        names |= _defined_in(source)
    return names


@functools.cache
def _defined_in(source: str) -> frozenset[str]:
    names: set[str] = set()
    for node in ast.walk(parsed(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)
              and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
            names.add(node.attr)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.alias) and node.asname:
            names.add(node.asname)
        elif isinstance(node, ast.keyword) and node.arg is not None:
            names.add(node.arg)  # a NamedTuple, dataclass or TypedDict field made by a call
    return frozenset(name for name in names if private(name))


def _ours(module: str) -> bool:
    return module == "vaultmem" or module.startswith("vaultmem.")


def _uses(tree: ast.AST) -> Iterator[tuple[int, str, str]]:
    """(line, what, name) for each use of a possibly private name of another library."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if not _ours(alias.name) and any(private(part) for part in alias.name.split(".")):
                    yield node.lineno, f"imports {alias.name}", ""
        elif isinstance(node, ast.ImportFrom):
            if node.level or _ours(node.module or ""):
                continue  # relative imports are vaultmem's own
            module = node.module or ""
            if any(private(part) for part in module.split(".")):
                yield node.lineno, f"imports from {module}", ""
            for alias in node.names:
                if private(alias.name):
                    yield node.lineno, f"imports {alias.name} from {module}", ""
        elif isinstance(node, ast.Attribute) and private(node.attr):
            if isinstance(node.value, ast.Name) and f"{node.value.id}.{node.attr}" in ALLOWED:
                continue
            yield node.lineno, f"uses attribute {node.attr}", node.attr
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in ("getattr", "setattr", "hasattr", "delattr") and len(node.args) >= 2
              and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
              and private(node.args[1].value)):
            yield node.lineno, f"uses attribute {node.args[1].value} by {node.func.id}", node.args[1].value


@functools.cache
def _uses_in(source: str) -> list[tuple[int, str, str]]:
    return sorted(_uses(parsed(source)))


def violations(modules: dict[str, str]) -> list[str]:
    """`module:line problem` for every private name of a dependency that vaultmem uses."""
    ours = defined_names(modules)
    found = []
    for module, source in modules.items():
        for line, what, name in _uses_in(source):
            if name and name in ours:
                continue
            found.append(f"{module}:{line} {what}")
    return found


def test_no_private_name_of_a_dependency_is_used():
    assert violations(sources()) == []


@pytest.mark.parametrize("planted, problem", [
    ("import whoosh._planted", "imports whoosh._planted"),
    ("import mcp.server._planted.frames as frames", "imports mcp.server._planted.frames"),
    ("from click._planted import echo", "imports from click._planted"),
    ("from mcp.shared import _planted_streams", "imports _planted_streams from mcp.shared"),
    ("def f(ix):\n    return ix._planted_segments()", "uses attribute _planted_segments"),
    ("import sys\nframe = sys._getframe(0)", "uses attribute _getframe"),
    ("def f(server):\n    return getattr(server, '_planted_lowlevel')", "uses attribute _planted_lowlevel by getattr"),
])
def test_the_check_fails_on_a_planted_private_name(planted, problem):
    modules = sources()
    before = violations(modules)
    module = "vaultmem.base.errors"
    at = modules[module].count("\n") + 2 + planted.count("\n")  # the planted use's line
    modules[module] += "\n" + planted + "\n"
    assert [v for v in violations(modules) if v not in before] == [f"{module}:{at} {problem}"]


def test_vaultmems_own_private_names_pass_and_so_does_a_dunder():
    modules = sources()
    before = violations(modules)
    modules["vaultmem.base.errors"] += (
        "\nclass Box:\n    _size: int = 0\n\n    def __init__(self, _hint: int = 0) -> None:\n"
        "        self._inner = _hint\n\n    def grow(self) -> int:\n        return self._inner + self._size"
        " + len(self.__class__.__name__)\n\n\ndef _helper(box: Box) -> int:\n    return box._inner\n"
        "\n\nfrom vaultmem.base.walk import _helper as _walk_helper  # noqa\n")
    assert violations(modules) == before
    assert {"_size", "_hint", "_inner", "_helper", "_walk_helper"} <= defined_names(modules)


@pytest.mark.parametrize("name, is_private", [
    ("_segments", True), ("__mangled", True), ("_", False), ("__init__", False), ("public", False),
])
def test_private_names_are_the_underscored_ones_but_dunders(name, is_private):
    assert private(name) is is_private
