"""The bus group's fixtures: a real hub over ``ipc://`` sockets in the test's tmp_path, and a
client connected to it — every test of tests/bus/ that talks to a hub starts from these (a file
that needs a different shape, e.g. tests/bus/test_remote.py's ``hub``, overrides the name)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from actors.bus.client import BusConnection, Endpoints, connect
from actors.bus.hub import Hub


@pytest.fixture
def endpoints(tmp_path: Path) -> Endpoints:
    """The hub's two sockets; under tmp_path, short enough for ipc's 107-byte limit."""
    sock_dir = tmp_path / "s"
    sock_dir.mkdir()
    return Endpoints(f"ipc://{sock_dir}/r", f"ipc://{sock_dir}/e")


@pytest.fixture
def hub(endpoints: Endpoints) -> Iterator[Hub]:
    h = Hub(endpoints.requests, endpoints.events).start()
    yield h
    h.stop()


@pytest.fixture
def client(hub: Hub, endpoints: Endpoints) -> Iterator[BusConnection]:
    c = connect(endpoints, name="test")
    yield c
    c.close()
