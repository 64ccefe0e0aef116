"""How an actor serves a request: ``serve``, ``serve_async`` and ``OpTable`` (actors/bus/service.py)."""

import asyncio
import logging
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.bus.service import ANSWERED, OpTable, RequestContext, serve
from rio.protocol import ops
from rio.protocol.errors import PathError, error_from_wire
from rio.protocol.frames import Request
from rio.protocol.routing import TURN_ANSWERS


class FakeBus:
    """Records what a context sends (a BusThread's send_reply, without sockets)."""

    def __init__(self):
        self.replies = []
        self.lock = threading.Lock()

    def send_reply(self, client, reply, events=()):
        with self.lock:
            self.replies.append((client, reply))


def make_ctx(op="gate.status", bus=None):
    bus = bus or FakeBus()
    return RequestContext(bus, b"client", Request("r1", op, {}), {}), bus


class Actor:
    handles: OpTable["Actor"] = OpTable()

    def __init__(self):
        self.later = []

    @handles("gate.status")
    def status(self, ctx):
        return {"mode": "review"}

    @handles("gate.mode", "gate.remember")
    def later_reply(self, ctx):
        self.later.append(ctx)
        return ANSWERED

    @handles("gate.forget")
    def refuse(self, ctx):
        raise PathError("outside_root", "Not in the project.", "Pick a file inside it.")

    @handles("gate.check")
    def bug(self, ctx):
        raise KeyError("oops")

    @handles("gate.turn")
    def answer_then_crash(self, ctx):
        ctx.reply({"first": True})
        raise RuntimeError("after the answer")


def test_a_result_is_the_one_reply():
    ctx, bus = make_ctx("gate.status")
    Actor.handles.serve(Actor(), ctx)
    assert [(c, r.ok, r.result) for c, r in bus.replies] == [(b"client", True, {"mode": "review"})]
    assert ctx.answered


def test_answered_means_the_method_answers_later_and_only_then():
    actor = Actor()
    ctx, bus = make_ctx("gate.mode")
    Actor.handles.serve(actor, ctx)
    assert bus.replies == [] and not ctx.answered
    actor.later[0].reply({"mode": "auto"})
    assert [r.result for _, r in bus.replies] == [{"mode": "auto"}]


def test_a_rio_error_is_the_answer_as_it_is_and_not_logged(caplog):
    ctx, bus = make_ctx("gate.forget")
    with caplog.at_level(logging.ERROR, logger="rio.bus"):
        Actor.handles.serve(Actor(), ctx)
    [(_, reply)] = bus.replies
    err = error_from_wire(reply.error)
    assert not reply.ok and err.kind == "path.outside_root"
    assert (err.message, err.next) == ("Not in the project.", "Pick a file inside it.")
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_an_unexpected_exception_is_logged_with_its_traceback_and_answered_as_internal(caplog):
    ctx, bus = make_ctx("gate.check")
    with caplog.at_level(logging.ERROR, logger="rio.bus"):
        Actor.handles.serve(Actor(), ctx)
    [(_, reply)] = bus.replies
    assert not reply.ok and reply.error["kind"] == "internal.unexpected"
    assert "KeyError" in reply.error["message"]
    [record] = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert "gate.check" in record.getMessage() and record.exc_info[0] is KeyError


def test_an_op_without_a_method_is_unknown_op_with_the_catalogue_message():
    ctx, bus = make_ctx("gate.nosuch")
    Actor.handles.serve(Actor(), ctx)
    [(_, reply)] = bus.replies
    same = ops.unknown_op("gate.nosuch")
    assert reply.error["kind"] == "protocol.unknown_op"
    assert (reply.error["message"], reply.error["next"]) == (same.message, same.next)
    assert "gate.status" in same.message     # names the family's ops
    with pytest.raises(type(same)) as info:  # the catalogue's own check says the same
        ops.validate(Request("r", "gate.nosuch", {}))
    assert info.value.message == same.message


def test_a_second_answer_is_never_sent(caplog):
    ctx, bus = make_ctx("gate.turn")
    with caplog.at_level(logging.ERROR, logger="rio.bus"):
        Actor.handles.serve(Actor(), ctx)
    assert [(r.ok, r.result) for _, r in bus.replies] == [(True, {"first": True})]
    assert any(r.exc_info and r.exc_info[0] is RuntimeError for r in caplog.records)
    assert any("answered twice" in r.getMessage() for r in caplog.records)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from(["reply", "fail"]), min_size=1, max_size=6))
def test_whatever_threads_race_to_answer_exactly_one_answer_leaves(answers):
    ctx, bus = make_ctx()
    start = threading.Barrier(len(answers))

    def answer(how):
        start.wait()
        if how == "reply":
            ctx.reply(1)
        else:
            ctx.fail(RuntimeError("x"))
    threads = [threading.Thread(target=answer, args=(how,)) for how in answers]
    logging.disable(logging.ERROR)
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        logging.disable(logging.NOTSET)
    assert len(bus.replies) == 1


def test_serve_without_a_table_takes_any_callable():
    ctx, bus = make_ctx("fs.read")
    serve(ctx, lambda c: {"op": c.op})
    ctx2, bus2 = make_ctx("fs.read")
    serve(ctx2, None)
    assert bus.replies[0][1].result == {"op": "fs.read"}
    assert bus2.replies[0][1].error["kind"] == "protocol.unknown_op"


def test_serve_async_answers_like_serve(caplog):
    class Loop:
        handles: OpTable["Loop"] = OpTable()

        @handles("session.status")
        async def status(self, ctx):
            await asyncio.sleep(0)
            return {"turn": None}

        @handles("session.stop")
        async def stop(self, ctx):
            raise ValueError("bug")

    results = {}
    for op in ("session.status", "session.stop", "session.nosuch"):
        ctx, bus = make_ctx(op)
        with caplog.at_level(logging.ERROR, logger="rio.bus"):
            asyncio.run(Loop.handles.serve_async(Loop(), ctx))
        [(_, reply)] = bus.replies
        results[op] = reply.result if reply.ok else reply.error["kind"]
    assert results == {"session.status": {"turn": None}, "session.stop": "internal.unexpected",
                       "session.nosuch": "protocol.unknown_op"}
    assert any(r.exc_info and r.exc_info[0] is ValueError for r in caplog.records)


def test_an_op_has_one_method_per_table():
    table = OpTable()
    table("gate.status")(lambda self, ctx: None)
    with pytest.raises(ValueError, match="gate.status"):
        table("gate.status")(lambda self, ctx: None)
    sub = table.copy()
    sub("gate.mode")(lambda self, ctx: None)
    assert table.names == {"gate.status"} and sub.names == {"gate.status", "gate.mode"}


def _tables():
    from actors.agent.conversations_actor import ConversationsActor
    from actors.agent.discovery_actor import AgentsActor
    from actors.agent.gate_actor import GateActor
    from actors.agent.mcp_endpoint import EndpointService
    from actors.agent.session import AgentSession
    from actors.bus.hub import Hub
    from actors.core.documents_actor import REGISTRY_OPS, DocumentsActor
    from actors.core.runner_actor import RunnerActor
    from actors.runtime.host import Host
    from actors.runtime.supervisor import Supervisor
    from rio.files.fs_ops import FsOps
    from rio.text.buffer_state import OpenBuffer
    from ui.tk.app.control import ControlServer
    buffer_ops = {name for name in ops.REGISTRY if name.startswith("buffer.")}
    return [(GateActor.handles, "gate", None), (RunnerActor.handles, "run", None),
            (AgentsActor.handles, "agents", None), (Host.handles, "host", None),
            (EndpointService.handles, "mcp", None),
            (FsOps.handles, "fs", None),
            (ConversationsActor.handles, "agent",
             {name for name in ops.REGISTRY if name.split(".", 1)[0] in ("agent",
                                                                         "conversation")}),
            # the session also answers a running turn's answers (rio/protocol/routing.py)
            (AgentSession.handles, "session", {name for name in ops.REGISTRY if name.startswith(
                "session.")} | set(TURN_ANSWERS)),
            # the registry serves four buffer ops, each buffer's own actor the rest
            (DocumentsActor.handles, "buffer", REGISTRY_OPS),
            (OpenBuffer.handles, "buffer", buffer_ops - REGISTRY_OPS),
            # answered on the hub's thread (actors/bus/local_ops.py)
            (Hub.handles, "bus", None), (Supervisor.handles, "system", None),
            (ControlServer.handles, "ui", None)]   # the desktop's (ui/tk/app/control.py)


@pytest.mark.parametrize("index", range(len(_tables())))
def test_each_table_serves_exactly_its_ops_of_the_catalogue(index):
    """An op misspelt in ``@handles`` (never served) or one added to the catalogue without a
    method (unknown_op at run time) fails here."""
    table, prefix, only = _tables()[index]
    catalogue = {name for name in ops.REGISTRY if name.split(".", 1)[0] == prefix}
    assert table.names == (catalogue if only is None else only)
    assert table.names <= set(ops.REGISTRY)


def test_the_hubs_threads_answer_turns_every_outcome_into_a_reply():
    """actors/bus/local_ops.answer (the hub's bus.*, the supervisor's system.*): the result,
    DEFERRED kept, a RioError as it is, a bug as internal.unexpected, bad arguments and an
    op without a method refused — never an exception on the hub's thread."""
    from actors.bus.local_ops import DEFERRED, answer
    from rio.protocol.errors import BusError

    def refused():
        raise BusError("no_route", "m", "n")

    table = OpTable()
    outcomes = {"bus.stats": lambda: {"n": 1}, "bus.services": lambda: DEFERRED,
                "bus.unregister": refused, "bus.register": lambda: 1 / 0}
    for name, outcome in outcomes.items():
        table(name)(lambda self, req, outcome=outcome: outcome())
    owner = object()

    def ask(op, args=None):
        return answer(table, owner, b"client", Request("r1", op, args or {}))
    assert ask("bus.stats").result == {"n": 1}
    assert ask("bus.services") is DEFERRED
    assert ask("bus.unregister").error["kind"] == "bus.no_route"
    assert ask("bus.register").error["kind"] == "internal.unexpected"
    assert ask("bus.register", {"prefixes": "x"}).error["kind"] == "protocol.bad_args"
    table2 = OpTable()
    assert answer(table2, owner, b"c", Request("r2", "bus.stats", {})).error["kind"] \
        == "protocol.unknown_op"
