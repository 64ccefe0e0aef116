"""The agent panel's GUI tests' desktop (tests/desktop/agent/agent_panel_desktop.py): a scripted
model server and the real desktop, each once per test module (module scope: a module's tests
share one desktop, and each module gets its own), a fresh model script and conversation per
test. Only the panel's tests use these names here (the display-free tests use none of them)."""

from __future__ import annotations

import pytest

from tests.desktop.agent.agent_panel_desktop import fresh_conversation, panel_desktop
from tests.fakes.model_servers import fresh_model, serve_model


@pytest.fixture(scope="module")
def model_server():
    yield from serve_model()


@pytest.fixture
def model(model_server):
    return fresh_model(model_server)


@pytest.fixture(scope="module")
def desktop(tmp_path_factory, model_server, display):
    yield from panel_desktop(tmp_path_factory, model_server, display)


@pytest.fixture
def fresh(desktop, model):
    return fresh_conversation(desktop)
