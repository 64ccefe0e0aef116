"""Nobody outside the bus layer touches a bus client's sockets (docs/architecture.md, "Bus").

A caller waits with ``BusConnection.wait``/``wait_for``/``events``; the desktop registers the
file descriptors ``BusConnection.fds()`` hands out (``ui/tk/app/bus_pump.py``). Reading
``conn.dealer``/``conn.sub`` or polling with a ``zmq.Poller`` anywhere else is the habit this
holds off: every copy of that loop once had its own bugs (a missed deadline, a socket polled
from the wrong thread).

The bus layer itself is exempt: the package ``actors/bus/`` (the clients, their socket factory
and the two servers that own their sockets, the hub and the remote bridge, whose
``client.dealer`` is its own per-remote-client DEALER, not a client's socket), and the
desktop's pump.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCANNED = ("rio", "actors", "ui", "tests", "tools")
EXEMPT = ("ui/tk/app/bus_pump.py",)
SOCKET_ATTRS = {"dealer", "sub"}


def _exempt(rel: str) -> bool:
    return rel in EXEMPT or (rel.startswith("actors/bus/") and rel.endswith(".py"))


def socket_reaches(source: str, filename: str = "<src>") -> list[str]:
    """``line: text`` for each use of a client's socket or of ``zmq.Poller`` in ``source``.

    ``x.sub(...)`` / ``x.dealer(...)`` called directly is a method (``re.sub``), not a socket."""
    tree = ast.parse(source, filename)
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            if node.attr in SOCKET_ATTRS and id(node) not in called:
                found.append((node.lineno, node.col_offset, f".{node.attr}"))
            elif node.attr == "Poller":
                found.append((node.lineno, node.col_offset, ".Poller"))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("zmq"):
            if any(alias.name == "Poller" for alias in node.names):
                found.append((node.lineno, 0, f"from {node.module} import Poller"))
    return [f"{line}: {what}" for line, _, what in sorted(found)]


def test_the_check_sees_what_it_forbids_and_lets_the_rest_be():
    old_cli = ("poller = zmq.Poller()\npoller.register(conn.sub, zmq.POLLIN)\n"
               "conn.dealer.poll(100)\nfor s in (conn.dealer, conn.sub): pass\n"
               "from zmq import Poller\n")
    assert socket_reaches(old_cli) == ["1: .Poller", "2: .sub", "3: .dealer", "4: .dealer",
                                       "4: .sub", "5: from zmq import Poller"]
    fine = ("re.sub('a', 'b', text)\n_ANSI.sub('', text)\nconn.wait(0.1)\n"
            "for event in conn.events('agent.', timeout=1): pass\nfds = conn.fds()\n")
    assert socket_reaches(fine) == []


def test_no_module_outside_the_bus_layer_touches_a_clients_sockets():
    offenders = []
    for top in SCANNED:
        for path in sorted((REPO / top).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            if _exempt(rel):
                continue
            for hit in socket_reaches(path.read_text(encoding="utf-8"), rel):
                offenders.append(f"{rel}:{hit}")
    assert offenders == [], ("wait with BusConnection.wait()/wait_for()/events() instead of "
                             "polling its sockets:\n" + "\n".join(offenders))
