"""Imports point down the layers: no module imports one of a higher layer (app, transport, protocol, tools,
services, adapters, base: docs/architecture.md), nor, even for type checking, one that imports it back
(directly or through others)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "jupyter_pair_mcp"


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    modules = {_module(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        deps: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                for alias in node.names:
                    if f"{target}.{alias.name}" in modules:
                        deps.add(f"{target}.{alias.name}")
                if target in modules:
                    deps.add(target)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name in modules)
        graph[name] = deps - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_the_package_has_no_import_cycle() -> None:
    graph = import_graph()
    assert "jupyter_pair_mcp.adapters.rooms.adapter" in graph  # the walk sees the package
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_rooms_package_face_defines_nothing() -> None:
    tree = ast.parse((PACKAGE / "adapters" / "rooms" / "__init__.py").read_text())
    assert not [n for n in tree.body if isinstance(n, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)]


# The layers, top first (docs/architecture.md). A module imports its own layer or lower ones, never higher.
LAYERS = ("app", "transport", "protocol", "tools", "services", "adapters", "base")
BASE = {"errors", "notices", "revisions", "request_state", "render", "richtext", "limits", "groups", "heap", "_version"}


def layer(module: str) -> str:
    parts = module.split(".")[1:]
    if not parts or parts[0] in ("app", "cli"):  # cli.py: the command line, beside the extension app
        return "app"
    if parts[0] in BASE or parts[0] == "models":
        return "base"
    return parts[0]


def test_every_module_has_a_layer() -> None:
    for module in import_graph():
        assert layer(module) in LAYERS, module


def test_the_package_root_keeps_about_a_dozen_modules() -> None:
    assert len(list(PACKAGE.glob("*.py"))) <= 13


def test_imports_point_down_the_layers() -> None:
    upward = [
        (module, dep)
        for module, deps in import_graph().items()
        for dep in deps
        if LAYERS.index(layer(dep)) < LAYERS.index(layer(module))
    ]
    assert upward == []


def test_an_upward_import_is_seen() -> None:
    assert LAYERS.index(layer("p.tools.notebook")) < LAYERS.index(layer("p.adapters.rooms.adapter"))
    assert layer("p.models.results") == layer("p.errors") == "base"
