"""The Run/Build model, display-free: what to start, with which environment, and how its output
is cut into events.

The core's :class:`~actors.core.runner_actor.RunnerActor` is the thin shell that spawns (through
``actors/runtime/process_control.py``) and reads pipes; everything that can be decided without a process
lives here and is tested without one:

* :func:`plan_run` turns ``run.start``'s ``command`` (a shell string the user typed, or an argv
  list) into a :class:`RunPlan`. A string runs as ``["/bin/sh", "-c", command]`` -- explicitly,
  because the user wrote shell -- and a list runs as is, never through a shell.
* :func:`scrub_environment` drops credentials before a user command sees the environment: the
  editor's own model keys must not leak into a build script (or its logs).
* :class:`OutputBatcher` turns raw pipe chunks into ``run.output`` payloads: decoded
  incrementally (a UTF-8 character split between two reads stays whole), batched (one event per
  ~50 ms or 32 K characters, not one per ``write()``), in stream order, and capped per run so a
  runaway ``yes`` cannot flood the bus; the cap is announced once, with the count dropped.
* :class:`ProjectCommands` is the per-project Run/Build setting, kept in
  ``project_state_dir(root)/project.json`` (the user's machine state, not a file in their repo).
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from rio.files.atomic import write_json
from rio.protocol.errors import ConfigError, ProtocolError

SHELL = "/bin/sh"
Stream = Literal["stdout", "stderr"]
ExitHow = Literal["exited", "stopped", "timeout", "failed"]

#: Longest a run may last when the caller gives no timeout: none (a dev server runs for hours).
DEFAULT_TIMEOUT_S: float | None = None
MAX_TIMEOUT_S = 7 * 24 * 3600.0
#: Characters of output published per run before the rest is counted and dropped.
DEFAULT_OUTPUT_CAP = 4_000_000
#: One run.output event holds at most this many characters; a batch is also sent once it has
#: waited FLUSH_INTERVAL_S, so output appears promptly without one event per write().
MAX_BATCH_CHARS = 32_768
FLUSH_INTERVAL_S = 0.05

# Credentials by name. Case-insensitive; a name is dropped when it matches any of these.
_SECRET_NAME = re.compile(r"(^|_)API_?KEY$|(^|_)TOKEN$|SECRET|PASSWORD|PASSWD|(^|_)CREDENTIALS?$",
                          re.IGNORECASE)
# Rio's own process-control variables: process_control sets fresh ones for the run.
_RIO_INTERNAL = ("RIO_SPAWN_COOKIE", "RIO_SPAWN_LINEAGE", "RIO_PARENT_PID", "RIO_LIFELINE_FD")


def is_secret_name(name: str) -> bool:
    """True for ``*_API_KEY``, ``*_TOKEN``, ``*SECRET*`` (and passwords, credentials)."""
    return bool(_SECRET_NAME.search(name))


def scrub_environment(env: Mapping[str, str]) -> dict[str, str]:
    """A copy of ``env`` without credentials and without Rio's process-control variables."""
    return {k: v for k, v in env.items() if not is_secret_name(k) and k not in _RIO_INTERNAL}


# --------------------------------------------------------------------------------- the plan

@dataclass(frozen=True)
class RunPlan:
    """What the runner will start: ``argv`` (never a string), in ``cwd``, for ``timeout_s``
    seconds at most (None: no limit). ``command`` is what the user asked for, for display."""

    argv: tuple[str, ...]
    cwd: str
    timeout_s: float | None
    command: str
    shell: bool


def describe_command(command: str | Sequence[str]) -> str:
    if isinstance(command, str):
        return command
    return " ".join(_quote(a) for a in command)


def _quote(arg: str) -> str:
    return arg if arg and re.fullmatch(r"[\w@%+=:,./-]+", arg) else "'" + arg.replace(
        "'", "'\"'\"'") + "'"


def plan_run(command: str | Sequence[str], cwd: str, timeout_s: float | None = None) -> RunPlan:
    """Check ``run.start``'s arguments. ``cwd`` must already be resolved inside the project
    (the actor resolves it with the workspace); bad commands raise ``protocol.bad_args``."""
    if isinstance(command, str):
        if not command.strip():
            raise ProtocolError("bad_args", "run.start: the command is empty.",
                                "Set a Run or Build command for the project.")
        if "\0" in command:
            raise ProtocolError("bad_args", "run.start: the command contains a NUL character.")
        argv: tuple[str, ...] = (SHELL, "-c", command)
        shell = True
    else:
        items = list(command)
        if not items or not all(isinstance(a, str) for a in items) or not items[0]:
            raise ProtocolError("bad_args", "run.start: an argv command must be a non-empty "
                                "list of strings.", "Pass a shell string or [program, args…].")
        if any("\0" in a for a in items):
            raise ProtocolError("bad_args", "run.start: an argument contains a NUL character.")
        argv = tuple(items)
        shell = False
    if timeout_s is not None and not (0 < timeout_s <= MAX_TIMEOUT_S):
        raise ProtocolError("bad_args", f"run.start: timeout_s must be > 0 and at most "
                            f"{MAX_TIMEOUT_S:g} seconds.")
    return RunPlan(argv, cwd, timeout_s, describe_command(command), shell)


# ------------------------------------------------------------------------------ run records

RunStateName = Literal["running", "stopping", "exited"]


@dataclass(frozen=True)
class RunRecord:
    """One run as ``run.list`` reports it."""

    run: str
    command: str
    argv: tuple[str, ...]
    cwd: str
    pid: int
    started_at: float
    state: RunStateName = "running"
    code: int | None = None
    how: ExitHow | None = None
    output_chars: int = 0
    dropped_chars: int = 0

    def finished(self, code: int | None, how: ExitHow, output_chars: int,
                 dropped_chars: int) -> "RunRecord":
        return replace(self, state="exited", code=code, how=how, output_chars=output_chars,
                       dropped_chars=dropped_chars)

    def to_wire(self) -> dict[str, Any]:
        return {"run": self.run, "command": self.command, "argv": list(self.argv),
                "cwd": self.cwd, "pid": self.pid, "started_at": self.started_at,
                "state": self.state, "code": self.code, "how": self.how,
                "output_chars": self.output_chars, "dropped_chars": self.dropped_chars}


def exit_code(returncode: int | None) -> int | None:
    """Shell convention for the user: a death by signal N is 128+N (Popen says -N)."""
    if returncode is None:
        return None
    return 128 - returncode if returncode < 0 else returncode


# --------------------------------------------------------------------------------- output

@dataclass(frozen=True)
class OutputChunk:
    """One ``run.output`` payload (without the run id)."""

    stream: Stream
    text: str


def cap_marker(dropped: int) -> str:
    return f"\n[… output capped: {dropped} more characters not shown …]\n"


@dataclass
class OutputBatcher:
    """Pipe bytes in, ``run.output`` chunks out; see the module docstring. Not thread-safe:
    one reader owns it. ``now`` is a monotonic clock reading passed in by the caller."""

    cap: int = DEFAULT_OUTPUT_CAP
    max_batch: int = MAX_BATCH_CHARS
    interval: float = FLUSH_INTERVAL_S
    published: int = 0
    dropped: int = 0
    _decoders: dict[Stream, Any] = field(default_factory=dict)
    _stream: Stream | None = None
    _parts: list[str] = field(default_factory=list)
    _size: int = 0
    _since: float | None = None
    _announced: bool = False

    def feed(self, stream: Stream, data: bytes, now: float) -> list[OutputChunk]:
        """Take bytes read from ``stream``; returns the chunks that are due now."""
        decoder = self._decoders.get(stream)
        if decoder is None:
            decoder = self._decoders[stream] = codecs.getincrementaldecoder("utf-8")("replace")
        return self._add(stream, decoder.decode(data), now)

    def _add(self, stream: Stream, text: str, now: float) -> list[OutputChunk]:
        out: list[OutputChunk] = []
        if not text:
            return self.due(now)
        room = self.cap - self.published - self._size
        if room <= 0:
            self.dropped += len(text)
            return self.due(now)
        if len(text) > room:
            self.dropped += len(text) - room
            text = text[:room]
        if self._stream is not None and stream != self._stream:
            out += self._flush()  # keep stdout/stderr interleaving in order
        self._stream = stream
        if self._since is None:
            self._since = now
        while text:
            take = text[:self.max_batch - self._size]
            text = text[len(take):]
            self._parts.append(take)
            self._size += len(take)
            if self._size >= self.max_batch:
                out += self._flush()
                self._stream = stream
                self._since = now
        return out + self.due(now)

    def due(self, now: float) -> list[OutputChunk]:
        """Chunks whose wait is over (call it on a timer between reads)."""
        if self._since is not None and now - self._since >= self.interval:
            return self._flush()
        return []

    def close(self) -> list[OutputChunk]:
        """Everything left, decoder tails included, and the cap notice if output was dropped."""
        out: list[OutputChunk] = []
        for stream, decoder in self._decoders.items():
            tail = decoder.decode(b"", final=True)
            if tail:
                out += self._add(stream, tail, self._since or 0.0)
        out += self._flush()
        if self.dropped and not self._announced:
            self._announced = True
            out.append(OutputChunk("stderr", cap_marker(self.dropped)))
        return out

    def _flush(self) -> list[OutputChunk]:
        if not self._parts or self._stream is None:
            self._since = None
            return []
        chunk = OutputChunk(self._stream, "".join(self._parts))
        self.published += self._size
        self._parts = []
        self._size = 0
        self._since = None
        return [chunk]


_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def strip_ansi(text: str) -> str:
    """Output without terminal colour and cursor sequences (the pane shows plain text)."""
    return _ANSI.sub("", text)


# --------------------------------------------------------------------- project settings

PROJECT_FILE = "project.json"


@dataclass(frozen=True)
class ProjectCommands:
    """The project's Run and Build commands (shell strings, as the user typed them) and the
    folder they run in, relative to the project root."""

    run: str = ""
    build: str = ""
    cwd: str = "."

    def command(self, which: Literal["run", "build"]) -> str:
        return self.run if which == "run" else self.build

    def to_json(self) -> dict[str, str]:
        return {"run": self.run, "build": self.build, "cwd": self.cwd}


def load_project_commands(state_dir: Path) -> ProjectCommands:
    """Read ``state_dir/project.json``; a missing file means no commands yet. A damaged file is
    a ``config.invalid`` naming the file (the user can fix or delete it)."""
    path = state_dir / PROJECT_FILE
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ProjectCommands()
    except OSError as exc:
        raise ConfigError("invalid", f"Cannot read {path}: {exc.strerror}.",
                          "Check the file's permissions.", path=str(path)) from None
    try:
        data = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ConfigError("invalid", f"{path} line {exc.lineno}: {exc.msg}.",
                          "Fix the file or delete it and set the commands again.",
                          path=str(path)) from None
    if not isinstance(data, dict):
        raise ConfigError("invalid", f"{path}: expected a JSON object.",
                          "Fix the file or delete it and set the commands again.", path=str(path))
    values = {k: data.get(k, getattr(ProjectCommands(), k)) for k in ("run", "build", "cwd")}
    for key, value in values.items():
        if not isinstance(value, str):
            raise ConfigError("invalid", f"{path}: {key!r} must be a string.",
                              "Fix the file or delete it and set the commands again.",
                              path=str(path))
    return ProjectCommands(**values)


def save_project_commands(state_dir: Path, commands: ProjectCommands) -> Path:
    """Write atomically (temp file, fsync, replace) and keep other keys already in the file."""
    state_dir.mkdir(parents=True, exist_ok=True)
    path = state_dir / PROJECT_FILE
    try:
        existing = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(existing, dict):
            existing = {}
    except (OSError, json.JSONDecodeError):
        existing = {}
    existing.update(commands.to_json())
    write_json(path, existing)
    return path
