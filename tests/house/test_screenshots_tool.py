"""tools/screenshots.py writes where it is told, and never over the tracked pictures unless
asked to with --docs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _tool():
    spec = importlib.util.spec_from_file_location("screenshots_tool",
                                                  REPO / "tools" / "screenshots.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_default_is_a_fresh_folder_outside_the_docs():
    tool = _tool()
    out = tool.output_folder([])
    try:
        assert out.is_dir() and not any(out.iterdir())
        assert REPO / "docs" not in out.resolve().parents
    finally:
        out.rmdir()


def test_out_and_docs(tmp_path):
    tool = _tool()
    assert tool.output_folder(["--out", str(tmp_path / "x")]) == (tmp_path / "x").resolve()
    assert tool.output_folder(["--docs"]) == REPO / "docs" / "screenshots"


def test_the_desktop_it_runs_keeps_every_rio_folder_in_its_own(tmp_path, monkeypatch):
    """A run once left ``~/.cache/rio/acp-registry.json.failed`` in the real home: the cache
    folder was the user's. Every Rio folder of the tool's desktop is under its own base."""
    for key in ("RIO_RUNTIME_DIR", "RIO_STATE_DIR", "RIO_CONFIG_DIR", "RIO_CACHE_DIR"):
        monkeypatch.delenv(key, raising=False)
    desk = _tool().Desktop(tmp_path / "proj", tmp_path, ":99", tmp_path / "out")
    for key in ("RIO_STATE_DIR", "RIO_CONFIG_DIR", "RIO_CACHE_DIR"):
        assert Path(desk.env[key]).is_relative_to(tmp_path), key
    assert not Path(desk.env["RIO_RUNTIME_DIR"]).is_relative_to(Path.home())
