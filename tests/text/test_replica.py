"""Replica, and the convergence property: core + "ui" + "agent", messages delayed arbitrarily."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import pytest
from hypothesis import event, given, settings, target
from hypothesis import strategies as st

from rio.protocol.errors import DocumentError
from rio.text.document import Change, Document
from rio.text.replica import Replica, Request
from rio.text.transform import Edit, apply_to_str

# --- unit behaviour -------------------------------------------------------------------------


def test_first_local_edit_is_sent_with_the_current_version():
    r = Replica("hello", 3, "ui")
    request = r.local_edit(5, 5, "!")
    assert request == Request(5, 5, "!", 3, "ui", "ui#1")
    assert r.text == "hello!" and r.pending == (Edit(5, 5, "!"),) and r.in_flight


def test_second_edit_waits_for_the_acknowledgement():
    core = Document("ab", version=0)
    r = Replica("ab", 0, "ui")
    first = r.local_edit(2, 2, "c")
    assert r.local_edit(3, 3, "d") is None
    assert r.take_request() is None
    ack = core.replace(first.start, first.end, first.text, origin="ui",
                       base_version=first.base_version)
    assert r.on_change(ack) == []
    second = r.take_request()
    assert second == Request(3, 3, "d", 1, "ui", "ui#2")
    r.on_change(core.replace(second.start, second.end, second.text, origin="ui",
                             base_version=second.base_version))
    assert r.text == core.text() == "abcd" and not r.pending


def test_remote_change_is_transformed_over_pending_edits():
    core = Document("hello world")
    ui = Replica("hello world", 0, "ui")
    request = ui.local_edit(0, 0, ">> ")                      # pending, not yet at the core
    remote = core.replace(6, 11, "there", origin="agent")    # lands first
    assert ui.on_change(remote) == [Edit(9, 14, "there")]
    assert ui.text == ">> hello there"
    ack = core.replace(request.start, request.end, request.text, origin="ui",
                       base_version=request.base_version)
    assert ui.on_change(ack) == []
    assert core.text() == ui.text


def test_undo_by_the_same_origin_is_not_taken_for_an_acknowledgement():
    core = Document("abc")
    ui = Replica("abc", 0, "ui")
    request = ui.local_edit(3, 3, "d")
    core.replace(0, 0, "X", origin="agent")
    undone = core.undo(origin="ui")                          # the UI asked for an undo
    for change in [core.changes_since(0)[0], *undone]:
        ui.on_change(change)
    assert ui.in_flight
    ui.on_change(core.replace(request.start, request.end, request.text, origin="ui",
                              base_version=request.base_version))
    assert ui.text == core.text() == "abcd"


def test_waiting_edit_emptied_by_a_remote_change_is_not_sent():
    core = Document("abcdef")
    ui = Replica("abcdef", 0, "ui")
    first = ui.local_edit(0, 0, "X")
    assert ui.local_edit(3, 5, "") is None                # waits: deletes "cd"
    ui.on_change(core.replace(2, 6, "", origin="agent"))   # someone deleted "cdef" first
    ui.on_change(core.replace(first.start, first.end, first.text, origin="ui",
                              base_version=first.base_version))
    assert ui.take_request() is None and not ui.pending
    assert ui.text == core.text() == "Xab"


def test_events_off_the_bus_are_changes():
    ui = Replica("abc", 4, "ui")
    event = {"buffer": "b1", "version": 5, "start": 0, "end": 1, "text": "X", "origin": "agent",
             "label": "Replace", "kind": "edit"}
    assert ui.on_event(event) == [Edit(0, 1, "X")]
    assert ui.text == "Xbc" and ui.version == 5
    with pytest.raises(DocumentError) as caught:
        ui.on_event({"version": 6})
    assert caught.value.kind == "buffer.out_of_sync"


def test_a_missed_change_asks_for_a_resync():
    r = Replica("abc", 0, "ui")
    with pytest.raises(DocumentError) as caught:
        r.on_change(Change(2, 0, 0, "x", "", "agent", "Typing"))
    assert caught.value.kind == "buffer.out_of_sync"
    assert "buffer.text" in caught.value.next


def test_noop_local_edit_sends_nothing():
    r = Replica("abc", 0, "ui")
    assert r.local_edit(1, 1, "") is None and not r.pending


def test_bad_local_range_changes_nothing():
    r = Replica("abc", 0, "ui")
    with pytest.raises(DocumentError):
        r.local_edit(2, 9, "x")
    assert r.text == "abc" and not r.pending


# --- the convergence property ---------------------------------------------------------------


@dataclass
class Client:
    """A replica plus the view it drives (the widget), and its two FIFO links to the core."""

    replica: Replica
    view: str
    up: deque = field(default_factory=deque)      # requests on their way to the core
    down: deque = field(default_factory=deque)    # changes on their way to this client

    def send(self, request: Request | None) -> None:
        if request is not None:
            self.up.append(request)


class World:
    def __init__(self, text: str) -> None:
        self.core = Document(text)
        self.clients = {name: Client(Replica(text, 0, name), text) for name in ("ui", "agent")}
        self.stale = 0  # requests the core had to transform: the concurrency under test

    def broadcast(self, changes: list[Change]) -> None:
        for change in changes:
            for client in self.clients.values():
                client.down.append(change)

    def local_edit(self, name: str, at: int, length: int, text: str) -> None:
        client = self.clients[name]
        size = len(client.view)
        start = at % (size + 1)
        end = min(size, start + length)
        client.send(client.replica.local_edit(start, end, text))
        client.view = apply_to_str(client.view, Edit(start, end, text))

    def deliver_up(self, name: str) -> None:
        client = self.clients[name]
        if client.up:
            r = client.up.popleft()
            self.stale += r.base_version < self.core.version
            self.broadcast([self.core.replace(r.start, r.end, r.text, origin=r.origin,
                                              base_version=r.base_version)])

    def deliver_down(self, name: str) -> None:
        client = self.clients[name]
        if client.down:
            for edit in client.replica.on_change(client.down.popleft()):
                client.view = apply_to_str(client.view, edit)
            client.send(client.replica.take_request())

    def core_batch(self, edits: list[tuple[int, int, str]]) -> None:
        """An edit made in the core itself (an approved proposal, a revert): no replica's."""
        size = len(self.core)
        batch, taken = [], 0
        for at, length, text in edits:   # non-overlapping, increasing, as replace-all makes them
            start = min(size, taken + at)
            end = min(size, start + length)
            batch.append((start, end, text))
            taken = end
        self.broadcast(self.core.apply(batch, origin="core", label="Batch"))

    def core_undo(self) -> None:
        if self.core.can_undo:
            self.broadcast(self.core.undo(origin="ui"))

    def core_redo(self) -> None:
        if self.core.can_redo:
            self.broadcast(self.core.redo(origin="agent"))

    def settle(self) -> None:
        while any(c.up or c.down for c in self.clients.values()):
            for name in self.clients:
                self.deliver_up(name)
                self.deliver_down(name)


NAMES = st.sampled_from(["ui", "agent"])
ACTION = st.one_of(
    st.tuples(st.just("edit"), NAMES, st.integers(0, 40), st.integers(0, 4),
              st.text("xy\n😀", max_size=3)),
    st.tuples(st.just("up"), NAMES),
    st.tuples(st.just("down"), NAMES),
    st.tuples(st.just("undo")),
    st.tuples(st.just("redo")),
    st.tuples(st.just("batch"), st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3),
                                                   st.text("Z\n", max_size=2)),
                                         min_size=1, max_size=3)),
)


@given(st.text("ab\n", max_size=10), st.lists(ACTION, max_size=60))
@settings(max_examples=300, deadline=None)
@pytest.mark.slow
def test_replicas_converge_with_the_core(initial, actions):
    world = World(initial)
    for action in actions:
        kind = action[0]
        if kind == "edit":
            world.local_edit(*action[1:])
        elif kind == "up":
            world.deliver_up(action[1])
        elif kind == "down":
            world.deliver_down(action[1])
        elif kind == "undo":
            world.core_undo()
        elif kind == "batch":
            world.core_batch(action[1])
        else:
            world.core_redo()
        for client in world.clients.values():   # the view always mirrors the replica's text
            assert client.view == client.replica.text
    world.settle()
    # Steer generation towards schedules where many requests arrive stale.
    target(float(world.stale), label="stale requests")
    event("stale requests" if world.stale else "no stale request")
    for client in world.clients.values():
        assert client.replica.text == world.core.text()
        assert client.view == world.core.text()
        assert client.replica.version == world.core.version
        assert not client.replica.pending


# --- across core crashes (ADR-0020) ---------------------------------------------------------


def core_args(**kw):
    base = {"origin": "core", "base_version": None, "label": None}
    base.update(kw)
    return base


class CrashWorld:
    """The World again, with the core as the real :class:`OpenBuffer` journaling into a
    :class:`MemoryJournalStore`: a crash replays the journal (``kill``: everything written;
    ``power``: only what was flushed) into a new epoch, like a restarted core. Clients lose
    their links, keep typing offline, resend the request in flight under the same id and
    rebase on the recovered text."""

    def __init__(self, text: str, root) -> None:
        from rio.text.buffer_state import BufferFactory
        from rio.text.journal import MemoryJournalStore
        self.factory = BufferFactory(root, root / "journal")
        self.store = self.factory.journal_store = MemoryJournalStore()
        self.core = self.factory.new("")
        self.core.handle("buffer.replace", core_args(start=0, end=0, text=text))
        self.core.flush_journal()
        version = self.core.document.version
        self.clients = {name: Client(Replica(text, version, name), text)
                        for name in ("ui", "agent")}
        self.offline: set[str] = set()
        self.crashes = self.already_applied = self.stale = 0

    def _run(self, op: str, args: dict, request: str | None = None) -> None:
        _, events = self.core.handle(op, args, request)
        for topic, data in events:
            if topic == "buffer.changed":
                for client in self.clients.values():
                    client.down.append(data)

    def local_edit(self, name: str, at: int, length: int, text: str) -> None:
        client = self.clients[name]
        start = at % (len(client.view) + 1)
        end = min(len(client.view), start + length)
        client.send(client.replica.local_edit(start, end, text))
        client.view = apply_to_str(client.view, Edit(start, end, text))

    def _args(self, r: Request) -> dict:
        return core_args(start=r.start, end=r.end, text=r.text, base_version=r.base_version,
                         origin=r.origin)

    def deliver_up(self, name: str) -> None:
        client = self.clients[name]
        if client.up:
            r = client.up.popleft()
            self._run("buffer.replace", self._args(r), f"{name} {r.id}")

    def deliver_down(self, name: str) -> None:
        client = self.clients[name]
        if client.down:
            data = client.down.popleft()
            if name in self.offline:
                return          # the fetched text will hold it
            for edit in client.replica.on_event(data):
                client.view = apply_to_str(client.view, edit)
            client.send(client.replica.take_request())

    def duplicate(self, name: str) -> None:
        """A copy of the request in flight (a resend after a timeout, a duplicated frame)."""
        sent = self.clients[name].replica.sent
        if sent is not None and name not in self.offline:
            self.clients[name].up.append(sent)

    def core_op(self, op: str, **kw) -> None:
        try:
            self._run(op, core_args(**kw))
        except DocumentError as err:
            assert err.kind in ("buffer.nothing_to_undo", "buffer.nothing_to_redo")

    def crash(self, kind: str) -> None:
        if kind == "kill":      # the process dies; what it wrote is in the kernel
            self.core.flush_journal()
        self.store.crash()
        report = self.factory.recover_all()
        assert not report.failures and len(report.buffers) == 1
        self.core = report.buffers[0]
        self.crashes += 1
        for name, client in self.clients.items():
            client.up.clear()       # the hub answers them bus.actor_dead
            client.replica.go_offline()
            self.offline.add(name)

    def resync(self, name: str) -> None:
        if name not in self.offline:
            return
        client = self.clients[name]
        applied = False
        sent = client.replica.sent
        if sent is not None:     # resend it under its id: dedupe first, then the epoch check
            try:
                result, events = self.core.handle("buffer.replace", self._args(sent),
                                                  f"{name} {sent.id}")
                assert result["already_applied"] and not events
                applied = True
                self.already_applied += 1
            except DocumentError as err:
                assert err.kind == "buffer.stale_base"
                self.stale += 1
        for edit in client.replica.rebase(self.core.document.text(),
                                          self.core.document.version, sent_applied=applied):
            client.view = apply_to_str(client.view, edit)
        client.down.clear()      # everything in it is in the text just fetched
        self.offline.discard(name)
        client.send(client.replica.take_request())

    def settle(self) -> None:
        for name in list(self.offline):
            self.resync(name)
        while any(c.up or c.down for c in self.clients.values()):
            for name in self.clients:
                self.deliver_up(name)
                self.deliver_down(name)


CRASH_ACTION = st.one_of(
    ACTION,
    st.tuples(st.just("crash"), st.sampled_from(["kill", "kill", "power"])),
    # the core applies (and journals) a request, then dies before its acknowledgement leaves
    st.tuples(st.just("up_crash"), NAMES),
    st.tuples(st.just("resync"), NAMES),
    st.tuples(st.just("dup"), NAMES),
    st.tuples(st.just("flush")),
)


@pytest.mark.slow
@given(st.text("ab\n", max_size=10), st.lists(CRASH_ACTION, max_size=60))
@settings(max_examples=300, deadline=None)
def test_replicas_converge_across_core_crashes(tmp_path_factory, initial, actions):
    world = CrashWorld(initial, tmp_path_factory.mktemp("crash"))
    typed_offline = 0
    for action in actions:
        kind = action[0]
        if kind == "edit":
            typed_offline += action[1] in world.offline
            world.local_edit(*action[1:])
        elif kind == "up":
            world.deliver_up(action[1])
        elif kind == "down":
            world.deliver_down(action[1])
        elif kind in ("undo", "redo"):
            world.core_op("buffer." + kind, origin="ui" if kind == "undo" else "agent")
        elif kind == "batch":
            size = len(world.core.document)
            edits, taken = [], 0
            for at, length, text in action[1]:
                start = min(size, taken + at)
                end = min(size, start + length)
                edits.append([start, end, text])
                taken = end
            world.core_op("buffer.apply", edits=edits, label="Batch")
        elif kind == "crash":
            world.crash(action[1])
        elif kind == "up_crash":
            world.deliver_up(action[1])
            world.crash("kill")
        elif kind == "resync":
            world.resync(action[1])
        elif kind == "dup":
            world.duplicate(action[1])
        else:
            world.core.flush_journal()
        for client in world.clients.values():
            assert client.view == client.replica.text
    world.settle()
    target(float(world.crashes + world.already_applied + typed_offline), label="crash work")
    event("a resend was already applied" if world.already_applied else "no resend applied")
    event("typed while offline" if typed_offline else "nothing typed offline")
    text = world.core.document.text()
    for client in world.clients.values():
        assert client.replica.text == client.view == text
        assert client.replica.version == world.core.document.version
        assert not client.replica.pending


def test_a_kill_loses_no_keystroke_typed_before_or_during_the_restart(tmp_path):
    world = CrashWorld("abc", tmp_path)
    world.local_edit("ui", 3, 0, "1")          # sent
    world.deliver_up("ui")                     # applied and journaled; the ack never arrives
    world.local_edit("ui", 4, 0, "2")          # waits behind it
    world.crash("kill")
    world.local_edit("ui", 5, 0, "3")          # typed while the core is away
    assert world.clients["ui"].up == deque()   # nothing sent while offline
    world.resync("ui")
    assert world.already_applied == 1          # the resend was answered, not applied twice
    world.settle()
    assert world.core.document.text() == world.clients["ui"].view == "abc123"
    assert world.core.document.version >> 32 == 1


def test_offline_replica_sends_nothing_and_rebase_keeps_the_view_when_nothing_was_lost():
    r = Replica("hello", 7, "ui")
    sent = r.local_edit(5, 5, "!")
    r.go_offline()
    assert r.local_edit(6, 6, "?") is None and r.take_request() is None
    assert r.sent == sent
    # The core had applied the request in flight: the recovered text holds it.
    assert r.rebase("hello!", 1 << 32 | 1, sent_applied=True) == []
    assert r.text == "hello!?" and r.version == (1 << 32 | 1) and not r.offline
    again = r.take_request()
    assert again == Request(6, 6, "?", 1 << 32 | 1, "ui", "ui#2")


def test_rebase_moves_unsent_edits_onto_a_text_that_changed():
    r = Replica("one two", 3, "ui")
    r.local_edit(0, 0, ">")          # in flight, then lost with the core
    r.go_offline()
    r.local_edit(8, 8, "!")          # typed while the core was away: ">one two!"
    # The recovered text lacks ">" (never applied) and has a word someone else added.
    edits = r.rebase("one big two", 9, sent_applied=False)
    view = apply_to_str(">one two!", edits[0])
    assert view == r.text == ">one big two!"
    first = r.take_request()
    assert (first.start, first.end, first.text, first.base_version) == (0, 0, ">", 9)
