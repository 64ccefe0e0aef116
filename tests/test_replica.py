"""Replica, and the convergence property: core + "ui" + "agent", messages delayed arbitrarily."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import pytest
from hypothesis import event, given, settings, target
from hypothesis import strategies as st

from rio.document import Change, Document
from rio.errors import BufferError
from rio.replica import Replica, Request
from rio.transform import Edit, apply_to_str

# --- unit behaviour -------------------------------------------------------------------------


def test_first_local_edit_is_sent_with_the_current_version():
    r = Replica("hello", 3, "ui")
    request = r.local_edit(5, 5, "!")
    assert request == Request(5, 5, "!", 3, "ui")
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
    assert second == Request(3, 3, "d", 1, "ui")
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
    with pytest.raises(BufferError) as caught:
        ui.on_event({"version": 6})
    assert caught.value.kind == "buffer.out_of_sync"


def test_a_missed_change_asks_for_a_resync():
    r = Replica("abc", 0, "ui")
    with pytest.raises(BufferError) as caught:
        r.on_change(Change(2, 0, 0, "x", "", "agent", "Typing"))
    assert caught.value.kind == "buffer.out_of_sync"
    assert "buffer.text" in caught.value.next


def test_noop_local_edit_sends_nothing():
    r = Replica("abc", 0, "ui")
    assert r.local_edit(1, 1, "") is None and not r.pending


def test_bad_local_range_changes_nothing():
    r = Replica("abc", 0, "ui")
    with pytest.raises(BufferError):
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
