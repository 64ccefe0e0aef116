"""system.spawn answered when the process is ready (actors/runtime/spawn_waits.py), without processes:
a stand-in supervisor whose children change state as the tests say."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from actors.bus.hub import DEFERRED
from actors.runtime.spawn_waits import RESPAWN, SPAWN_READY_S, SpawnWaits
from rio.protocol.frames import Reply, Request


@dataclass
class Spec:
    name: str


@dataclass
class Child:
    spec: Spec
    state: str = "running"
    ready: bool = False
    pid: int = 4242
    last_exit: str | None = None
    log_path: str = "/logs/agent.log"
    extra: dict = field(default_factory=dict)


class Hub:
    def __init__(self) -> None:
        self.sent: list[tuple[bytes, Reply]] = []
        self.registered: dict[str, int] = {}

    def reply_later(self, client: bytes, reply: Reply) -> None:
        self.sent.append((client, reply))

    def registered_pid(self, name: str) -> int | None:
        return self.registered.get(name)


class Supervisor:
    def __init__(self) -> None:
        self.hub = Hub()
        self.children: dict[str, Child] = {}
        self.spawned: list[str] = []

    def spawn_on_demand(self, args: dict[str, Any]) -> dict[str, Any]:
        name = f"{args['kind']}:{args['key']}"
        child = self.children.get(name)
        if child is None or child.state in ("failed", "stopped", "idle-stopped"):
            child = self.children[name] = Child(Spec(name))
            self.spawned.append(name)
        return {"name": name, "pid": child.pid, "state": child.state}


def spawn(waits: SpawnWaits, rid: str = "r1", key: str = "abc123") -> Any:
    return waits.request(b"client", Request(rid, "system.spawn", {"kind": "agent", "key": key}))


def test_a_new_process_is_answered_when_it_is_ready_not_before():
    sup = Supervisor()
    waits = SpawnWaits(sup)
    assert spawn(waits) is DEFERRED and sup.spawned == ["agent:abc123"]
    child = sup.children["agent:abc123"]
    waits.on_event(child, "started")
    assert sup.hub.sent == []
    child.ready = True
    waits.on_event(child, "ready")
    [(client, reply)] = sup.hub.sent
    assert client == b"client" and reply.ok and reply.id == "r1"
    assert dict(reply.result) == {"name": "agent:abc123", "pid": 4242, "state": "running",
                                  "ready": True}
    # A ready one is answered at once, and not spawned again.
    again = spawn(waits, "r2")
    assert isinstance(again, Reply) and again.ok and sup.spawned == ["agent:abc123"]


def test_a_process_that_exits_before_it_is_ready_fails_the_spawn_classified():
    sup = Supervisor()
    waits = SpawnWaits(sup)
    spawn(waits, "r1")
    spawn(waits, "r1")       # a duplicated frame: each copy waits and is answered
    child = sup.children["agent:abc123"]
    child.last_exit, child.state = "exit 3", "restarting"
    waits.on_event(child, "exited")
    assert len(sup.hub.sent) == 2
    for _, reply in sup.hub.sent:
        assert not reply.ok and reply.error["kind"] == "bus.spawn_failed"
        assert "exit 3" in reply.error["message"] and "/logs/agent.log" in reply.error["next"]


def test_a_spawn_while_it_is_being_stopped_starts_it_again_after_the_stop():
    sup = Supervisor()
    waits = SpawnWaits(sup)
    sup.children["agent:abc123"] = child = Child(Spec("agent:abc123"), state="stopping",
                                                 ready=True)
    assert spawn(waits) is DEFERRED
    assert child.extra.get(RESPAWN) is True      # the monitor loop starts it again
    child.state = "idle-stopped"
    waits.on_event(child, "idle-stopped")
    assert sup.hub.sent == []                    # not a failure: it comes back
    child.state, child.ready = "running", True
    waits.on_event(child, "ready")
    assert sup.hub.sent[0][1].ok and RESPAWN not in child.extra


def test_a_spawn_nobody_answers_times_out():
    sup = Supervisor()
    waits = SpawnWaits(sup)
    spawn(waits)
    waits.expire(0.0)                          # not yet
    assert sup.hub.sent == []
    waits.expire(float("inf"))
    [(_, reply)] = sup.hub.sent
    assert reply.error["kind"] == "bus.timeout" and f"{SPAWN_READY_S:g} s" in \
        reply.error["message"]


def test_a_process_registered_without_the_supervisor_is_used_as_it_is():
    sup = Supervisor()
    sup.hub.registered["agent:abc123"] = 777       # a test's stand-in session, say
    reply = spawn(waits := SpawnWaits(sup))
    assert isinstance(reply, Reply) and reply.ok and reply.result["pid"] == 777
    assert sup.spawned == [] and waits._waiting == {}


def test_bad_arguments_are_refused_at_once():
    reply = SpawnWaits(Supervisor()).request(b"c", Request("r", "system.spawn", {"kind": ""}))
    assert isinstance(reply, Reply) and reply.error["kind"] == "protocol.bad_args"
