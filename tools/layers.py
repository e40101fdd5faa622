"""The import layers: which room each module is in, the floors the rooms stand on, and the imports that
break them. ``python -m tools.layers`` prints the figures and every break; tests/unit/test_layers.py
holds the tree to none.

A room is a package (its top-level modules are the package's own room). Rooms stand on floors, lowest
first: a module imports from its own room or from a lower floor, never from a room of its own floor or of
a higher one, and no modules import each other in a loop. Every import counts, also one inside a function
or under ``TYPE_CHECKING``, but for a package's own ``__init__`` (Python runs it before any module of the
package, so importing it from inside runs nothing new). The tests and benchmarks stand above everything and are not counted.
"""

from __future__ import annotations

import ast
import os
import sys
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Where the packages live (the exporter's distribution is under exporters/).
SOURCES = {"innodb_tuning": "exporters", "innodb_bundle": "exporters", "innodb_exporter": "exporters",
           "innodb_replay": "exporters", "signals": "", "alerts": "", "dashboards": "", "stack": "", "tools": ""}

# Lowest first; rooms on one floor do not import each other.
FLOORS = (
    ("innodb_tuning", "innodb_bundle"),  # the tuning procedure's facts; the bundle format
    ("innodb_exporter.parsers",),  # text -> typed values
    ("innodb_exporter.sources",),  # one statement each
    ("innodb_exporter.metrics",),  # the metric contract
    ("innodb_exporter.scraping",),  # a target's connection, scrapes and exposition
    ("innodb_exporter.capture",),  # evidence when a page fires
    ("innodb_exporter.web",),  # the HTTP server and its web config
    ("innodb_exporter", "signals"),  # the exporter's app and commands; the rules' and panels' vocabulary
    ("innodb_replay", "alerts", "dashboards"),
    ("stack",),
    ("tools",),
)
ROOMS = tuple(room for floor in FLOORS for room in floor)
FLOOR_OF = {room: number for number, floor in enumerate(FLOORS) for room in floor}


@dataclass(frozen=True)
class Import:
    module: str
    imported: str
    line: int

    def describe(self) -> str:
        return f"{self.module} (line {self.line}) imports {self.imported}"


def modules(root: str = ROOT) -> dict[str, str]:
    """Module name -> file."""
    out = {}
    for package, parent in SOURCES.items():
        base = os.path.join(root, parent)
        for folder, dirs, files in os.walk(os.path.join(base, package)):
            dirs[:] = [d for d in dirs if d not in ("__pycache__", "tests", "build")]
            for name in files:
                if name.endswith(".py"):
                    relative = os.path.relpath(os.path.join(folder, name), base)[:-3].replace(os.sep, ".")
                    out[relative.removesuffix(".__init__")] = os.path.join(folder, name)
    return out


def room(module: str) -> str:
    return max((r for r in ROOMS if module == r or module.startswith(r + ".")), key=len)


def imports(known: dict[str, str]) -> list[Import]:
    out = []
    for module, path in known.items():
        package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                           for alias in node.names]
            else:
                continue
            for target in targets:
                while target and target not in known:  # a name in a module: the module
                    target = target.rpartition(".")[0]
                if module.startswith(target + "."):
                    continue  # a package's own __init__ (its version): Python runs it before any of its modules
                if target and target != module:
                    out.append(Import(module, target, node.lineno))
    return out


def loops(edges: list[Import]) -> list[list[str]]:
    """The module cycles (strongly connected components of more than one module), each sorted."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        graph.setdefault(edge.module, set()).add(edge.imported)
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):  # Tarjan's algorithm
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def breaks(edges: list[Import]) -> list[Import]:
    """Imports into a room of the same floor or of a higher one."""
    out = []
    for edge in edges:
        source, target = room(edge.module), room(edge.imported)
        if source != target and FLOOR_OF[target] >= FLOOR_OF[source]:
            out.append(edge)
    return out


def main() -> int:
    known = modules()
    edges = imports(known)
    cycles, wrong = loops(edges), breaks(edges)
    print(f"{len(known)} modules in {len(ROOMS)} rooms on {len(FLOORS)} floors; {len(edges)} imports; "
          f"{len(cycles)} loops; {len(wrong)} imports that run sideways or back up")
    for floor, rooms in reversed(list(enumerate(FLOORS))):
        print(f"  floor {floor}: " + ", ".join(f"{r} ({sum(room(m) == r for m in known)})" for r in rooms))
    for cycle in cycles:
        print("loop: " + " -> ".join(cycle))
    for edge in wrong:
        print("back up: " + edge.describe())
    return 1 if cycles or wrong else 0


if __name__ == "__main__":
    sys.exit(main())
