"""[editor] in config.toml: the undo bound, and that a bad value never stops the core."""

from __future__ import annotations

import logging

import pytest

from rio.config.editor import MIB, undo_text_limit
from rio.text.buffer_state import BufferFactory
from rio.text.document import UNDO_TEXT_LIMIT


@pytest.mark.parametrize("text, expected", [
    ("", UNDO_TEXT_LIMIT),
    ("[editor]\nundo_mb = 8\n", 8 * MIB),
    ("[editor]\nundo_mb = 0.5\n", MIB // 2),
    ("[agent]\nmode = 'ask'\n", UNDO_TEXT_LIMIT),
])
def test_undo_mb_sets_the_bound(tmp_path, text, expected):
    (tmp_path / "config.toml").write_text(text)
    assert undo_text_limit(tmp_path) == expected


@pytest.mark.parametrize("text", ["[editor]\nundo_mb = -1\n", "[editor]\nundo_mb = 'big'\n",
                                  "[editor]\nundo_mb = true\n", "[editor\nbroken"])
def test_a_bad_value_is_logged_and_the_default_used(tmp_path, caplog, text):
    (tmp_path / "config.toml").write_text(text)
    with caplog.at_level(logging.WARNING, logger="rio.config.editor"):
        assert undo_text_limit(tmp_path) == UNDO_TEXT_LIMIT
    assert "config.toml" in caplog.text


def test_no_config_file_is_the_default(tmp_path):
    assert undo_text_limit(tmp_path / "missing") == UNDO_TEXT_LIMIT


def test_buffers_get_the_configured_bound(tmp_path, monkeypatch):
    (tmp_path / "config.toml").write_text("[editor]\nundo_mb = 1\n")
    monkeypatch.setenv("RIO_CONFIG_DIR", str(tmp_path))
    (tmp_path / "proj").mkdir()
    factory = BufferFactory(tmp_path / "proj", tmp_path / "journal")
    buf = factory.new("")
    for _ in range(3):
        buf.handle("buffer.replace", {"start": 0, "end": 0, "text": "x" * 600_000,
                                      "origin": "test", "base_version": None, "label": None})
    assert buf.document.undo_chars <= MIB
