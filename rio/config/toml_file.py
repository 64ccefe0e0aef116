"""``config.toml`` as each of its readers takes it: the text, then the TOML.

Four parts of Rio read their own sections of the one file (``[agent]`` and ``[providers]``:
rio/agent/config.py; ``[agents.NAME]``: rio/acp/discovery.py; ``[sandbox]``:
rio/acp/sandbox.py; ``[remote]``: rio/config/remote_settings.py). They share how the file is read — no
file is all defaults; a file that cannot be read or is not TOML is ``config.invalid`` naming
the file (and the line), never a silent default — so the user gets the same words whichever
section made Rio read it.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from rio.protocol.errors import ConfigError


def read_config_text(path: Path) -> str:
    """The file's text; "" when there is no file. Unreadable (permissions, not UTF-8):
    ``config.invalid``."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError("invalid", f"{path} cannot be read ({exc}).",
                          "Check the file's permissions and encoding (UTF-8).",
                          path=str(path)) from None


def parse_toml(text: str, path: Path | str | None = None) -> dict[str, Any]:
    """The TOML document; a syntax error is ``config.invalid`` naming the file and line."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"line (\d+)", str(exc))
        line = int(found.group(1)) if found else None
        where = f"{path or 'config.toml'}" + (f", line {line}" if line else "")
        raise ConfigError("invalid", f"{where}: {exc}.", f"Fix the TOML at {where}.",
                          path=str(path) if path else None, line=line) from None


__all__ = ["parse_toml", "read_config_text"]
