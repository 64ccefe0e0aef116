"""The editor's settings: ``[editor]`` in the user's config.toml::

    [editor]
    undo_mb = 64          # undo history per document, in MiB of text (oldest steps forgotten first)
    max_buffers = 10000   # open buffers at most: buffer.new / buffer.open past it are refused

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


#: Open buffers at most, by default: the number the core is tested to stay answering with
#: (ADR-0040). Recovery at start brings back every journal even past it (nothing unsaved is
#: left behind); only new ones are refused.
MAX_BUFFERS = 10_000


def _editor_table(config_directory: Path | None,
                  env: Mapping[str, str] | None) -> tuple[Path, dict[str, object] | None]:
    path = (config_directory or config_dir(env)) / CONFIG_FILE
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return path, None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        log.warning("%s: %s; the editor's settings keep their defaults", path, exc)
        return path, None
    editor = data.get("editor")
    return path, editor if isinstance(editor, dict) else None


def max_buffers(config_directory: Path | None = None,
                env: Mapping[str, str] | None = None) -> int:
    """How many buffers may be open at once (config ``max_buffers``): ``buffer.new`` and
    ``buffer.open`` of a new file past it are ``buffer.too_many_buffers``."""
    path, editor = _editor_table(config_directory, env)
    value = editor.get("max_buffers") if editor is not None else None
    if value is None:
        return MAX_BUFFERS
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        log.warning("%s: [editor] max_buffers must be a positive whole number, not %r; "
                    "using %d", path, value, MAX_BUFFERS)
        return MAX_BUFFERS
    return value


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
