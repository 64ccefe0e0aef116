"""The editor's settings: ``[editor]`` in the user's config.toml.

Only one so far::

    [editor]
    undo_mb = 64      # undo history per document, in MiB of text (oldest steps forgotten first)

A bad value is logged and the default used: a typo in a setting must not keep the core (and
every unsaved buffer in it) from starting.
"""

from __future__ import annotations

import logging
import tomllib
from pathlib import Path
from typing import Mapping

from rio.agent.config import CONFIG_FILE, config_dir
from rio.text.document import UNDO_TEXT_LIMIT

log = logging.getLogger("rio.config.editor")

MIB = 1024 * 1024


def undo_text_limit(config_directory: Path | None = None,
                    env: Mapping[str, str] | None = None) -> int:
    """How much text one document's undo history may hold, in characters (config ``undo_mb``)."""
    path = (config_directory or config_dir(env)) / CONFIG_FILE
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return UNDO_TEXT_LIMIT
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        log.warning("%s: %s; undo history keeps the default %d MiB", path, exc,
                    UNDO_TEXT_LIMIT // MIB)
        return UNDO_TEXT_LIMIT
    editor = data.get("editor")
    value = editor.get("undo_mb") if isinstance(editor, dict) else None
    if value is None:
        return UNDO_TEXT_LIMIT
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        log.warning("%s: [editor] undo_mb must be a positive number of MiB, not %r; using %d",
                    path, value, UNDO_TEXT_LIMIT // MIB)
        return UNDO_TEXT_LIMIT
    return int(value * MIB)
