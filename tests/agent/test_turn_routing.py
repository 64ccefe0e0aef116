"""The hub sends a running turn's answers (agent.approve, agent.stop, agent.permission_answer)
straight to the conversation's session process (rio/protocol/routing.py, ADR-0027), and a
local handler may answer later (the supervisor's system.spawn). Real ZeroMQ, no Rio processes."""

from __future__ import annotations

import re
import threading

import pytest
import zmq
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from actors.bus.client import Endpoints, connect
from actors.bus.hub import DEFERRED, Hub
from actors.bus.service import BusThread
from rio.protocol.frames import Reply, Request, decode, encode
from rio.protocol.routing import TURN_ANSWERS, turn_answer_conversation
from tests.support import wait_for

pytestmark = pytest.mark.timeout(30)

CID = "abc123def"


# --- the rule, without sockets ---------------------------------------------------------------

def test_turn_answers_name_their_conversation():
    assert turn_answer_conversation("agent.approve", {"turn": f"{CID}.3", "proposal": "p1"}) \
        == CID
    assert turn_answer_conversation("agent.stop", {"conversation": CID}) == CID
    assert turn_answer_conversation("agent.permission_answer",
                                    {"conversation": CID, "turn": f"{CID}.1"}) == CID


def test_other_requests_take_their_ordinary_route():
    assert turn_answer_conversation("agent.send", {"conversation": CID}) is None
    assert turn_answer_conversation("agent.approve", {"turn": "no-number"}) is None
    assert turn_answer_conversation("agent.stop", {"conversation": "../../etc"}) is None


def test_every_proposal_of_a_turn_is_answered_by_its_session_one_way_in():
    """An approval has one way in (ADR-0034): a proposal of Rio's MCP tools is the turn's like
    any other, whatever its id looks like."""
    for proposal in ("mcp-7", "p1", 7, f"{CID}.3.m1"):
        assert turn_answer_conversation("agent.approve", {"turn": f"{CID}.3",
                                                          "proposal": proposal}) == CID


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])   # a busy machine
@given(st.sampled_from(TURN_ANSWERS + ("agent.send", "buffer.open")),
       st.dictionaries(st.sampled_from(["turn", "conversation", "proposal"]),
                       st.one_of(st.text(max_size=40), st.integers(), st.none())))
def test_the_rule_never_fails_and_names_only_well_formed_conversations(op, args):
    got = turn_answer_conversation(op, args)
    assert got is None or (op in TURN_ANSWERS and re.fullmatch(r"[a-z0-9]{6,32}", got))


# --- through a hub -----------------------------------------------------------------------------

@pytest.fixture
def endpoints(tmp_path):
    folder = tmp_path / "s"
    folder.mkdir()
    return Endpoints(f"ipc://{folder}/r", f"ipc://{folder}/e")


class Served:
    """A stand-in process: records (op, client) of what it serves and answers with its name."""

    def __init__(self, endpoints: Endpoints, name: str, prefixes: tuple[str, ...]):
        self.name = name
        self.seen: list[tuple[str, bytes]] = []
        self.bus = BusThread(endpoints, name=name,
                             handlers={p: self._serve for p in prefixes}).start()

    def _serve(self, ctx) -> None:
        self.seen.append((ctx.op, ctx.client))
        ctx.reply({"by": self.name})


@pytest.fixture
def hub_with_core_and_session(endpoints):
    hub = Hub(endpoints.requests, endpoints.events).start()
    core = Served(endpoints, "core", ("agent",))
    session = Served(endpoints, f"agent:{CID}", ("agent", "session"))
    client = connect(endpoints, name="test")
    yield hub, core, session, client
    client.close()
    for served in (session, core):
        served.bus.stop()
    hub.stop()


def test_an_approval_and_a_stop_go_straight_to_the_session(hub_with_core_and_session):
    hub, core, session, client = hub_with_core_and_session
    approve = {"turn": f"{CID}.2", "proposal": "p1", "decision": "approve"}
    assert client.call("agent.approve", approve) == {"by": f"agent:{CID}"}
    assert client.call("agent.stop", {"conversation": CID}) == {"by": f"agent:{CID}"}
    answer = {"conversation": CID, "turn": f"{CID}.2", "request": "q1", "kind": "allow_once"}
    assert client.call("agent.permission_answer", answer) == {"by": f"agent:{CID}"}
    assert [op for op, _ in session.seen] == ["agent.approve", "agent.stop",
                                              "agent.permission_answer"]
    assert {who for _, who in session.seen} == {client.identity}   # the client's own request
    assert core.seen == []
    # The session's "agent" prefix did not take the core's route: agent.send still goes there.
    assert client.call("agent.send", {"conversation": CID, "text": "hi"}) == {"by": "core"}


def test_what_the_session_cannot_answer_goes_to_the_core(hub_with_core_and_session):
    hub, core, session, client = hub_with_core_and_session
    other = {"turn": "fff999eee.1", "proposal": "p1", "decision": "approve"}
    assert client.call("agent.approve", other) == {"by": "core"}   # no process for it
    # The session's own agent.stop (no turn of its own) is answered by the core, not itself.
    assert session.bus.call("agent.stop", {"conversation": CID}) == {"by": "core"}
    # Once the session process is gone, its conversation's answers go to the core again.
    session.bus.stop()
    assert wait_for(lambda: f"agent:{CID}" not in {s["name"] for s in
                                                   client.call("bus.services")}, 10)
    assert client.call("agent.stop", {"conversation": CID}) == {"by": "core"}


def test_a_remote_observer_may_not_approve_and_the_session_never_hears_of_it(
        hub_with_core_and_session, endpoints):
    hub, core, session, client = hub_with_core_and_session
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.IDENTITY, b"remote:observer:someone")
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoints.requests)
    try:
        sock.send(encode(Request("r1", "agent.approve", {"turn": f"{CID}.1", "proposal": "p1",
                                                         "decision": "approve"})))
        assert sock.poll(5000)
        reply = decode(sock.recv())
        assert isinstance(reply, Reply) and not reply.ok
        assert reply.error["kind"] == "auth.forbidden"
    finally:
        sock.close()
    assert session.seen == [] and core.seen == []


def test_a_duplicated_approval_frame_is_served_once_and_answered_twice(
        hub_with_core_and_session, endpoints):
    hub, core, session, client = hub_with_core_and_session
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(endpoints.requests)
    try:
        frame = encode(Request("dup-1", "agent.approve", {"turn": f"{CID}.1", "proposal": "p1",
                                                          "decision": "reject"}))
        sock.send(frame)
        sock.send(frame)
        replies = []
        for _ in range(2):
            assert sock.poll(5000)
            replies.append(decode(sock.recv()))
        assert [r.id for r in replies] == ["dup-1", "dup-1"] and all(r.ok for r in replies)
    finally:
        sock.close()
    assert [op for op, _ in session.seen] == ["agent.approve"]


def test_a_local_handler_answers_later_through_reply_later(endpoints):
    held: list[tuple[bytes, Request]] = []

    def local(sender: bytes, req: Request):
        if req.op != "system.spawn":
            return None
        held.append((sender, req))
        return DEFERRED
    hub = Hub(endpoints.requests, endpoints.events, local_handler=local).start()
    client = connect(endpoints, name="test")
    try:
        got: list = []
        waiter = threading.Thread(target=lambda: got.append(
            client.call("system.spawn", {"kind": "agent", "key": CID}, timeout=10)))
        waiter.start()
        assert wait_for(lambda: held, 5)
        assert waiter.is_alive()            # not answered at once
        sender, req = held[0]
        hub.reply_later(sender, Reply.success(req.id, {"ready": True}))
        waiter.join(10)
        assert got == [{"ready": True}]
    finally:
        client.close()
        hub.stop()
