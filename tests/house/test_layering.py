"""The layers of docs/architecture.md, held by the imports themselves (lazy imports included).

* ``rio/`` is logic: it imports no ``actors``/``ui``, no ``zmq``, ``tkinter`` or ``threading``.
* ``actors/`` never imports ``ui``.
* ``actors/bus/`` (the transport) imports nothing of the actors above it: only ``actors.bus``,
  ``rio/`` and libraries.
* ``ui/`` reaches the actors only through the bus client (``actors.bus.client``), and ``rio/cli*``
  is the one place that wires all three (it may import anything).
* No import circles between modules, whether the import is at the top or inside a function.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("rio", "actors", "ui")
#: rio/ modules allowed to wire the layers: the `rio` command and its sub-commands.
WIRING = ("rio.cli",)
#: What ui/ may import from actors/: the bus client.
UI_MAY_USE = ("actors.bus.client",)
RIO_FORBIDDEN = ("actors", "ui", "zmq", "tkinter", "threading", "pykka", "psutil")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Every module this file imports, anywhere in it (absolute names)."""
    package = _module_name(path).rsplit(".", 1)[0] if path.name != "__init__.py" \
        else _module_name(path)
    return _imports_in(path.read_text(encoding="utf-8"), package, str(path))


def _imports_in(source: str, package: str, filename: str = "<source>") -> set[str]:
    """Every module ``source`` (a module of ``package``) imports: at the top, inside a function
    or a class, under ``if TYPE_CHECKING`` — every Import/ImportFrom node of its tree."""
    tree = ast.parse(source, filename)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)] if node.level > 1 else base
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            found.add(stem)
            found.update(f"{stem}.{alias.name}" for alias in node.names)
    return found


def _graph() -> dict[str, set[str]]:
    files = [p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py")]
    modules = {_module_name(p): p for p in files}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for imported in _imports(path):
            # "from rio import errors" names the module rio.protocol.errors; keep the longest real module
            while imported and imported not in modules:
                imported = imported.rpartition(".")[0]
            if imported and imported != name and not modules[imported].name == "__init__.py":
                targets.add(imported)
        graph[name] = targets
    return graph


def _starts(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def test_rio_is_logic_only():
    bad = []
    for path in (REPO / "rio").rglob("*.py"):
        name = _module_name(path)
        if _starts(name, WIRING):
            continue
        bad += [f"{name} imports {imp}" for imp in sorted(_imports(path))
                if _starts(imp, RIO_FORBIDDEN)]
    assert bad == []


def test_actors_never_import_the_ui():
    bad = [f"{_module_name(p)} imports {imp}" for p in (REPO / "actors").rglob("*.py")
           for imp in sorted(_imports(p)) if _starts(imp, ("ui",))]
    assert bad == []


def test_the_bus_imports_nothing_of_the_actors_above_it():
    bad = [f"{_module_name(p)} imports {imp}" for p in (REPO / "actors" / "bus").rglob("*.py")
           for imp in sorted(_imports(p))
           if _starts(imp, ("actors",)) and not _starts(imp, ("actors.bus",))
           and imp != "actors"]
    assert bad == []


def test_imports_are_found_wherever_they_are_written():
    source = (
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from actors.runtime.supervisor import Supervisor\n"
        "def later():\n"
        "    import psutil\n"
        "    from .sockets import make_dealer\n"
        "    from .. import process_control\n"
        "class Held:\n"
        "    def method(self):\n"
        "        from actors import memory_trim\n")
    found = _imports_in(source, "actors.bus")
    assert {"actors.runtime.supervisor", "psutil", "actors.bus.sockets", "actors.process_control",
            "actors.memory_trim"} <= found


def test_the_ui_reaches_actors_only_through_the_bus_client():
    bad = [f"{_module_name(p)} imports {imp}" for p in (REPO / "ui").rglob("*.py")
           for imp in sorted(_imports(p))
           if _starts(imp, ("actors",)) and not _starts(imp, UI_MAY_USE)
           and imp != "actors"]
    assert bad == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
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
    return found


def test_no_import_circles_lazy_imports_included():
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []
