"""Waiting until a subscription has reached the hub: it travels asynchronously, so an event
published right after ``subscribe`` may not be sent to the client yet. Tests that count or
number events settle first."""

from __future__ import annotations

from actors.bus.client import BusConnection
from actors.bus.hub import Hub
from rio.protocol.frames import Event
from tests.support import wait_for


def settle(client: BusConnection, hub: Hub, prefix: str = "t.", topic: str = "t.x") -> list[Event]:
    """Until the hub sends ``prefix`` events to the client, publishing ``topic`` meanwhile;
    returns the list the settling handler keeps filling (the test reads later events there)."""
    seen: list[Event] = []
    client.subscribe(prefix, seen.append)

    def publish_and_wait(step: float) -> None:
        hub.publish(topic, {"a": 0})
        client.wait(step)
    wait_for(lambda: seen, 10, 0.1, pause=publish_and_wait, what="the subscription at the hub")
    return seen
