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
