"""An agent's approved edit that meets a core restart between reading and editing the buffer
(ADR-0020): refused as ``buffer.stale_base``, it reads the recovered text and lands once."""

from __future__ import annotations

import asyncio
from typing import Any, Mapping

from rio.agent.tools import Proposal, Tools
from rio.text.buffer_state import stale_base


class RestartingPort:
    """A core that restarts right after the first buffer.text: the old version is stale."""

    def __init__(self) -> None:
        self.text, self.version, self.calls = "x = 1\n", 3, []

    async def call(self, op: str, args: Mapping[str, Any], timeout: float = 10.0) -> Any:
        self.calls.append(op)
        if op == "buffer.open":
            return {"buffer": "b1"}
        if op == "buffer.text":
            got = {"text": self.text, "version": self.version}
            if self.calls.count("buffer.text") == 1:
                self.text, self.version = "# recovered\nx = 1\n", (1 << 32) + 1
            return got
        assert op == "buffer.replace"
        if args["base_version"] != self.version:
            raise stale_base("a.py", args["base_version"])
        self.text = self.text[:args["start"]] + args["text"] + self.text[args["end"]:]
        return {"version": self.version + 1}

    async def run(self, args: Mapping[str, Any], timeout: float) -> Mapping[str, Any]:
        raise AssertionError("not used")


def test_an_edit_refused_as_stale_base_is_located_again_on_the_recovered_text():
    port = RestartingPort()
    tools = Tools(port, "c1")
    proposal = Proposal("edit", "a.py", "", {"path": "a.py", "old_text": "x = 1",
                                              "new_text": "x = 2"})
    outcome = asyncio.run(tools.apply(proposal))
    assert outcome.ok, outcome
    assert port.text == "# recovered\nx = 2\n"
    assert port.calls.count("buffer.replace") == 2
