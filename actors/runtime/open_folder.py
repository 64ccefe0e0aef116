"""``system.open_folder``: File → Open Folder starts another Rio instance on a folder, asked of the
supervisor over the bus (docs/adr/0028-desktop-files-over-the-bus-and-remote-desktop.md).

The desktop never starts processes itself: it may be a window on a remote instance, and a
process it started would inherit its spawn cookie, so the new instance would be swept away
with this one's window. The supervisor starts ``rio FOLDER`` in a session of its own with an
environment that carries none of this instance's process-control variables (cookie,
lineage, lifeline, parent, instance name): the new instance is nobody's child in Rio's sense
and lives on when this one stops. The supervisor, as subreaper, only reaps it when it exits.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from actors.runtime import process_control
from rio.protocol.errors import BusError, PathError

#: What ties a process to this instance (process_control) or names the instance to a client.
TIES = (process_control.COOKIE_ENV, process_control.LINEAGE_ENV, process_control.LIFELINE_ENV,
        process_control.PARENT_ENV, "RIO_INSTANCE")


def instance_env(environ: Mapping[str, str], display: str | None) -> dict[str, str]:
    """The environment of a new, independent instance: this one's without the ties, on the
    asking desktop's display."""
    env = {k: v for k, v in environ.items() if k not in TIES}
    if display:
        env["DISPLAY"] = display
    return env


def open_folder(args: Mapping[str, Any], *, remote: bool,
                environ: Mapping[str, str] = os.environ) -> dict[str, Any]:
    """Start ``rio FOLDER`` for ``args["path"]`` (absolute, on this machine); its pid."""
    if remote:
        raise BusError("remote_not_allowed", "Open Folder starts a window on the server's "
                       "machine, not on a remote desktop's.",
                       "Run `rio FOLDER` on your own machine, or `rio --connect` to another "
                       "server.")
    folder = Path(str(args["path"])).expanduser()
    if not folder.is_absolute():
        raise PathError("invalid", f"{folder} is not an absolute path.",
                        "Give the folder's full path.", path=str(folder))
    if not folder.is_dir():
        raise PathError("not_a_directory", f"{folder} is not a folder.",
                        "Type the path of an existing folder.", path=str(folder))
    display = args.get("display") or environ.get("DISPLAY")
    if not display:
        raise BusError("no_display", "There is no display to open the new window on.",
                       "Run `rio FOLDER` from a desktop session.")
    # -P: started in the folder, whose own modules must not shadow Rio's (a msgpack.py)
    proc = subprocess.Popen([sys.executable, "-P", "-m", "rio.cli", str(folder.resolve())],
                            env=instance_env(environ, str(display)), cwd=str(folder),
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    return {"path": str(folder.resolve()), "pid": proc.pid}
