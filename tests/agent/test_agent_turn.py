"""The turn loop with a fake provider, a fake core (in memory) and the real gate policy."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import pytest

from rio.agent.gate import Gate, Limits
from rio.agent.tools import TOOL_SPECS, Tools
from rio.agent.turn import (
    INTERRUPTED,
    STOPPED,
    Turn,
    TurnResult,
    TurnSpec,
    close_dangling,
    merge_interrupted,
)
from rio.protocol.errors import AgentError, DocumentError, PathError
from rio.providers.base import (
    Delta,
    Done,
    Message,
    ProviderFailure,
    ProviderRequest,
    TextBlock,
    ToolCall,
    ToolResultBlock,
    ToolUseBlock,
)
from tests.support import wait_for_async

C, T = "conv1", "t1"


# --- fakes ----------------------------------------------------------------------------------

class FakeCore:
    """fs.* and buffer.* over dicts: enough of the core for the tools."""

    def __init__(self, files: dict[str, str] | None = None) -> None:
        self.files = dict(files or {})
        self.buffers: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, dict]] = []
        self.runs: list[Mapping[str, Any]] = []

    def _buf(self, bid: str) -> dict[str, Any]:
        if bid not in self.buffers:
            raise DocumentError("unknown_buffer", f"No open buffer {bid!r}.")
        return self.buffers[bid]

    def _summary(self, bid: str) -> dict[str, Any]:
        b = self.buffers[bid]
        return {"buffer": bid, "name": b["path"] or "Untitled", "path": b["path"],
                "version": b["version"], "dirty": b["dirty"], "length": len(b["text"])}

    def open_as_user(self, path: str) -> str:
        bid = f"b{len(self.buffers) + 1}"
        self.buffers[bid] = {"path": path, "text": self.files[path], "version": 0, "dirty": False}
        return bid

    def type_as_user(self, bid: str, text: str) -> None:
        b = self.buffers[bid]
        b["text"], b["version"], b["dirty"] = text, b["version"] + 1, True

    async def call(self, op: str, args: Mapping[str, Any], timeout: float = 10.0) -> Any:
        self.calls.append((op, dict(args)))
        await asyncio.sleep(0)
        if op == "fs.read":
            path = args["path"]
            if path.startswith("/") or ".." in path:
                raise PathError("outside_root", f"{path} is outside the project.")
            if path not in self.files:
                raise PathError("not_found", f"{path} does not exist.")
            text = self.files[path]
            cut = len(text) > args["max_chars"]
            return {"path": path, "text": text[:args["max_chars"]] + ("[…]" if cut else ""),
                    "truncated": cut, "length": len(text)}
        if op == "fs.list":
            return {"path": ".", "truncated": False,
                    "entries": [{"name": p, "path": p, "kind": "file", "size": len(t)}
                                for p, t in sorted(self.files.items())]}
        if op == "buffer.list":
            return [self._summary(b) for b in self.buffers]
        if op == "buffer.info":
            self._buf(args["buffer"])
            return self._summary(args["buffer"])
        if op == "buffer.text":
            b = self._buf(args["buffer"])
            start, end = args.get("start", 0), args.get("end")
            end = len(b["text"]) if end is None else end
            return {"text": b["text"][start:end], "version": b["version"]}
        if op == "buffer.open":
            for bid, b in self.buffers.items():
                if b["path"] == args["path"]:
                    return self._summary(bid)
            if args["path"] not in self.files:
                raise PathError("not_found", "no such file")
            return self._summary(self.open_as_user(args["path"]))
        if op == "buffer.replace":
            b = self._buf(args["buffer"])
            assert args["base_version"] == b["version"]
            b["text"] = b["text"][:args["start"]] + args["text"] + b["text"][args["end"]:]
            b["version"] += 1
            b["dirty"] = True
            return {"version": b["version"]}
        if op == "buffer.new":
            bid = f"b{len(self.buffers) + 1}"
            self.buffers[bid] = {"path": None, "text": args["text"], "version": 0, "dirty": True}
            return self._summary(bid)
        if op == "buffer.save":
            b = self._buf(args["buffer"])
            b["path"] = args["path"]
            self.files[args["path"]] = b["text"]
            b["dirty"] = False
            return self._summary(args["buffer"])
        if op == "buffer.close":
            self.buffers.pop(args["buffer"], None)
            return {"closed": args["buffer"]}
        raise AssertionError(f"unexpected op {op}")

    async def run(self, args: Mapping[str, Any], timeout: float) -> Mapping[str, Any]:
        self.runs.append(args)
        if args["command"] == "sleep forever":
            await asyncio.Event().wait()
        return {"run": "r1", "code": 0, "how": "exited", "output": "ran: " + args["command"],
                "dropped_chars": 0}


class FakePort:
    def __init__(self, gate: Gate) -> None:
        self.gate = gate
        self.events: list[tuple[str, dict]] = []
        self.proposed = asyncio.Event()

    def publish(self, topic: str, data: Mapping[str, Any]) -> None:
        self.events.append((topic, dict(data)))
        if topic == "agent.propose":
            self.proposed.set()

    async def gate_turn(self, event: str) -> None:
        self.gate.turn_event(C, T, event)

    async def gate_check(self, tool: str, args: Mapping[str, Any]) -> Mapping[str, Any]:
        return self.gate.check(C, T, "fake", tool, args).to_dict()

    async def remember(self, tool: str) -> None:
        self.gate.remember("fake", tool)

    def of(self, topic: str) -> list[dict]:
        return [d for t, d in self.events if t == topic]


class FakeProvider:
    """Each request takes the next script: a list of events, or "hang" (streams one delta
    then waits until cancelled, like a slow model)."""

    name = "fake"

    def __init__(self, *scripts: Any) -> None:
        self.scripts = list(scripts)
        self.requests: list[ProviderRequest] = []
        self.cancelled = False

    async def stream(self, request: ProviderRequest, post) -> None:
        self.requests.append(request)
        script = self.scripts.pop(0)
        if script == "hang":
            post(Delta("partial "))
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.cancelled = True
                raise
        for event in script:
            post(event)
            await asyncio.sleep(0)


def text(*pieces: str) -> list:
    return [Delta(p) for p in pieces] + [Done("end_turn")]


def tool(call_id: str, name: str, **args: Any) -> list:
    return [ToolCall(call_id, name, args), Done("tool_use")]


def make(provider: FakeProvider, core: FakeCore | None = None, mode: str = "review",
         limits: Limits = Limits()) -> tuple[Turn, FakePort, FakeCore]:
    core = core or FakeCore({"a.py": "x = 1\ny = 2\n"})
    port = FakePort(Gate(mode=mode, limits=limits))
    spec = TurnSpec(C, T, "fake", "system", (Message.user("hi"),), TOOL_SPECS)
    return Turn(spec, provider, Tools(core, C), port), port, core


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 10))


# --- tests ----------------------------------------------------------------------------------

def test_text_turn_streams_deltas_and_ends_done() -> None:
    turn, port, _ = make(FakeProvider(text("Hel", "lo")))
    result = run(turn.run())
    assert result.status == "done" and result.error is None
    assert "".join(d["text"] for d in port.of("agent.delta")) == "Hello"
    assert all(d["conversation"] == C and d["turn"] == T for d in port.of("agent.delta"))
    assert [m.to_dict() for m in result.messages] == [Message.assistant("Hello").to_dict()]
    assert not port.gate.in_turn(C, T)  # the gate was told the turn ended


def test_deltas_are_coalesced_but_none_is_lost() -> None:
    pieces = [f"{i} " for i in range(500)]

    class Burst(FakeProvider):
        async def stream(self, request, post):  # all in one go, like one network read
            for p in pieces:
                post(Delta(p))
            post(Done("end_turn"))

    turn, port, _ = make(Burst())
    run(turn.run())
    deltas = port.of("agent.delta")
    assert "".join(d["text"] for d in deltas) == "".join(pieces)
    assert len(deltas) < len(pieces)


def test_tool_loop_reads_and_sends_results_back() -> None:
    provider = FakeProvider(tool("c1", "fs_read", path="a.py"), text("It sets x."))
    turn, port, _ = make(provider)
    result = run(turn.run())
    assert result.status == "done"
    second = provider.requests[1].messages
    results = [b for b in second[-1].content if isinstance(b, ToolResultBlock)]
    assert results[0].tool_use_id == "c1" and "x = 1" in results[0].content
    assert [d["name"] for d in port.of("agent.tool")] == ["fs_read"]
    assert port.of("agent.tool_result")[0]["ok"] is True
    roles = [m.role for m in result.messages]
    assert roles == ["assistant", "user", "assistant"]


def test_fs_read_serves_the_unsaved_buffer_text() -> None:
    core = FakeCore({"a.py": "on disk\n"})
    bid = core.open_as_user("a.py")
    core.type_as_user(bid, "typed, not saved\n")
    provider = FakeProvider(tool("c1", "fs_read", path="./a.py"), text("ok"))
    turn, _, _ = make(provider, core)
    run(turn.run())
    content = provider.requests[1].messages[-1].content[0].content
    assert "typed, not saved" in content and "on disk" not in content


def test_big_read_is_cut_with_a_marker_that_says_how_to_read_on() -> None:
    core = FakeCore({"big.txt": "z" * 200_000})
    provider = FakeProvider(tool("c1", "fs_read", path="big.txt"), text("ok"))
    turn, port, _ = make(provider, core)
    run(turn.run())
    content = provider.requests[1].messages[-1].content[0].content
    assert "truncated" in content and "offset=60000" in content
    assert port.of("agent.tool_result")[0]["truncated"] is True


def run_stopped(turn: Turn, when: Callable[[], Awaitable[object]]) -> TurnResult:
    """Run the turn and stop it (the user's Stop: the task cancelled) once ``when()`` is done;
    the turn's result, ``stopped``."""
    async def go() -> TurnResult:
        task = asyncio.create_task(turn.run())
        await when()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return turn.result()
    return run(go())


def propose_y3() -> list:
    """The model's call that proposes ``y = 2`` → ``y = 3`` in a.py (FakeCore's default file)."""
    return tool("c1", "propose_edit", path="a.py", old_text="y = 2", new_text="y = 3")


async def _approve_when_proposed(turn: Turn, port: FakePort, decision: str,
                                 before=None) -> dict:
    await port.proposed.wait()
    event = port.of("agent.propose")[-1]
    if before is not None:
        before()
    assert turn.decide(event["proposal"], decision)
    return event


def run_deciding(turn: Turn, port: FakePort, decision: str,
                 before: Callable[[], object] | None = None) -> tuple[dict, TurnResult]:
    """Run the turn and answer its first proposal with ``decision`` (after ``before()``: what
    the user does meanwhile); the proposal's event and the turn's result."""
    async def go() -> tuple[dict, TurnResult]:
        task = asyncio.create_task(turn.run())
        event = await _approve_when_proposed(turn, port, decision, before)
        return event, await task
    return run(go())


def test_propose_edit_then_approve_lands_in_a_buffer() -> None:
    provider = FakeProvider(propose_y3(), text("Done."))
    turn, port, core = make(provider)

    event, result = run_deciding(turn, port, "approve")
    assert event["kind"] == "edit" and "-y = 2" in event["diff"] and "+y = 3" in event["diff"]
    assert result.status == "done"
    (bid, since), = result.buffers
    assert core.buffers[bid]["text"] == "x = 1\ny = 3\n" and since == 0
    assert core.files["a.py"] == "x = 1\ny = 2\n"  # unsaved: the user saves
    replace = [a for op, a in core.calls if op == "buffer.replace"][0]
    assert replace["origin"] == f"agent:{C}"


def test_reject_tells_the_model() -> None:
    provider = FakeProvider(propose_y3(), text("OK."))
    turn, port, core = make(provider)

    result = run_deciding(turn, port, "reject")[1]
    assert result.status == "done" and not core.buffers
    answer = provider.requests[1].messages[-1].content[0]
    assert answer.is_error and "rejected" in answer.content


def test_relocation_at_approval_follows_the_users_typing() -> None:
    core = FakeCore({"a.py": "x = 1\ny = 2\n"})
    bid = core.open_as_user("a.py")
    provider = FakeProvider(propose_y3(), text("ok"))
    turn, port, _ = make(provider, core)

    result = run_deciding(turn, port, "approve", before=lambda: core.type_as_user(
        bid, "# new first line\nx = 1\ny = 2\n"))[1]
    assert core.buffers[bid]["text"] == "# new first line\nx = 1\ny = 3\n"
    assert result.buffers == ((bid, 1),)


@pytest.mark.parametrize("typed, reason", [("x = 1\ny = 22222\n", "vanished"),
                                           ("y = 2\ny = 2\n", "ambiguous")])
def test_relocation_refuses_typed_over_and_ambiguous(typed: str, reason: str) -> None:
    core = FakeCore({"a.py": "x = 1\ny = 2\n"})
    bid = core.open_as_user("a.py")
    provider = FakeProvider(tool("c1", "propose_edit", path="a.py", old_text="y = 2\n",
                                 new_text="y = 3\n"), text("ok"))
    turn, port, _ = make(provider, core)

    result = run_deciding(turn, port, "approve",
                          before=lambda: core.type_as_user(bid, typed))[1]
    assert core.buffers[bid]["text"] == typed
    answer = provider.requests[1].messages[-1].content[0]
    assert answer.is_error and f"({reason})" in answer.content
    assert result.buffers == ()


def test_edit_with_a_target_that_is_not_there_is_refused_before_asking() -> None:
    provider = FakeProvider(tool("c1", "propose_edit", path="a.py", old_text="nope",
                                 new_text="x"), text("ok"))
    turn, port, _ = make(provider)
    run(turn.run())
    assert not port.of("agent.propose")
    assert "(vanished)" in provider.requests[1].messages[-1].content[0].content


def test_always_remembers_and_the_next_edit_applies_without_asking() -> None:
    provider = FakeProvider(tool("c1", "propose_edit", path="a.py", old_text="x = 1",
                                 new_text="x = 10"),
                            tool("c2", "propose_edit", path="a.py", old_text="y = 2",
                                 new_text="y = 20"), text("ok"))
    turn, port, core = make(provider)

    run_deciding(turn, port, "always")
    assert len(port.of("agent.propose")) == 1
    assert ("fake", "propose_edit") in port.gate.always_allowed()
    assert list(core.buffers.values())[0]["text"] == "x = 10\ny = 20\n"


def test_auto_buffer_mode_applies_edits_at_once() -> None:
    provider = FakeProvider(tool("c1", "propose_edit", path="a.py", old_text="x = 1",
                                 new_text="x = 2"), text("ok"))
    turn, port, core = make(provider, mode="auto_buffer")
    result = run(turn.run())
    assert not port.of("agent.propose") and result.buffers


def test_propose_create_refuses_an_existing_path_and_creates_a_new_one() -> None:
    provider = FakeProvider(tool("c1", "propose_create", path="a.py", text="no"),
                            tool("c2", "propose_create", path="new.py", text="print(1)\n"),
                            text("ok"))
    turn, port, core = make(provider)

    run_deciding(turn, port, "approve")
    first = provider.requests[1].messages[-1].content[0]
    assert first.is_error and "(exists)" in first.content
    event = port.of("agent.propose")[0]
    assert event["kind"] == "create" and event["diff"].startswith("--- /dev/null")
    assert core.files["new.py"] == "print(1)\n"


def test_run_command_asks_shows_danger_and_returns_output() -> None:
    provider = FakeProvider(tool("c1", "run_command", command="rm -rf build"), text("ok"))
    turn, port, core = make(provider, mode="allow_all")

    run_deciding(turn, port, "approve")
    event = port.of("agent.propose")[0]
    assert event["kind"] == "command" and event["command"] == "rm -rf build"
    assert event["danger"]["rule"] == "rm_rf" and event["cwd"] == "."
    assert "ran: rm -rf build" in provider.requests[1].messages[-1].content[0].content
    # The UI gets the tail of what the model got (issue 9: `rio chat` showed only the code).
    shown = port.of("agent.tool_result")[0]
    assert "ran: rm -rf build" in shown["output"]
    assert shown["output"] == provider.requests[1].messages[-1].content[0].content[-4000:]


def test_gate_refusal_reaches_the_model() -> None:
    provider = FakeProvider(tool("c1", "propose_edit", path="../etc/x", old_text="a",
                                 new_text="b"), text("ok"))
    turn, port, core = make(provider)
    run(turn.run())
    answer = provider.requests[1].messages[-1].content[0]
    assert answer.is_error and answer.content.startswith("Refused")
    assert not any(op == "fs.read" for op, _ in core.calls)


def test_unknown_tool_and_missing_arguments_are_tool_errors() -> None:
    provider = FakeProvider([ToolCall("c1", "format_disk", {}), ToolCall("c2", "fs_read", {}),
                             Done("tool_use")], text("ok"))
    turn, _, _ = make(provider)
    result = run(turn.run())
    first, second = provider.requests[1].messages[-1].content
    assert first.is_error and "no tool named" in first.content
    assert second.is_error and "needs path" in second.content
    assert result.status == "done"


def test_stop_mid_stream_keeps_the_partial_text() -> None:
    provider = FakeProvider("hang")
    turn, port, _ = make(provider)

    result = run_stopped(turn, lambda: wait_for_async(lambda: port.of("agent.delta"),
                                                      what="streamed text"))
    assert provider.cancelled
    assert result.status == "stopped" and result.error.kind == "agent.stopped"
    assert result.messages[0].text == "partial "
    assert not port.gate.in_turn(C, T)


def test_stop_while_a_proposal_waits_answers_the_tool_call() -> None:
    provider = FakeProvider(tool("c1", "propose_edit", path="a.py", old_text="x = 1",
                                 new_text="x = 2"))
    turn, port, core = make(provider)

    result = run_stopped(turn, port.proposed.wait)
    assert [m.role for m in result.messages] == ["assistant", "user"]
    answer = result.messages[1].content[0]
    assert answer.tool_use_id == "c1" and answer.content == STOPPED
    assert not core.buffers


def test_stop_during_a_command_ends_it() -> None:
    provider = FakeProvider(tool("c1", "run_command", command="sleep forever"))
    turn, port, core = make(provider, mode="allow_all")

    result = run_stopped(turn, lambda: wait_for_async(lambda: core.runs,
                                                      what="the command's run"))
    assert result.messages[-1].content[0].content == STOPPED


def test_interrupt_closes_the_dangling_call_and_ends_the_turn() -> None:
    provider = FakeProvider(tool("c1", "propose_edit", path="a.py", old_text="x = 1",
                                 new_text="x = 2"))
    turn, port, core = make(provider)

    async def go():
        task = asyncio.create_task(turn.run())
        await port.proposed.wait()
        assert turn.pending_ids()
        assert turn.interrupt()
        return await task

    result = run(go())
    assert result.status == "stopped" and result.error.kind == "agent.interrupted"
    assert result.messages[-1].content[0].content == INTERRUPTED
    assert not turn.interrupt()  # nothing pending any more


def test_model_request_limit_ends_the_turn_with_a_classified_error() -> None:
    provider = FakeProvider(*[tool(f"c{i}", "buffer_list") for i in range(5)])
    turn, port, _ = make(provider, limits=Limits(max_requests=2))
    result = run(turn.run())
    assert result.status == "error" and result.error.kind == "agent.limit_reached"
    assert len(provider.requests) == 2
    assert result.messages[-1].role == "user"  # the last tool round is answered


def test_tool_call_limit_answers_every_call_of_the_round() -> None:
    provider = FakeProvider([ToolCall("a", "buffer_list", {}), ToolCall("b", "buffer_list", {}),
                             Done("tool_use")])
    turn, _, _ = make(provider, limits=Limits(max_tool_calls=1))
    result = run(turn.run())
    assert result.error.kind == "agent.limit_reached"
    ids = [b.tool_use_id for b in result.messages[-1].content]
    assert ids == ["a", "b"]


def test_provider_failure_after_text_keeps_it_and_says_partial() -> None:
    failure = ProviderFailure(AgentError("server_error", "Overloaded.", "Retry."), partial=True)
    provider = FakeProvider([Delta("half an ans"), failure])
    turn, port, _ = make(provider)
    result = run(turn.run())
    assert result.status == "error" and result.partial
    assert result.messages[0].text == "half an ans"
    assert result.to_wire()["error"]["partial"] is True
    assert result.to_wire()["error"]["kind"] == "agent.server_error"


def test_close_dangling_answers_unanswered_calls_and_merges_roles() -> None:
    history = [Message.user("do it"),
               Message.assistant("sure", (ToolUseBlock("u1", "fs_read", {"path": "a"}),)),
               Message.user("never mind")]
    fixed = close_dangling(history)
    assert [m.role for m in fixed] == ["user", "assistant", "user"]
    blocks = fixed[2].content
    assert isinstance(blocks[0], ToolResultBlock) and blocks[0].content == INTERRUPTED
    assert isinstance(blocks[1], TextBlock) and blocks[1].text == "never mind"
    assert close_dangling(fixed) == fixed


def test_merge_interrupted_puts_the_earlier_turn_before_the_new_message() -> None:
    earlier = [Message.assistant("", (ToolUseBlock("u1", "x", {}),)),
               Message.tool_results((ToolResultBlock("u1", INTERRUPTED, True),))]
    request = [Message.user("first"), Message.user("second")]
    merged = merge_interrupted(request, earlier)
    assert merged[1:3] == tuple(earlier) and merged[-1] == request[-1]
    assert merge_interrupted(merged, earlier) == merged


def test_answer_reports_what_the_decision_led_to() -> None:
    core = FakeCore({"a.py": "x = 1\ny = 2\n"})
    bid = core.open_as_user("a.py")
    provider = FakeProvider(propose_y3(), text("ok"))
    turn, port, _ = make(provider, core)

    async def go():
        task = asyncio.create_task(turn.run())
        await port.proposed.wait()
        pid = port.of("agent.propose")[0]["proposal"]
        assert await turn.answer("nope", "approve") is None
        core.type_as_user(bid, "gone\n")
        outcome = await turn.answer(pid, "approve")
        await task
        return outcome

    outcome = run(go())
    assert outcome is not None and not outcome.ok and "vanished" in outcome.content


def test_a_failed_turn_publishes_its_classified_error() -> None:
    failure = ProviderFailure(AgentError("auth_rejected", "Key refused.", "Set your key."), False)
    turn, port, _ = make(FakeProvider([failure]))
    result = run(turn.run())
    assert result.status == "error" and result.messages == ()
    (event,) = port.of("agent.error")
    assert event["kind"] == "agent.auth_rejected" and event["next"] == "Set your key."
    assert event["partial"] is False and event["turn"] == T


def test_agent_tool_event_cuts_long_inputs_but_the_tool_gets_them_whole() -> None:
    big = "x" * 50_000
    provider = FakeProvider(tool("c1", "propose_create", path="big.txt", text=big), text("ok"))
    turn, port, core = make(provider, mode="allow_all")
    run(turn.run())
    shown = port.of("agent.tool")[0]["input"]["text"]
    assert len(shown) < 5_000 and "more characters" in shown
    assert core.files["big.txt"] == big
