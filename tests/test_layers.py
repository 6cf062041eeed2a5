"""The package's layers point down, and nothing imports in a cycle (docs/architecture.md).

Every `import` and `from ... import` in vaultmem/ is read from the source (function-local
imports and imports under `TYPE_CHECKING` included) and checked against the layer table:

    adapters    vaultmem.cli, vaultmem.mcp, vaultmem.watcher, vaultmem.observer, vaultmem.text, vaultmem.__main__
    front door  vaultmem.store
    features    vaultmem.features (and vaultmem.features.mnemosyne)
    core        vaultmem.core
    storage     vaultmem.storage
    base        vaultmem.base, vaultmem (the root: its version), vaultmem.templates

A module imports only its own layer or the ones below it; adapters reach the layers below
the front door only for base and the memory model's names (`vaultmem.core.model`); only
adapters import click, mcp, pydantic or watchdog; no two modules import each other, however
indirectly.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "vaultmem"

LAYERS = ("base", "storage", "core", "features", "front door", "adapters")
ADAPTER_MAY_IMPORT = ("vaultmem", "vaultmem.base", "vaultmem.core.model", "vaultmem.store", "vaultmem.templates")
ADAPTER_ONLY = ("click", "mcp", "pydantic", "watchdog")


def layer_of(module: str) -> str:
    parts = module.split(".")
    if module in ("vaultmem", "vaultmem.templates") or parts[:2] == ["vaultmem", "base"]:
        return "base"
    if parts[1] in ("cli", "mcp", "watcher", "observer", "text", "__main__"):
        return "adapters"
    return {"storage": "storage", "core": "core", "features": "features", "store": "front door"}[parts[1]]


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def sources() -> dict[str, str]:
    return {module_name(p): p.read_text(encoding="utf-8") for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(module: str, source: str, known: set[str]) -> list[tuple[str, int]]:
    """(imported module, line) for every import in a module's source; `from pkg import mod`
    counts as importing pkg.mod when that is a module of ours."""
    found = []
    package = module if module + ".__init__" in known or _is_package(module) else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolve against this module's package
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            for alias in node.names:
                full = f"{base}.{alias.name}"
                found.append((full if full in known else base, node.lineno))
    return found


def _is_package(module: str) -> bool:
    return (ROOT / Path(*module.split(".")) / "__init__.py").is_file()


def violations(modules: dict[str, str]) -> list[str]:
    """Every upward import, adapter shortcut, adapter-only library outside an adapter, and cycle."""
    known = set(modules)
    problems = []
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, source in modules.items():
        mine = layer_of(module)
        for target, line in imports_of(module, source, known):
            top = target.split(".")[0]
            if top in ADAPTER_ONLY and mine != "adapters":
                problems.append(f"{module}:{line} imports {target}: only adapters import {top}")
            if top != "vaultmem":
                continue
            theirs = layer_of(target)
            if LAYERS.index(theirs) > LAYERS.index(mine):
                problems.append(f"{module}:{line} imports {target}: {mine} must not import {theirs}")
            if (mine == "adapters" and theirs != "adapters"
                    and not any(target == ok or target.startswith(ok + ".") for ok in ADAPTER_MAY_IMPORT
                                if ok != "vaultmem")
                    and target != "vaultmem"):
                problems.append(f"{module}:{line} imports {target}: adapters call vaultmem.store "
                                "(and base, core.model) only")
            if target in graph and target != module:
                graph[module].add(target)
    problems += [f"import cycle: {' -> '.join(cycle)}" for cycle in cycles(graph)]
    return problems


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component) + [sorted(component)[0]])

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_layers_point_down_and_nothing_imports_in_a_cycle():
    assert violations(sources()) == []


@pytest.mark.parametrize("module, line, problem", [
    ("vaultmem.storage.note", "from vaultmem.store import MemoryStore",
     "imports vaultmem.store: storage must not import front door"),
    ("vaultmem.core.memories", "from vaultmem.features import graph",
     "imports vaultmem.features.graph: core must not import features"),
    ("vaultmem.features.graph", "def f():\n    import click",
     "imports click: only adapters import click"),
    ("vaultmem.cli.commands", "from vaultmem.features import lifecycle",
     "imports vaultmem.features.lifecycle: adapters call vaultmem.store (and base, core.model) only"),
    ("vaultmem.core.decay", "from vaultmem.core import scoring",  # scoring imports decay
     None),
])
def test_the_check_fails_on_an_upward_import_a_shortcut_and_a_cycle(module, line, problem):
    modules = sources()
    at = modules[module].count("\n") + 2 + line.count("\n")  # the line of the import itself
    modules[module] += "\n" + line + "\n"
    found = violations(modules)
    if problem is None:
        assert found == ["import cycle: vaultmem.core.decay -> vaultmem.core.scoring -> vaultmem.core.decay"]
    else:
        assert f"{module}:{at} {problem}" in found


def test_no_module_but_the_adapters_imports_the_front_door():
    users = {m for m, s in sources().items()
             for target, _ in imports_of(m, s, set(sources())) if target == "vaultmem.store"}
    assert users and all(layer_of(m) == "adapters" for m in users)


def test_the_wheel_lists_every_package_and_ships_the_templates():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    on_disk = {module_name(p.parent) for p in PACKAGE.rglob("__init__.py")} | {"vaultmem.templates"}
    templates = ROOT / "templates"
    data = {".".join(("vaultmem.templates", *d.relative_to(templates).parts)) for d in templates.rglob("*")
            if d.is_dir() and d.name != "__pycache__" and any(f.is_file() for f in d.iterdir())}
    assert set(config["packages"]) == on_disk | data
    assert config["package-dir"] == {"vaultmem.templates": "templates"}
    assert not any(p.is_symlink() for p in ROOT.iterdir())
    shipped = config["package-data"]["vaultmem.templates"]
    runtime = ("memory.md", "activation.yaml", "classify.yaml", "entities.yaml")
    assert all(any(Path(name).match(glob) for glob in shipped) for name in runtime)


@pytest.mark.parametrize("module", ["vaultmem.storage.note", "vaultmem.core.memories", "vaultmem.features.graph"])
def test_layer_of_names_the_layer(module):
    assert layer_of(module) == {"vaultmem.storage.note": "storage", "vaultmem.core.memories": "core",
                                "vaultmem.features.graph": "features"}[module]
