"""Declared dependencies = imported dependencies: every third-party module vaultmem/ imports
belongs to a distribution pyproject.toml declares (an extra's only lazily, inside a function),
and every declared distribution is imported by vaultmem/ (or says here why not)."""

from __future__ import annotations

import ast
import re
import sys
from importlib.metadata import distributions, packages_distributions
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "vaultmem"
# declared, never imported by vaultmem/, and why
NOT_IMPORTED: set[tuple[str, str]] = set()
# installed in place of a declared distribution, providing its modules: the other Whoosh
# 2.7-compatible fork, which `make test-whoosh-reloaded` runs the suite on
STANDS_IN = {"whoosh-reloaded": "whoosh3"}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def declared() -> dict[str, str]:
    """Distribution -> "" for [project] dependencies, or the extra's name (test extra left out)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    out = {}
    groups = {"": project["dependencies"], **project.get("optional-dependencies", {})}
    for group, requirements in groups.items():
        if group == "test":
            continue
        for requirement in requirements:
            out[canonical(re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0])] = group
    return out


def imports() -> dict[str, list[tuple[str, bool]]]:
    """Top-level third-party module -> [(where, at module level?)] over every file of vaultmem/."""
    found: dict[str, list[tuple[str, bool]]] = {}
    stdlib = set(sys.stdlib_module_names)
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top_level = {id(node) for node in tree.body}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top not in stdlib and top != "vaultmem":
                    found.setdefault(top, []).append((f"{path.relative_to(ROOT)}:{node.lineno}", id(node) in top_level))
    return found


def distribution(module: str) -> str:
    """The distribution that provides `module`: from what is installed, else the module's name
    as a distribution name (an extra that is not installed here)."""
    dists = packages_distributions().get(module) or _by_files(module)
    name = canonical(dists[0]) if dists else canonical(module)
    return STANDS_IN.get(name, name)


def _by_files(module: str) -> list[str]:
    """The installed distributions whose files hold `module`: Python 3.10's
    packages_distributions reads only top_level.txt, which flit-built wheels (markdown-it-py)
    do not ship; 3.11's also reads the file lists, as this does."""
    return [dist.metadata["Name"] for dist in distributions()
            if any(f.parts[0] in (module, f"{module}.py") for f in dist.files or ())]


def test_every_import_is_declared_and_extras_load_lazily():
    wanted = declared()
    problems = []
    for module, places in sorted(imports().items()):
        dist = distribution(module)
        if dist not in wanted:
            problems.append(f"{module} ({dist}) imported at {places[0][0]} is not declared in pyproject.toml")
        elif wanted[dist]:
            eager = [where for where, top in places if top]
            if eager:
                problems.append(f"{module} belongs to the [{wanted[dist]}] extra but is imported at module level "
                                f"at {eager[0]}; import it inside the function that needs it")
    assert problems == []


def test_every_declared_dependency_is_imported():
    used = {distribution(module) for module in imports()}
    unused = sorted((group, dist) for dist, group in declared().items()
                    if dist not in used and (group, dist) not in NOT_IMPORTED)
    assert unused == []


def test_the_check_sees_what_it_should():
    found = imports()
    assert distribution("yaml") == "pyyaml" and distribution("whoosh") == "whoosh3"
    assert {"pydantic", "anyio", "mcp_types", "click", "yamlcore", "filelock"} <= set(found)
    assert all(not top for _where, top in found["numpy"])  # the embeddings extra: lazy
    assert "mdit-py-plugins" not in declared()
    assert declared()["pydantic"] == "" and declared()["onnxruntime"] == "embeddings"
    assert "torch" not in declared()
