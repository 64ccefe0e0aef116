"""Where a running Rio instance lives: its name, runtime folder, sockets and state folder.

An instance is one supervisor (``rio serve`` or ``rio``) on one project root. Its sockets live
in a 0700 runtime folder (``$XDG_RUNTIME_DIR/rio/<name>/``), which is what protects the ipc://
bus: only the user can reach it. Its journals and conversations live in the state folder, keyed
by the project root, so starting Rio again on the same project finds them.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

import platformdirs

from rio.files.digest import name_hash
from rio.protocol.errors import BusError, ConfigError

#: Linux ``sun_path`` is 108 bytes including the NUL: 107 usable (unix(7)).
IPC_PATH_LIMIT = 107
_NAME_OK = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,47}$")


def check_name(name: str) -> str:
    if not _NAME_OK.match(name):
        raise ConfigError("invalid_instance_name",
                          f"Instance name {name!r} is not allowed.",
                          "Use letters, digits, '.', '_' or '-' (at most 48 characters).")
    return name


def default_name(root: Path) -> str:
    """``<folder>-<hash>``: readable, and distinct for two folders with the same name."""
    digest = name_hash(str(root), 6)
    base = re.sub(r"[^A-Za-z0-9_.-]", "_", root.name or "root")[:32].lstrip("._-") or "root"
    return f"{base}-{digest}"


def runtime_base() -> Path:
    override = os.environ.get("RIO_RUNTIME_DIR")
    if override:
        return Path(override)
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isdir(xdg):
        return Path(xdg) / "rio"
    return Path(tempfile.gettempdir()) / f"rio-{os.getuid()}"


def state_base() -> Path:
    override = os.environ.get("RIO_STATE_DIR")
    return Path(override) if override else Path(platformdirs.user_state_dir("rio"))


def config_base() -> Path:
    override = os.environ.get("RIO_CONFIG_DIR")
    return Path(override) if override else Path(platformdirs.user_config_dir("rio"))


def private_dir(path: Path) -> Path:
    """Create ``path`` (and parents) as 0700 and refuse one that others can reach."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = path.stat()
    if info.st_uid != os.getuid():
        raise BusError("unsafe_runtime_dir", f"{path} belongs to another user.",
                       "Set RIO_RUNTIME_DIR to a folder of your own.")
    if stat.S_IMODE(info.st_mode) & 0o077:
        os.chmod(path, 0o700)
    return path


@dataclass(frozen=True)
class InstanceInfo:
    name: str
    root: str
    pid: int
    requests: str          # endpoint of the hub's ROUTER
    events: str            # endpoint of the hub's XPUB
    started: float
    server_key: str | None = None   # CURVE public key when listening on tcp

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)


@dataclass(frozen=True)
class InstancePaths:
    name: str
    runtime: Path

    @classmethod
    def for_name(cls, name: str) -> "InstancePaths":
        return cls(check_name(name), runtime_base() / name)

    @property
    def info_file(self) -> Path:
        return self.runtime / "instance.json"

    @property
    def requests_endpoint(self) -> str:
        return self._ipc("bus.sock")

    @property
    def events_endpoint(self) -> str:
        return self._ipc("events.sock")

    def _ipc(self, leaf: str) -> str:
        path = self.runtime / leaf
        if len(str(path).encode()) > IPC_PATH_LIMIT:
            raise BusError("path_too_long",
                           f"The socket path {path} is longer than the {IPC_PATH_LIMIT}-byte "
                           "limit of ipc:// sockets.",
                           "Set RIO_RUNTIME_DIR to a shorter folder, e.g. /tmp/rio.")
        return f"ipc://{path}"

    def create(self) -> None:
        private_dir(self.runtime.parent)
        private_dir(self.runtime)

    def write_info(self, info: InstanceInfo) -> None:
        tmp = self.runtime / ".instance.json.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(info.to_json())
        os.replace(tmp, self.info_file)

    def read_info(self) -> InstanceInfo | None:
        try:
            data = json.loads(self.info_file.read_text())
            return InstanceInfo(**data)
        except (OSError, ValueError, TypeError):
            return None

    def remove(self) -> None:
        for leaf in ("instance.json", "bus.sock", "events.sock", ".instance.json.tmp"):
            try:
                (self.runtime / leaf).unlink()
            except FileNotFoundError:
                pass
        try:
            self.runtime.rmdir()
        except OSError:
            pass


def pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie counts as dead: it answers kill(0) but will never serve.
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True


def running_instances() -> list[InstanceInfo]:
    base = runtime_base()
    found: list[InstanceInfo] = []
    if not base.is_dir():
        return found
    for child in sorted(base.iterdir()):
        if not _NAME_OK.match(child.name):
            continue
        info = InstancePaths(child.name, child).read_info()
        if info is not None and pid_alive(info.pid):
            found.append(info)
    return found


def find_instance(name: str | None, cwd: Path | None = None, *,
                  elsewhere: bool = False) -> InstanceInfo:
    """The instance a client should talk to: the one named, else the one whose root holds
    ``cwd`` (the innermost). A folder no instance serves is refused (``bus.unreachable``,
    naming the instances that run elsewhere and ``--instance``): a command typed in the
    wrong folder must not act on another project's instance. ``elsewhere``: a command that
    only looks (``rio status``, ``rio events``) may then take the only instance running —
    the caller says which answered (:func:`serves_folder` tells it apart)."""
    if name:
        info = InstancePaths.for_name(name).read_info()
        if info is None or not pid_alive(info.pid):
            raise BusError("unreachable", f"No Rio instance named {name!r} is running.",
                           "Start it with `rio serve --instance NAME`, or see `rio status --all`.")
        return info
    live = running_instances()
    if not live:
        raise BusError("unreachable", "No Rio instance is running.",
                       "Start one with `rio serve` (headless) or `rio` (desktop).")
    cwd = (cwd or Path.cwd()).resolve()
    holding = [i for i in live if serves_folder(i, cwd)]
    if holding:
        return max(holding, key=lambda i: len(i.root))
    if elsewhere and len(live) == 1:
        return live[0]
    others = ", ".join(f"{i.name} (on {i.root})" for i in live[:5])
    more = f" and {len(live) - 5} more" if len(live) > 5 else ""
    if elsewhere:
        raise BusError("ambiguous_instance", f"No Rio instance runs on {cwd}, and several run "
                       f"elsewhere: {others}{more}.", "Pick one with --instance NAME.")
    raise BusError("unreachable", f"No Rio instance runs on {cwd} (elsewhere: {others}{more}).",
                   "Run the command in that project's folder, or name the instance with "
                   "--instance NAME (`rio status --all` lists them); `rio serve` starts one "
                   "here")


def serves_folder(info: InstanceInfo, folder: Path) -> bool:
    """Does ``info``'s project hold ``folder`` (its root, or a folder inside it)?"""
    root = Path(info.root)
    return folder == root or root in folder.parents


def journal_dir(root: Path) -> Path:
    digest = name_hash(str(root), 16)
    return state_base() / "projects" / digest / "journal"


def project_state_dir(root: Path) -> Path:
    digest = name_hash(str(root), 16)
    return state_base() / "projects" / digest
