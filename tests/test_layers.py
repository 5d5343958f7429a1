"""The package's layers import only downward, and no two modules import each other.

Every ``import`` counts, also those inside functions (guards defers heavy imports to
keep start-up fast, and a deferred import is still a dependency)."""

from __future__ import annotations

import ast
from pathlib import Path

import guards

PACKAGE = Path(guards.__file__).resolve().parent

#: Lowest first. A module may import its own layer (without a cycle) and those below.
LAYERS = (
    (
        "guards.__init__",
        "guards.errors",
        "guards.values",
        "guards.jsontext",
        "guards.output",
        "guards.config",
        "guards.fsutil",
    ),
    ("guards.git",),
    ("guards.state",),
    ("guards.predict",),
    ("guards.protect",),
    # what a person or an agent is told: the frame, status
    ("guards.report",),
    # where guards plugs in: git hooks, native hooks, agent hooks (which give the frame)
    ("guards.integrations",),
    # the audit of everything below, integrations included
    ("guards.doctor",),
    # the subcommands, and the argparse surface they share (guards.cli)
    ("guards.commands", "guards.cli"),
    # the entry point: decides whether argparse is needed at all
    ("guards.main", "guards.__main__"),
)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts)


def layer_of(module: str) -> int:
    for rank, prefixes in enumerate(LAYERS):
        for prefix in prefixes:
            if module == prefix or module.startswith(prefix + "."):
                return rank
    raise AssertionError(f"{module} belongs to no layer: add it to LAYERS")


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports_of(path: Path, known: set[str]) -> set[str]:
    """The guards modules ``path`` imports (``from guards.x import y`` names module x.y
    when that is a module, else x)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [
                f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in known else node.module
                for a in node.names
            ]
        else:
            continue
        for name in names:
            if name == "guards" or name.startswith("guards."):
                found.add(name if name in known else f"{name}.__init__")
    return {n for n in found if n in known}


def import_graph() -> dict[str, set[str]]:
    modules = all_modules()
    known = set(modules)
    graph = {}
    for name, path in modules.items():
        graph[name] = imports_of(path, known) - {name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_every_module_belongs_to_a_layer() -> None:
    for name in all_modules():
        layer_of(name)


def test_imports_point_only_downward() -> None:
    upward = [
        f"{src} (layer {layer_of(src)}) imports {dst} (layer {layer_of(dst)})"
        for src, targets in import_graph().items()
        for dst in sorted(targets)
        if layer_of(dst) > layer_of(src)
    ]
    assert upward == []


def test_no_import_cycles() -> None:
    assert find_cycle(import_graph()) is None


def test_the_checker_sees_an_upward_import_and_a_cycle() -> None:
    graph = {"guards.git.repo": {"guards.state.ledger"}, "guards.state.ledger": {"guards.git.repo"}}
    assert layer_of("guards.state.ledger") > layer_of("guards.git.repo")
    assert find_cycle(graph) == ["guards.git.repo", "guards.state.ledger", "guards.git.repo"]
