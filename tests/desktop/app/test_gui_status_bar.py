"""The status bar under a long message, and what it says of a file that cannot be opened."""

from __future__ import annotations

import pytest

from tests.desktop_support import RioDesktop

pytestmark = [pytest.mark.gui, pytest.mark.slow]


@pytest.mark.timeout(120)
def test_a_long_message_never_pushes_the_fixed_cells_off_the_window(tmp_path, display):
    root = tmp_path / "proj"
    deep = root / ("a-folder-with-a-rather-long-name-" * 3) / ("and-another-one-" * 4)
    deep.mkdir(parents=True)
    binary = deep / "firmware-image-with-a-long-name.bin"
    binary.write_bytes(b"\x00\x01\x02 not text \x00" * 64)
    (root / "hello.py").write_text("print('hi')\n")
    d = RioDesktop(root, tmp_path / "base", display,
                   files=(str(root / "hello.py"), str(binary)))
    d.start()
    try:
        state = d.wait_state(lambda s: s["status"]["message"].startswith("Could not open"))
        # The message can be set before the window's first layout (every cell unmapped then):
        # wait for the layout; with the old packing the cells stay cut for good.
        state = d.wait_state(lambda s: s["status"]["message"].startswith("Could not open")
                             and s["status"]["cut"] == [], timeout=10)
        message = state["status"]["message"]
        # Named on the command line: "open", not "reopen"; and the message says what to do.
        assert str(binary) in message
        assert len(message) > 150
        assert state["status"]["cut"] == []
        # "No agent" until the agent panel is installed (a moment after the window shows).
        assert state["status"]["agent"] in ("No agent", "Agent idle")
    finally:
        d.stop()
