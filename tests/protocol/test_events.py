"""The catalogue of events (rio/protocol/events.py) against the code that publishes them, the
docs that describe them, and a real instance that sends them.

* the code: every topic published with a literal name in rio/, actors/ and ui/ is in the
  catalogue and every catalogue topic is published somewhere; where a call site's data is a
  map the scan can read, it sends every required field and no field the record lacks;
* the check itself: a malformed event, an unknown field, an unknown topic each fail with
  ``protocol.bad_event`` naming topic and field; every publish path of the bus checks when
  ``RIO_CHECK_EVENTS=1`` and pays one global read when it is not;
* the docs: every topic and field is in docs/protocol.md;
* a real ``rio serve``: a buffer edit, a run and an agent turn (the loopback model server)
  publish with the check on and nothing fails; a malformed event a service sends makes
  ``RioServer.stop`` fail the test.
"""

from __future__ import annotations

import ast
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from rio.protocol import events, ops
from rio.protocol.errors import KINDS, ProtocolError
from rio.protocol.events import EVENTS, MARKER, check_event, describe_events
from tests.buffer_ops import args as _buffer_args

REPO = Path(__file__).resolve().parents[2]
FOLDERS = ("rio", "actors", "ui")
#: Calls that publish an event whose topic is their first argument.
PUBLISHERS = {"publish", "_publish", "Publish"}
IDS = {"conversation", "turn"}
#: Files whose agent.* publishes go through a turn's ``publish``, which adds the
#: conversation and the turn (rio/agent/turn.py, rio/acp/port.py say so).
ADDS_IDS = ("rio/agent/", "rio/acp/")


# --- the scan -----------------------------------------------------------------------------------

def _sources() -> list[Path]:
    return sorted(p for folder in FOLDERS for p in (REPO / folder).rglob("*.py"))


def _topic_like(value: Any) -> bool:
    if not isinstance(value, str) or value.count(".") != 1 or " " in value:
        return False
    family, leaf = value.split(".")
    return family.isidentifier() and family.islower() and leaf.replace("_", "a").isalnum() \
        and leaf.islower()


class Site:
    """One place an event is built: its topic, and its data's keys when the scan can read
    them (``keys`` None: not at all; ``complete`` False: some keys come from a ``**`` it could
    not read)."""

    def __init__(self, path: Path, line: int, topic: str, keys: set[str] | None,
                 complete: bool) -> None:
        self.where = f"{path.relative_to(REPO)}:{line}"
        self.topic, self.keys, self.complete = topic, keys, complete

    def __repr__(self) -> str:
        return f"{self.where} {self.topic}"


class _Scope(ast.NodeVisitor):
    """The dict literals assigned to plain names in one function (``base = {...}``), with
    the keys later set on them (``result["output"] = ...``): what a ``publish(topic, base)``
    or a ``{**base, ...}`` sends."""

    def __init__(self, func: ast.AST) -> None:
        self.maps: dict[str, ast.Dict] = {}
        self.added: dict[str, set[str]] = {}
        for node in ast.walk(func):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                target = node.targets[0] if isinstance(node, ast.Assign) else node.target
                if isinstance(target, ast.Name) and isinstance(node.value, ast.Dict):
                    self.maps[target.id] = node.value
                elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) \
                        and isinstance(target.slice, ast.Constant) \
                        and isinstance(target.slice.value, str):
                    self.added.setdefault(target.value.id, set()).add(target.slice.value)

    def keys(self, node: ast.AST, depth: int = 0) -> tuple[set[str], bool] | None:
        """The literal keys of ``node`` and whether they are all of them."""
        if depth > 5:
            return None
        if isinstance(node, ast.Name) and node.id in self.maps:
            got = self.keys(self.maps[node.id], depth + 1)
            if got is None:
                return None
            return got[0] | self.added.get(node.id, set()), got[1]
        if not isinstance(node, ast.Dict):
            return None
        keys: set[str] = set()
        complete = True
        for key, value in zip(node.keys, node.values):
            if key is None:     # **spread
                inner = self.keys(value, depth + 1)
                if inner is None:
                    complete = False
                else:
                    keys |= inner[0]
                    complete = complete and inner[1]
            elif isinstance(key, ast.Constant) and isinstance(key.value, str):
                keys.add(key.value)
            else:
                complete = False
        return keys, complete


def _functions(tree: ast.AST) -> list[ast.AST]:
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _sites(path: Path) -> list[Site]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    rel = path.relative_to(REPO).as_posix()
    found: list[Site] = []
    seen: set[int] = set()
    scopes = [(f, _Scope(f)) for f in _functions(tree)] + [(tree, _Scope(ast.Module(body=[], type_ignores=[])))]
    for func, scope in scopes:
        for node in ast.walk(func):
            if id(node) in seen:
                continue
            topic, data, wrapped = None, None, False
            if isinstance(node, ast.Call) and node.args:
                name = node.func.attr if isinstance(node.func, ast.Attribute) else \
                    node.func.id if isinstance(node.func, ast.Name) else ""
                first = node.args[0]
                if name in PUBLISHERS and isinstance(first, ast.Constant) \
                        and _topic_like(first.value):
                    topic = first.value
                    data = node.args[1] if len(node.args) > 1 else None
                    receiver = ast.unparse(node.func)
                    wrapped = rel.startswith(ADDS_IDS) or receiver == "turn.publish"
            elif isinstance(node, ast.Tuple) and len(node.elts) == 2:
                first, second = node.elts
                if isinstance(first, ast.Constant) and _topic_like(first.value) \
                        and not (isinstance(second, ast.Constant)) \
                        and first.value not in ops.REGISTRY and first.value not in KINDS:
                    topic, data = first.value, second
                    wrapped = rel.startswith(ADDS_IDS)
            elif isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values):
                    if isinstance(key, ast.Constant) and key.value == "topic" \
                            and isinstance(value, ast.Constant) and _topic_like(value.value):
                        topic = value.value
                        wrapped = rel.startswith(ADDS_IDS)
                        data = next((v for k, v in zip(node.keys, node.values)
                                     if isinstance(k, ast.Constant) and k.value == "data"), None)
            if topic is None:
                continue
            seen.add(id(node))
            got = scope.keys(data) if data is not None else None
            keys, complete = (None, False) if got is None else got
            if keys is not None and wrapped and topic.startswith("agent."):
                keys = keys | IDS
            found.append(Site(path, node.lineno, topic, keys, complete))
    return found


@pytest.fixture(scope="module")
def sites() -> list[Site]:
    return [s for path in _sources() for s in _sites(path)]


def test_every_published_topic_is_in_the_catalogue(sites: list[Site]) -> None:
    unknown = [repr(s) for s in sites if s.topic not in EVENTS]
    assert unknown == []


def test_every_catalogue_topic_is_published_somewhere(sites: list[Site]) -> None:
    published = {s.topic for s in sites}
    assert sorted(set(EVENTS) - published) == []


def test_publishers_send_the_required_fields_and_no_others(sites: list[Site]) -> None:
    problems = []
    checked = 0
    for site in sites:
        spec = EVENTS.get(site.topic)
        if spec is None or site.keys is None:
            continue
        checked += 1
        declared = {f.name for f in spec.fields}
        extra = site.keys - declared
        if extra:
            problems.append(f"{site!r}: sends {sorted(extra)}, not in the record")
        required = {f.name for f in spec.fields if f.required}
        if site.complete and required - site.keys:
            problems.append(f"{site!r}: leaves out {sorted(required - site.keys)}")
    assert problems == []
    assert checked >= 40, f"the scan read only {checked} call sites' data"


def test_the_scan_sees_calls_tuples_and_wrapped_turn_events(tmp_path: Path) -> None:
    sample = REPO / "rio" / "agent" / "_scan_sample.py"   # under rio/agent: ids are added
    source = (
        "def f(bus, cid, text):\n"
        "    base = {'conversation': cid, 'turn': 't'}\n"
        "    bus.publish('agent.delta', {**base, 'text': text})\n"
        "    ended = {**base, 'state': 'done'}\n"
        "    ended['again'] = True\n"
        "    bus.publish('agent.turn', ended)\n"
        "    self.publish('agent.tool', {'call': 'c', 'name': 'x', 'input': {}})\n"
        "    return [('buffer.closed', {'buffer': 'b'})]\n"
        "    bus.call('buffer.open', {'path': 'x'})\n")
    sample.write_text(source)
    try:
        got = {s.topic: (s.keys, s.complete) for s in _sites(sample)}
    finally:
        sample.unlink()
    assert got["agent.delta"] == ({"conversation", "turn", "text"}, True)
    assert got["agent.turn"] == ({"conversation", "turn", "state", "again"}, True)
    assert got["agent.tool"][0] >= {"conversation", "turn", "call"}
    assert got["buffer.closed"] == ({"buffer"}, True)
    assert "buffer.open" not in got


# --- the check ----------------------------------------------------------------------------------

TURN = {"conversation": "3f9a0c12b7de", "turn": "3f9a0c12b7de.1"}


def _bad(topic: str, data: Any) -> ProtocolError:
    with pytest.raises(ProtocolError) as info:
        check_event(topic, data)
    assert info.value.kind == "protocol.bad_event"
    assert info.value.message.startswith(f"{topic}: ")
    return info.value


def test_well_formed_events_pass() -> None:
    check_event("agent.turn", {**TURN, "state": "started", "text": "hi"})
    check_event("agent.turn", {**TURN, "state": "error", "buffers": ["b1"],
                               "error": {"kind": "agent.network", "message": "m", "next": "n"},
                               "changed_files": [{"path": "a", "change": "deleted", "diff": "-",
                                                  "stored_as": {"encoding": "utf-8",
                                                                "newline": "lf"}}]})
    check_event("run.exit", {"run": "run-1", "code": None, "how": "failed", "stop": None,
                             "survivors": [], "output_chars": 0, "dropped_chars": 0})
    check_event("system.process", {"name": "hub", "event": "restarted", "restarts": 1})
    # decoded frames are read-only views: mappings and tuples pass as maps and lists
    from types import MappingProxyType
    check_event("agent.plan", MappingProxyType({**TURN, "entries": (MappingProxyType(
        {"content": "c", "priority": "high", "status": "pending"}),)}))


def test_a_missing_or_mistyped_field_fails_naming_topic_and_field() -> None:
    err = _bad("buffer.changed", {"buffer": "b", "version": 2, "start": 0, "end": 0,
                                  "text": "x", "origin": "ui", "label": "Typing"})
    assert err.details == {"topic": "buffer.changed", "field": "kind"} and "'kind'" in err.message
    err = _bad("agent.delta", {**TURN, "text": 3})
    assert err.details["field"] == "text" and "string" in err.message
    err = _bad("agent.tool_result", {**TURN, "call": "c", "name": "n", "ok": 1, "summary": "",
                                     "truncated": False})
    assert err.details["field"] == "ok"     # 1 is not a boolean on Rio's wire
    err = _bad("agent.turn", {**TURN, "state": "finished"})
    assert err.details["field"] == "state" and "one of" in err.message


def test_nested_shapes_are_checked() -> None:
    err = _bad("agent.turn", {**TURN, "state": "error", "error": {"kind": "k", "message": "m"}})
    assert err.details["field"] == "error.next"
    err = _bad("agent.turn", {**TURN, "state": "done", "buffers": ["b", 7]})
    assert err.details["field"] == "buffers[1]"
    err = _bad("agent.changed_files", {**TURN, "more": 0,
                                       "files": [{"path": "a", "change": "renamed"}]})
    assert err.details["field"] == "files[0].change"
    err = _bad("buffer.opened", {"buffer": "b"})
    assert err.details["field"] == "name"


def test_an_unknown_field_fails() -> None:
    err = _bad("agent.delta", {**TURN, "text": "x", "colour": "red"})
    assert err.details["field"] == "colour" and "unknown field" in err.message
    err = _bad("agent.propose", {**TURN, "proposal": "p", "call": "c", "kind": "command",
                                 "path": "", "diff": "", "danger": {"rule": "r", "reason": "x",
                                                                    "level": 3}})
    assert err.details["field"] == "danger.level"


def test_an_unknown_topic_fails() -> None:
    err = _bad("agent.delta_v2", {**TURN, "text": "x"})
    assert err.details == {"topic": "agent.delta_v2", "field": None}
    _bad("buffer.changed", ["not", "a", "map"])


def test_describe_events_lists_every_topic_with_its_fields() -> None:
    described = {d["topic"]: d for d in describe_events()}
    assert set(described) == set(EVENTS)
    turn = {f["name"]: f for f in described["agent.turn"]["fields"]}
    assert turn["conversation"]["required"] and not turn["error"]["required"]
    assert [f["name"] for f in turn["error"]["fields"]] == ["kind", "message", "next", "details"]
    assert turn["buffers"]["items"] == "string"
    assert {f["name"] for f in turn["changed_files"]["items"]} >= {"path", "change", "diff"}
    json.dumps(describe_events())     # plain data


# --- real shapes from the code that builds them (no processes) ----------------------------------

def test_the_buffer_events_the_core_builds_pass(tmp_path: Path) -> None:
    from rio.text.buffer_state import BufferFactory
    root = tmp_path / "proj"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    factory = BufferFactory(root, tmp_path / "journal")
    buf = factory.open(root / "a.txt")
    seen: list[tuple[str, Any]] = [("buffer.opened", buf.summary())]
    for op, kw in (("buffer.replace", {"start": 0, "end": 5, "text": "ALPHA"}),
                   ("buffer.apply", {"edits": [[0, 1, "a"]]}), ("buffer.undo", {}),
                   ("buffer.redo", {}), ("buffer.save", {}),
                   ("buffer.replace", {"start": 0, "end": 0, "text": "mine "})):
        seen += buf.handle(op, _buffer_args(**kw))[1]
    (root / "a.txt").write_text("theirs\n")
    seen += buf.check_disk()
    seen += buf.handle("buffer.revert", _buffer_args())[1]
    scratch = factory.new("draft")
    seen += scratch.handle("buffer.replace", _buffer_args(start=0, end=0, text="x"))[1]
    report = BufferFactory(root, tmp_path / "journal").recover_all()
    seen.append(("buffer.recovered", report.to_wire()))
    seen += buf.handle("buffer.close", _buffer_args(discard=True))[1]
    for topic, data in seen:
        check_event(topic, data)
    assert {t for t, _ in seen} >= {"buffer.opened", "buffer.changed", "buffer.saved",
                                    "buffer.conflict", "buffer.recovered", "buffer.closed"}


def test_the_agent_shapes_the_logic_builds_pass(tmp_path: Path) -> None:
    from rio.acp.auth import SignInMethod
    from rio.acp.port import PermissionOption, PermissionQuestion
    from rio.agent import disk_changes
    from rio.agent.tools import Proposal
    (tmp_path / "kept.txt").write_text("one\n")
    (tmp_path / "gone.txt").write_text("two\n")
    before = disk_changes.take(tmp_path)
    (tmp_path / "kept.txt").write_text("one!\n")
    (tmp_path / "gone.txt").unlink()
    (tmp_path / "new.txt").write_text("three\n")
    changed = disk_changes.changes(before)
    check_event("agent.changed_files", {**TURN, **changed})
    check_event("agent.turn", {**TURN, "state": "done", "changed_files": changed["files"]})
    methods = [SignInMethod("login", "Log in", "terminal", command=("x", "login"),
                            env={"A": "1"}).to_dict(),
               SignInMethod("key", "API key", "env_var", vars=("X_KEY",), link="l").to_dict(),
               SignInMethod("oauth", "Browser", "agent").to_dict()]
    check_event("agent.sign_in", {**TURN, "state": "needed", "agent": "x", "methods": methods})
    question = PermissionQuestion("r1", "call-1", "Run ls", "execute", {"command": "ls"},
                                  (PermissionOption("o1", "Allow", "allow_once"),))
    check_event("agent.permission", {**TURN, **question.to_event()})
    for proposal in (Proposal("edit", "a.txt", "--- a\n+++ b\n", {}),
                     Proposal("command", "", "", {}, command="rm -rf x", cwd=".",
                              danger={"rule": "rm_rf", "reason": "deletes"})):
        check_event("agent.propose", {**TURN, "proposal": "p1", "call": "c1",
                                      **proposal.event(), "reason": "asks"})


def test_the_acp_updates_publish_well_formed_events() -> None:
    from types import SimpleNamespace as NS

    from rio.acp.updates import UpdateTranslator
    published: list[tuple[str, dict[str, Any]]] = []
    updates = UpdateTranslator(lambda topic, data: published.append((topic, {**TURN, **data})))
    text = NS(type="text", text="hello")
    for update in (
            NS(session_update="agent_message_chunk", content=text),
            NS(session_update="agent_thought_chunk", content=text),
            NS(session_update="tool_call", tool_call_id="t1", title="Read", kind="read",
               status="pending", raw_input={"path": "a"}),
            NS(session_update="tool_call_update", tool_call_id="t1", title=None, kind=None,
               raw_input=None, status="in_progress", content=None),
            NS(session_update="tool_call_update", tool_call_id="t1", title=None, kind=None,
               raw_input=None, status="completed", content=[NS(content=text)]),
            NS(session_update="plan", entries=[NS(content="c", priority="high",
                                                  status="pending")]),
            NS(session_update="available_commands_update", available_commands=[
                NS(name="init", description="d", input=None)]),
            NS(session_update="current_mode_update", current_mode_id="ask"),
            NS(session_update="usage_update", used=10, size=100,
               cost=NS(amount=0.5, currency="USD")),
            NS(session_update="session_info_update", title="T", updated_at="now")):
        updates.handle(update)
    updates.set_modes(NS(current_mode_id="ask", available_modes=[
        NS(id="ask", name="Ask", description=None)]))
    updates.set_config([{"id": "model", "type": "select"}])
    for topic, data in published:
        check_event(topic, data)
    assert {t for t, _ in published} >= {"agent.delta", "agent.thought", "agent.tool",
                                         "agent.tool_update", "agent.tool_result",
                                         "agent.plan", "agent.commands", "agent.modes",
                                         "agent.usage", "agent.session_info", "agent.config"}


# --- the publish paths --------------------------------------------------------------------------

BUS_MODULES = ("actors/bus/client.py", "actors/bus/service.py", "actors/bus/async_client.py",
               "actors/bus/hub.py")


def test_every_check_on_a_publish_path_sits_behind_the_module_flag() -> None:
    """Off (production), a publish pays ``if CHECK_EVENTS`` — one global read of a False —
    and nothing else: every call of the check is inside such an ``if``."""
    checks = 0
    for rel in BUS_MODULES:
        tree = ast.parse((REPO / rel).read_text(encoding="utf-8"))
        guarded: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.If):
                first = node.test.values[0] if isinstance(node.test, ast.BoolOp) else node.test
                if isinstance(first, ast.Name) and first.id == "CHECK_EVENTS":
                    guarded |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
            elif isinstance(node, ast.FunctionDef) and node.name == "_check_events":
                guarded |= {id(n) for n in ast.walk(node)}   # itself called behind the flag
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = ast.unparse(node.func)
                if name in ("guard", "audit", "self._check_events"):
                    checks += 1
                    assert id(node) in guarded, f"{rel}:{node.lineno}: {name} is not behind " \
                                                "`if CHECK_EVENTS`"
    assert checks >= 6


def test_the_check_is_on_in_this_session_and_off_without_the_variable() -> None:
    from actors.bus import async_client, client, hub, service
    assert events.CHECKING and all(m.CHECK_EVENTS for m in (async_client, client, hub, service))
    env = {k: v for k, v in os.environ.items() if k != "RIO_CHECK_EVENTS"}
    probe = ("from actors.bus import async_client, client, hub, service\n"
             "from rio.protocol import events\n"
             "print(events.CHECKING, *(m.CHECK_EVENTS for m in "
             "(async_client, client, hub, service)))\n")
    for value in (None, "0"):
        run_env = dict(env) if value is None else {**env, "RIO_CHECK_EVENTS": value}
        out = subprocess.run([sys.executable, "-c", probe], env=run_env, cwd=REPO,
                             capture_output=True, text=True, timeout=60)
        assert out.stdout.split() == ["False"] * 5, out.stderr


@pytest.fixture
def bus(tmp_path: Path):
    from actors.bus.client import Endpoints
    from actors.bus.hub import Hub
    sockets = tmp_path / "s"
    sockets.mkdir()
    endpoints = Endpoints(f"ipc://{sockets}/r", f"ipc://{sockets}/e")
    hub = Hub(endpoints.requests, endpoints.events).start()
    yield hub, endpoints
    hub.stop()


def _caught(bad_events: Any, caplog: pytest.LogCaptureFixture) -> list[str]:
    """The failed checks logged so far (and cleared: they were expected)."""
    lines = list(bad_events.lines)
    bad_events.lines.clear()
    assert all(MARKER in r.getMessage() for r in caplog.records
               if r.name == "rio.events" and r.levelno >= logging.ERROR)
    return lines


@pytest.mark.timeout(30)
def test_a_malformed_event_raises_in_the_publisher_and_logs_the_marker(
        bus: Any, bad_events: Any, caplog: pytest.LogCaptureFixture) -> None:
    from actors.bus.client import connect
    from actors.bus.service import BusThread
    hub, endpoints = bus
    conn = connect(endpoints, name="evt-test")
    service = BusThread(endpoints, name="evt-test", handlers={"evtest": lambda ctx: None})
    service.start()
    try:
        with pytest.raises(ProtocolError, match="agent.delta: missing field 'text'"):
            conn.publish("agent.delta", TURN)
        with pytest.raises(ProtocolError, match="unknown field"):
            service.publish("run.output", {"run": "r", "stream": "stdout", "text": "",
                                           "extra": 1})
        with pytest.raises(ProtocolError, match="not an event topic"):
            hub.publish("system.proces", {"name": "core", "event": "ready"})
        lines = _caught(bad_events, caplog)
        assert len(lines) == 3 and all(line.startswith(MARKER) for line in lines)
        assert "agent.delta" in lines[0] and "run.output" in lines[1]
    finally:
        service.stop()
        conn.close()


@pytest.mark.timeout(30)
def test_a_bad_event_of_a_reply_is_raised_after_the_reply_went(
        bus: Any, bad_events: Any, caplog: pytest.LogCaptureFixture) -> None:
    from actors.bus.client import connect
    from actors.bus.service import BusThread
    _hub, endpoints = bus
    raised: list[BaseException] = []

    def serve(ctx: Any) -> None:
        try:
            ctx.reply({"ok": True}, events=[("buffer.closed", {"buffer": "b"})])
        except ProtocolError as err:
            raised.append(err)

    service = BusThread(endpoints, name="evt-reply", handlers={"buffer": serve}).start()
    conn = connect(endpoints, name="evt-client")
    try:
        assert conn.call("buffer.list", {}, timeout=5) == {"ok": True}   # answered all the same
    finally:
        conn.close()
        service.stop()
    assert raised and raised[0].details == {"topic": "buffer.closed", "field": "name"}
    assert len(_caught(bad_events, caplog)) == 1


@pytest.mark.timeout(30)
def test_the_hub_logs_an_unchecked_services_bad_event_and_still_publishes_it(
        bus: Any, bad_events: Any, caplog: pytest.LogCaptureFixture,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from actors.bus import client as client_module
    from actors.bus import service as service_module
    from actors.bus.client import connect
    from actors.bus.service import BusThread
    _hub, endpoints = bus
    listener = connect(endpoints, name="listener", subscribe=("agent.",))
    got: list[Any] = []
    listener.subscribe("agent.", got.append)
    service = BusThread(endpoints, name="unchecked", handlers={"evtest": lambda ctx: None})
    service.start()
    monkeypatch.setattr(service_module, "CHECK_EVENTS", False)   # a publisher that does not
    monkeypatch.setattr(client_module, "CHECK_EVENTS", False)    # check (or a foreign one)
    try:
        service.publish("agent.delta", {"text": "no ids"})
        assert listener.wait_for(lambda: got, 5)
    finally:
        service.stop()
        listener.close()
    assert got[0].topic == "agent.delta"
    lines = _caught(bad_events, caplog)
    assert len(lines) == 1 and "missing field 'conversation'" in lines[0]


def test_a_failed_check_in_the_test_process_is_caught_for_the_test(bad_events: Any) -> None:
    """Raised where a catch-all may swallow it, the failure is still in the log the conftest
    reads: with the lines left there, it would fail this test at teardown."""
    try:
        events.guard("buffer.closed", {})
    except ProtocolError:
        pass                                   # a catch-all somewhere
    assert len(bad_events.lines) == 1 and "buffer.closed: missing field 'buffer'" in \
        bad_events.lines[0]
    bad_events.lines.clear()


# --- the docs -----------------------------------------------------------------------------------

def test_every_event_and_its_fields_are_in_the_protocol_docs() -> None:
    """docs/protocol.md "Events" has one row per topic (``| `topic` |``) naming each of the
    record's fields."""
    text = (REPO / "docs" / "protocol.md").read_text(encoding="utf-8")
    rows = {}
    for line in text.splitlines():
        if line.startswith("| `") and "`" in line[3:]:
            topic = line[3:line.index("`", 3)]
            if topic in EVENTS:
                rows[topic] = line
    missing = sorted(set(EVENTS) - set(rows))
    assert missing == [], f"not in docs/protocol.md's event tables: {missing}"
    unnamed = [f"{topic}: {f.name}" for topic, spec in EVENTS.items() for f in spec.fields
               if f.name not in rows[topic]]
    assert unnamed == []


# --- a real instance ----------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_real_instance_publishes_only_well_formed_events(tmp_path: Path) -> None:
    from rio.protocol.frames import thaw
    from tests.fakes.model_servers import FakeModelServer, anthropic_text, anthropic_tool_use
    from tests.support import RioServer, rio_env, wait_for
    root = tmp_path / "proj"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\n")
    (root / "disk.txt").write_text("on disk\n")
    with FakeModelServer() as model:
        env = rio_env(tmp_path)
        assert env["RIO_CHECK_EVENTS"] == "1"
        env.update({"ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "test-key"})
        server = RioServer(root, tmp_path, env=env).start()
        try:
            conn = server.connect("evt-watch", subscribe=("",))
            seen: list[tuple[str, dict[str, Any]]] = []
            conn.subscribe("", lambda e: seen.append((e.topic, thaw(e.data))))

            def saw(topic: str, **match: Any) -> bool:
                conn.wait(0.02)
                return any(t == topic and all(d.get(k) == v for k, v in match.items())
                           for t, d in seen)

            # a buffer: open, edit, undo, save, a change on disk under it, revert, close
            summary = conn.call("buffer.open", {"path": "disk.txt"})
            bid = summary["buffer"]
            version = conn.call("buffer.replace", {"buffer": bid, "start": 0, "end": 0,
                                                   "text": "x", "origin": "test"})["version"]
            conn.call("buffer.apply", {"buffer": bid, "edits": [[0, 1, "y"]],
                                       "base_version": version})
            conn.call("buffer.undo", {"buffer": bid})
            conn.call("buffer.save", {"buffer": bid})
            conn.call("buffer.replace", {"buffer": bid, "start": 0, "end": 0, "text": "mine "})
            time.sleep(0.05)
            (root / "disk.txt").write_text("changed behind Rio's back, longer\n")
            assert wait_for(lambda: saw("buffer.conflict", buffer=bid), 10)
            conn.call("buffer.revert", {"buffer": bid})
            conn.call("buffer.close", {"buffer": bid, "discard": True})
            scratch = conn.call("buffer.new", {"text": "draft"})["buffer"]
            conn.call("buffer.close", {"buffer": scratch, "discard": True})
            # a run
            run = conn.call("run.start", {"command": "echo out; echo err >&2"})["run"]
            assert wait_for(lambda: saw("run.exit", run=run), 20)
            # an agent turn: a read, a proposal approved, the text
            model.push(anthropic_tool_use("toolu_r", "fs_read", {"path": "notes.txt"},
                                          text="Reading."),
                       anthropic_tool_use("toolu_e", "propose_edit", {
                           "path": "notes.txt", "old_text": "beta", "new_text": "gamma"}),
                       anthropic_text("Replaced beta."))
            cid = conn.call("agent.new", {"title": "events"})["conversation"]
            turn = conn.call("agent.send", {"conversation": cid, "text": "beta to gamma"},
                             timeout=30)["turn"]
            assert wait_for(lambda: saw("agent.propose", turn=turn), 60)
            proposal = next(d for t, d in seen if t == "agent.propose")
            assert conn.call("agent.approve", {"turn": turn, "proposal": proposal["proposal"],
                                               "decision": "approve"}, timeout=30)["applied"]
            assert wait_for(lambda: saw("agent.turn", turn=turn, state="done"), 60)
            conn.close()
        finally:
            bad = server.bad_events()
            server.stop()      # fails on a malformed event logged by any process
    assert bad == []
    for topic, data in seen:
        check_event(topic, data)    # and what arrived is well-formed here too
    assert {t for t, _ in seen} >= {
        "buffer.opened", "buffer.changed", "buffer.saved", "buffer.conflict", "buffer.closed",
        "run.output", "run.exit", "agent.turn", "agent.delta", "agent.tool",
        "agent.tool_result", "agent.propose", "agent.message"}


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_malformed_event_in_a_real_instance_fails_the_test_at_stop(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A service that does not check (here: this process, checks patched off) sends a bad
    event: the hub logs it in the supervisor's log, and RioServer.stop fails."""
    from actors.bus import client as client_module
    from actors.bus import service as service_module
    from actors.bus.client import Endpoints
    from actors.bus.service import BusThread
    from tests.support import RioServer
    root = tmp_path / "proj"
    root.mkdir()
    server = RioServer(root, tmp_path).start()
    try:
        info = server.info()
        monkeypatch.setattr(service_module, "CHECK_EVENTS", False)
        monkeypatch.setattr(client_module, "CHECK_EVENTS", False)
        rogue = BusThread(Endpoints(info["requests"], info["events"]), name="rogue",
                          handlers={"rogue": lambda ctx: None}).start()
        rogue.publish("buffer.changed", {"buffer": "b", "version": "two"})
        rogue.call("system.ping", {}, timeout=5)     # after the event, on the same link
        rogue.stop()
    except BaseException:
        server.stop()
        raise
    with pytest.raises(AssertionError, match="malformed events") as info:
        server.stop()
    assert MARKER in str(info.value) and "buffer.changed" in str(info.value)
