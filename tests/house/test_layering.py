"""The layers of docs/architecture.md, held by the imports themselves (lazy ones included).

The rules are not written here: they are the ``layers`` block of docs/architecture.md ("Who
may import what"), which a newcomer reads and this test parses, so the picture and the check
cannot drift apart. Each line is ``ROOM → NAME …`` (a module in ROOM may import these names
of ``rio``/``actors``/``ui``) or ``ROOM ✗ NAME …`` (a module in ROOM never imports these, any
library included); a module gets every line whose ROOM contains it, and ``→ *`` marks the
wiring, which no line binds. Every import counts: at the top, inside a function or a class,
under ``if TYPE_CHECKING``.

Besides the picture: no import circles between modules, no module over
:data:`MAX_LINES` lines, and no module under ``actors/`` named like one under ``rio/``.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("rio", "actors", "ui")
ARCHITECTURE = REPO / "docs" / "architecture.md"

#: A module longer than this is more than one thing (docs/architecture.md "Layers").
MAX_LINES = 800
#: Modules still over :data:`MAX_LINES`, each with why. Shrinking: an entry that is no longer
#: over the limit fails the test, so it is taken out as soon as it is split.
OVER_LIMIT: dict[str, str] = {}   # none left (issue 21 split the last five)
#: Module names under ``actors/`` that are still also names under ``rio/`` (one name, two
#: layers: a reader cannot tell from ``client.py`` which layer holds it). Shrinking, as above.
SAME_NAME_ALLOWED = {
    "client.py": "rio/acp/client.py (the ACP client) and actors/bus/client.py (the bus client)",
}


# ---------------------------------------------------------------- the picture, parsed


@dataclass
class Picture:
    """The ``layers`` block: what each room may import, what it never imports, the wiring."""

    may: dict[str, set[str]] = field(default_factory=dict)
    never: dict[str, set[str]] = field(default_factory=dict)
    wiring: set[str] = field(default_factory=set)

    def rooms(self) -> set[str]:
        return set(self.may) | set(self.never) | self.wiring


def parse_picture(text: str) -> Picture:
    """The rules of the first ```` ```layers ```` block of ``text``. A line that starts with
    blanks continues the line above; ``#`` starts a comment."""
    match = re.search(r"^```layers\n(.*?)^```", text, re.S | re.M)
    assert match, "docs/architecture.md has no ```layers block"
    picture = Picture()
    room = arrow = ""
    for number, raw in enumerate(match.group(1).splitlines(), 1):
        line = raw.split("#", 1)[0].rstrip()
        if not line.strip():
            continue
        if line[0].isspace():
            assert room, f"layers line {number}: a continuation with nothing above it"
            names = line.split()
        else:
            parts = line.split()
            assert len(parts) >= 2 and parts[1] in ("→", "✗"), \
                f"layers line {number}: want 'ROOM → NAME …' or 'ROOM ✗ NAME …': {raw!r}"
            room, arrow, names = parts[0], parts[1], parts[2:]
        if arrow == "→" and names == ["*"]:
            picture.wiring.add(room)
            continue
        target = picture.may if arrow == "→" else picture.never
        target.setdefault(room, set()).update(names)
    return picture


def the_picture() -> Picture:
    return parse_picture(ARCHITECTURE.read_text(encoding="utf-8"))


# ---------------------------------------------------------------- the imports, found


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _files() -> list[Path]:
    return sorted(p for pkg in PACKAGES for p in (REPO / pkg).rglob("*.py"))


def _imports(path: Path) -> set[str]:
    """Every name this file imports, anywhere in it (absolute names)."""
    package = _module_name(path) if path.name == "__init__.py" \
        else _module_name(path).rsplit(".", 1)[0]
    return _imports_in(path.read_text(encoding="utf-8"), package, str(path))


def _imports_in(source: str, package: str, filename: str = "<source>") -> set[str]:
    """Every name ``source`` (a module of ``package``) imports — at the top, inside a function
    or a class, under ``if TYPE_CHECKING``: ``import a.b`` is ``a.b``, ``from a import b`` is
    ``a.b`` (a module or a name in one), relative imports made absolute."""
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
            found.update(stem if alias.name == "*" else f"{stem}.{alias.name}"
                         for alias in node.names)
    return found


def _starts(name: str, prefixes: set[str] | tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def _first_party(name: str, packages: tuple[str, ...] = PACKAGES) -> bool:
    return name.split(".", 1)[0] in packages


def violations(picture: Picture, imports: dict[str, set[str]],
               packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """Each import (``module → names``) the picture does not allow, said as a sentence;
    ``packages`` are the first-party ones, which only a "→" line lets a module import."""
    bad = []
    for module, names in sorted(imports.items()):
        if _starts(module, picture.wiring):
            continue
        rooms = [room for room in picture.rooms() if _starts(module, (room,))]
        may = set().union(*(picture.may.get(room, set()) for room in rooms))
        never = set().union(*(picture.never.get(room, set()) for room in rooms))
        for name in sorted(names):
            if _starts(name, never):
                bad.append(f"{module} imports {name}: its room never imports it")
            elif _first_party(name, packages) and not _starts(name, may):
                bad.append(f"{module} imports {name}: not in what its room may import")
    return bad


def _real_modules() -> set[str]:
    return {_module_name(p) for p in _files()}


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in _files()}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for imported in _imports(path):
            # "from rio.protocol import errors" names the module rio.protocol.errors, and
            # "from rio.protocol.errors import RioError" a name in it: keep the longest module
            while imported and imported not in modules:
                imported = imported.rpartition(".")[0]
            if imported and imported != name and not modules[imported].name == "__init__.py":
                targets.add(imported)
        graph[name] = targets
    return graph


# ---------------------------------------------------------------- the picture holds


def test_every_import_is_one_the_picture_allows():
    """docs/architecture.md's ``layers`` block, over every import of rio/, actors/ and ui/."""
    imports = {_module_name(p): _imports(p) for p in _files()}
    assert violations(the_picture(), imports) == []


def test_the_picture_names_real_rooms_and_modules():
    """A room or a name in the picture that no longer exists is a picture that lies: a moved
    module must move its line too."""
    picture = the_picture()
    real = _real_modules()

    def exists(name: str) -> bool:
        # a module, or a name inside one (rio.runs.runner.save_project_commands)
        return name in real or name.rpartition(".")[0] in real

    stale = sorted(room for room in picture.rooms() if room not in real)
    stale += sorted(f"{room} → {name}" for room, names in picture.may.items()
                    for name in names if _first_party(name) and not exists(name))
    stale += sorted(f"{room} ✗ {name}" for room, names in picture.never.items()
                    for name in names if _first_party(name) and not exists(name))
    assert stale == []


def test_every_room_has_a_line_in_the_picture():
    """A new room (a folder under actors/ or ui/tk/) says what it may import before it has
    any modules that could import the wrong thing."""
    rooms = {_module_name(p.parent / "__init__.py")
             for base in ("actors", "ui/tk") for p in (REPO / base).glob("*/__init__.py")}
    assert sorted(rooms - the_picture().rooms()) == []


def test_the_picture_says_what_the_house_rules_say():
    """The rules a newcomer is told (docs/architecture.md "Layers") are in the picture; the
    checks on it are above. A picture edited to allow what the house forbids fails here."""
    picture = the_picture()
    imports = {
        "rio.text.document": {"actors.bus.client.connect", "ui.tk.app.seams", "zmq",
                              "tkinter", "threading.Thread", "pykka", "psutil"},
        "actors.core.documents_actor": {"ui.tk.app.seams.EditorHost"},
        "actors.bus.hub": {"actors.runtime.process_control", "actors.core.runner_actor"},
        "actors.core.runner_actor": {"actors.agent.session", "actors.faults.injection"},
        "actors.agent.session": {"actors.core.documents_actor"},
        "actors.faults.harness": {"actors.agent.session"},
        "ui.tk.app.main_window": {"actors.runtime.supervisor", "actors.bus.hub",
                                  "rio.files.atomic.write_json", "rio.agent.secrets"},
        "ui.tk.widgets.theme": {"ui.tk.app.main_window", "ui.tk.editor.tab"},
        "ui.tk.editor.tab": {"ui.tk.app.main_window"},
    }
    assert len(violations(picture, imports)) == sum(len(names) for names in imports.values())
    allowed = {
        "rio.cli.main": {"actors.runtime.supervisor", "ui.tk.start.first", "threading"},
        "actors.bus.hub": {"actors.bus.sockets", "rio.protocol.frames", "zmq"},
        "ui.tk.start.desktop": {"actors.bus.client.connect", "ui.tk.app.main_window"},
        "ui.tk.editor.tab": {"ui.tk.app.seams.EditorHost", "ui.tk.widgets.theme"},
        "ui.tk.prefs.store": {"rio.files.atomic.write_json", "rio.agent.secrets.SecretStore"},
    }
    assert violations(picture, allowed) == []


def test_the_picture_parser():
    picture = parse_picture(
        "text\n```layers\n"
        "a      → a b.c      # a comment\n"
        "         d.e\n"
        "a      ✗ zmq\n"
        "a.wire → *\n"
        "```\n")
    assert picture.may == {"a": {"a", "b.c", "d.e"}}
    assert picture.never == {"a": {"zmq"}}
    assert picture.wiring == {"a.wire"}
    ours = ("a", "b", "d")
    imports = {"a.x": {"a.y", "b.c.Name", "d.e", "zmq.Context", "os"},
               "a.wire.main": {"zmq", "b.f"}}
    # only first-party names need a "→"; "✗" also binds a library; the wiring is free
    assert violations(picture, imports, ours) == \
        ["a.x imports zmq.Context: its room never imports it"]
    assert violations(picture, {"a.x": {"b.d", "b.cd"}, "b.y": {"a.y"}}, ours) == [
        "a.x imports b.cd: not in what its room may import",
        "a.x imports b.d: not in what its room may import",
        "b.y imports a.y: not in what its room may import"]


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
    assert {"actors.runtime.supervisor.Supervisor", "psutil", "actors.bus.sockets.make_dealer",
            "actors.process_control", "actors.memory_trim"} <= found


# ---------------------------------------------------------------- circles, size, names


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
                member = ""
                while member != node:   # pops down to node, which is on the stack
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_import_circles_lazy_imports_included():
    assert _cycles(_graph()) == []


def test_the_cycle_finder_finds_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def _line_counts() -> dict[str, int]:
    paths = _files() + [p for p in (REPO / "tests").rglob("*.py")
                        if "bench" not in p.relative_to(REPO / "tests").parts]
    return {str(p.relative_to(REPO)): len(p.read_text(encoding="utf-8").splitlines())
            for p in paths}


def test_no_module_is_over_the_limit():
    """rio/, actors/, ui/ and tests/ (not tests/bench): a module over MAX_LINES lines is
    split along a real seam; the allowance only shrinks."""
    counts = _line_counts()
    over = sorted(f"{path}: {n} lines" for path, n in counts.items()
                  if n > MAX_LINES and path not in OVER_LIMIT)
    shrunk = sorted(f"{path} is {counts.get(path, 0)} lines now: take it out of OVER_LIMIT"
                    for path in OVER_LIMIT if counts.get(path, 0) <= MAX_LINES)
    assert over + shrunk == []


def test_names_say_their_layer():
    """No module under actors/ has the name of one under rio/: ``gate.py`` in both layers
    made a reader open both to find the one they wanted (hence ``gate_actor.py``)."""
    def names(package: str) -> set[str]:
        return {p.name for p in (REPO / package).rglob("*.py") if p.name != "__init__.py"}
    same = names("actors") & names("rio")
    assert sorted(same - set(SAME_NAME_ALLOWED)) == []
    assert sorted(set(SAME_NAME_ALLOWED) - same) == [], "renamed: take it out of the allowance"
