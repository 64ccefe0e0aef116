"""supervisor.toml: which actors live in which process, and the restart and shutdown policy.

Rio ships ``rio/config/default_supervisor.toml`` (a copy sits at the repo root as ``supervisor.toml``;
a test keeps them identical). A user copy in the config folder
(``platformdirs.user_config_dir("rio")/supervisor.toml``) overrides it key by key: tables merge,
values (lists included) replace. A placement (``[placement.<name>.<process>]``) is an alternative
layout, such as the fault harness's ``isolated``: its processes take their actors out of the
base processes, and a base process left with no actors is dropped.

Validation is all-or-nothing: any problem (TOML syntax, unknown key, wrong type, bad choice, an
actor in two processes or in none, an unknown actor) raises ``ConfigError("config.invalid")``
naming the file, the line and the reason; nothing is half-applied. tomllib reports the line of a
syntax error; for everything else the key's line is found by scanning the text.

The restart rule is pure: :class:`RestartBudget` is a sliding window with exponential backoff,
tested without processes (ADR 0008).
"""

from __future__ import annotations

import re
import tomllib
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Literal, Sequence

import platformdirs

from rio.protocol.errors import ConfigError

RESTART_POLICIES = ("always", "on-failure", "never")
#: one process from the start; one per conversation, on demand; one process, on demand
PER_CHOICES = ("instance", "conversation", "demand")
WHEN_CHOICES = ("always", "desktop", "headless")  # desktop: only when the Tk UI runs

Restart = Literal["always", "on-failure", "never"]

# Numeric settings valid in [defaults] and in any process: key -> (kind, smallest value).
_INT, _NUMBER = "int", "number"
_SETTINGS: dict[str, tuple[str, float]] = {
    "max_restarts": (_INT, 0),
    "restart_window_s": (_NUMBER, 0.001),
    "backoff_initial_ms": (_INT, 0),
    "backoff_max_ms": (_INT, 0),
    "stdin_grace_ms": (_INT, 0),
    "term_grace_ms": (_INT, 0),
    "kill_grace_ms": (_INT, 0),
    "ping_interval_ms": (_INT, 1),
    "ping_misses": (_INT, 1),
    "max_live": (_INT, 1),
}
_CHOICES: dict[str, tuple[str, ...]] = {
    "restart": RESTART_POLICIES, "per": PER_CHOICES, "when": WHEN_CHOICES}
_DEFAULT_KEYS = frozenset(_SETTINGS) | {"restart", "spare"}
_PROCESS_KEYS = _DEFAULT_KEYS | {"actors", "per", "when", "zygote"}
_TOP_KEYS = ("defaults", "process", "placement")
_NAME_OK = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")

SHIPPED_NAME = "default_supervisor.toml"


def default_user_path() -> Path:
    """Where a user's copy lives: ``~/.config/rio/supervisor.toml`` on Linux."""
    return Path(platformdirs.user_config_dir("rio")) / "supervisor.toml"


def packaged_path() -> Path:
    """The shipped file inside the installed package."""
    return Path(str(resources.files("rio.config").joinpath(SHIPPED_NAME)))


# ------------------------------------------------------------------------------ records

@dataclass(frozen=True)
class ProcessSpec:
    """One process the supervisor runs. Times are seconds."""

    name: str
    actors: tuple[str, ...]
    restart: Restart
    max_restarts: int
    window_s: float
    backoff_initial_s: float
    backoff_max_s: float
    stdin_grace_s: float
    term_grace_s: float
    kill_grace_s: float
    ping_interval_s: float
    ping_misses: int
    per: str = "instance"
    when: str = "always"
    #: on-demand kinds (per = "conversation"): at most this many of its processes alive at once;
    #: system.spawn beyond it is refused (bus.spawn_limit), so no client can fork without end
    max_live: int = 16
    #: keep one pre-started host (``python -m actors.runtime.host --spare``, imports done) for this
    #: kind, so that a restart (or an on-demand start) assigns it instead of starting Python
    #: again (docs/adr/0026 d). Ignored for the window process, which is not a host.
    spare: bool = False
    #: start its processes as forks of one preloaded interpreter of the kind, started with the
    #: first of them (actors/runtime/zygote.py, docs/adr/0039): their pages stay shared. For hosts
    #: started on demand (agent sessions); ignored for the window.
    zygote: bool = False

    def runs_when(self, *, desktop: bool) -> bool:
        return self.when == "always" or (self.when == "desktop") == desktop

    def stop_graces(self) -> dict[str, float]:
        """Keyword arguments for ``actors.runtime.process_control.stop``."""
        return {"stdin_grace": self.stdin_grace_s, "term_grace": self.term_grace_s,
                "kill_grace": self.kill_grace_s}

    def budget(self) -> RestartBudget:
        return RestartBudget(self.restart, self.max_restarts, self.window_s,
                             self.backoff_initial_s, self.backoff_max_s)


@dataclass(frozen=True)
class SupervisorConfig:
    processes: tuple[ProcessSpec, ...]
    placement: str | None          # the placement applied, if any
    placements: tuple[str, ...]    # the placements the files offer
    sources: tuple[Path, ...]      # the files read, shipped first

    def process(self, name: str) -> ProcessSpec:
        for spec in self.processes:
            if spec.name == name:
                return spec
        raise KeyError(name)

    def process_for(self, actor: str) -> ProcessSpec:
        for spec in self.processes:
            if actor in spec.actors:
                return spec
        raise KeyError(actor)

    def to_start(self, *, desktop: bool) -> tuple[ProcessSpec, ...]:
        return tuple(p for p in self.processes if p.runs_when(desktop=desktop))


# ------------------------------------------------------------------------ restart budget

@dataclass(frozen=True)
class Decision:
    restart: bool
    delay_s: float
    reason: str


def backoff_delay(restarts_in_window: int, initial_s: float, max_s: float) -> float:
    """Doubling delay: initial, 2x, 4x … capped at ``max_s``. No jitter: one supervisor on one
    machine has no herd of clients to spread out, and a fixed delay is testable."""
    if initial_s <= 0:
        return 0.0
    delay = initial_s
    for _ in range(restarts_in_window):
        if delay >= max_s:
            break
        delay *= 2
    return min(delay, max_s)


class RestartBudget:
    """The restart rule for one process: at most ``max_restarts`` in any ``window_s`` seconds.

    A small state holder (the times of recent restarts); the caller passes the clock, so it is
    tested without processes or sleeping.
    """

    def __init__(self, policy: Restart, max_restarts: int, window_s: float,
                 backoff_initial_s: float, backoff_max_s: float) -> None:
        self.policy = policy
        self.max_restarts = max_restarts
        self.window_s = window_s
        self.backoff_initial_s = backoff_initial_s
        self.backoff_max_s = backoff_max_s
        self._restarts: deque[float] = deque()

    def restarts_in_window(self, now: float) -> int:
        while self._restarts and self._restarts[0] <= now - self.window_s:
            self._restarts.popleft()
        return len(self._restarts)

    def record_exit(self, now: float, *, failed: bool = True) -> Decision:
        """The process ended at ``now`` (monotonic seconds); restart it, and after how long?"""
        if self.policy == "never":
            return Decision(False, 0.0, "restart policy is never")
        if self.policy == "on-failure" and not failed:
            return Decision(False, 0.0, "exited cleanly and the restart policy is on-failure")
        recent = self.restarts_in_window(now)
        if recent >= self.max_restarts:
            return Decision(False, 0.0, f"gave up after {self.max_restarts} restarts in "
                                        f"{self.window_s:g} s")
        delay = backoff_delay(recent, self.backoff_initial_s, self.backoff_max_s)
        self._restarts.append(now)
        return Decision(True, delay, f"restart {recent + 1} of {self.max_restarts} in "
                                     f"{self.window_s:g} s, after {delay:g} s")

    def reset(self) -> None:
        """Forget past restarts (the user restarted the process by hand)."""
        self._restarts.clear()


# ---------------------------------------------------------------------------- loading

@dataclass(frozen=True)
class _Source:
    path: Path
    text: str
    doc: dict[str, Any]
    shipped: bool

    def fail(self, key_path: tuple[str, ...], reason: str, line: int | None = None) -> ConfigError:
        line = line if line is not None else find_key_line(self.text, key_path)
        message = f"{self.path}, line {line}: {reason}"
        if key_path:
            message += f" (at {'.'.join(key_path)})"
        if self.shipped:
            next_ = f"Fix {self.path.name} at line {line} (it is the file shipped with Rio: " \
                    "reinstall Rio to restore it)"
        else:
            next_ = f"Fix supervisor.toml at line {line} (or delete your copy to use the defaults)"
        return ConfigError("config.invalid", message, next_, file=str(self.path), line=line)


_TOML_LINE = re.compile(r"at line (\d+)")


def _read(path: Path, *, shipped: bool) -> _Source:
    try:
        text = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _Source(path, "", {}, shipped).fail((), f"cannot read the file: {exc}", 1) from exc
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = _TOML_LINE.search(str(exc))
        line = int(found.group(1)) if found else 1
        reason = _TOML_LINE.sub("", str(exc)).replace("(, column", "(column").strip()
        raise _Source(path, text, {}, shipped).fail((), f"TOML syntax: {reason}", line) from exc
    return _Source(path, text, doc, shipped)


def _key_parts(raw: str) -> list[str]:
    """``a."b.c". d`` -> [a, b.c, d]: a TOML key split on dots outside quotes."""
    parts, current, quote = [], "", ""
    for ch in raw:
        if quote:
            if ch == quote:
                quote = ""
            else:
                current += ch
        elif ch in "\"'":
            quote = ch
        elif ch == ".":
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    parts.append(current.strip())
    return parts


_HEADER = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$")
_ASSIGN = re.compile(r"^\s*([A-Za-z0-9_\-.\"' ]+?)\s*=")


def find_key_line(text: str, key_path: tuple[str, ...]) -> int:
    """The 1-based line where ``key_path`` is defined (a table header or a key); the line of
    its longest defined prefix when the key itself is absent; 1 when nothing matches."""
    best_len, best_line = 0, 1
    table: list[str] = []
    want = list(key_path)
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        if header:
            table = _key_parts(header.group(1))
            defined = table
        else:
            assign = _ASSIGN.match(line)
            if not assign:
                continue
            defined = table + _key_parts(assign.group(1))
        common = 0
        for a, b in zip(defined, want):
            if a != b:
                break
            common += 1
        if common == len(want):  # the key itself, or the first table inside it
            return number
        # Otherwise only a key that is itself a prefix of what we want counts (not a sibling).
        if common == len(defined) and common > best_len:
            best_len, best_line = common, number
    return best_line


def _check_value(src: _Source, path: tuple[str, ...], key: str, value: Any) -> None:
    if key in _CHOICES:
        if value not in _CHOICES[key]:
            raise src.fail(path, f"{key} must be one of {', '.join(_CHOICES[key])}, "
                                 f"not {value!r}")
    elif key in _SETTINGS:
        kind, least = _SETTINGS[key]
        ok_type = isinstance(value, int) if kind == _INT else isinstance(value, (int, float))
        if isinstance(value, bool) or not ok_type:
            wanted = "a whole number" if kind == _INT else "a number"
            raise src.fail(path, f"{key} must be {wanted}, not {value!r}")
        if value < least:
            raise src.fail(path, f"{key} must be at least {least:g}, not {value!r}")
    elif key in ("spare", "zygote"):
        if not isinstance(value, bool):
            raise src.fail(path, f"{key} must be true or false, not {value!r}")
    elif key == "actors":
        if not isinstance(value, list) or not value or \
                not all(isinstance(a, str) for a in value):
            raise src.fail(path, "actors must be a non-empty list of actor names")
        if len(set(value)) != len(value):
            raise src.fail(path, "an actor is listed twice")


def _check_table(src: _Source, path: tuple[str, ...], table: Any, allowed: frozenset[str]) -> None:
    if not isinstance(table, dict):
        raise src.fail(path, "must be a table")
    for key, value in table.items():
        if key not in allowed:
            raise src.fail(path + (key,), f"unknown key {key!r} (known: "
                                          f"{', '.join(sorted(allowed))})")
        _check_value(src, path + (key,), key, value)


def _check_processes(src: _Source, path: tuple[str, ...], table: Any) -> None:
    if not isinstance(table, dict):
        raise src.fail(path, "must be a table of processes")
    for name, spec in table.items():
        if not _NAME_OK.match(name):
            raise src.fail(path + (name,), f"bad process name {name!r} (use a-z, 0-9, _ or -)")
        _check_table(src, path + (name,), spec, frozenset(_PROCESS_KEYS))


def _check_document(src: _Source) -> None:
    """Keys, types and choices of one file on its own."""
    for key in src.doc:
        if key not in _TOP_KEYS:
            raise src.fail((key,), f"unknown table {key!r} (known: {', '.join(_TOP_KEYS)})")
    if "defaults" in src.doc:
        _check_table(src, ("defaults",), src.doc["defaults"], _DEFAULT_KEYS)
    if "process" in src.doc:
        _check_processes(src, ("process",), src.doc["process"])
    placements = src.doc.get("placement", {})
    if not isinstance(placements, dict):
        raise src.fail(("placement",), "must be a table of placements")
    for name, processes in placements.items():
        _check_processes(src, ("placement", name), processes)


def _merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _has(doc: Mapping[str, Any], path: tuple[str, ...]) -> bool:
    node: Any = doc
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return False
        node = node[part]
    return True


def _blame(sources: list[_Source], *paths: tuple[str, ...]) -> tuple[_Source, tuple[str, ...]]:
    """The last file (the user copy before the shipped one) that set any of ``paths``, and
    which: a conflict between two keys is blamed on the file the user can edit."""
    for src in reversed(sources):
        for path in paths:
            if _has(src.doc, path):
                return src, path
    return sources[-1], paths[0]


def _setting_key(path: tuple[str, ...], table: Mapping[str, Any], key: str) -> tuple[str, ...]:
    """Where a process's value of ``key`` comes from: its own table or [defaults]."""
    return path + (key,) if key in table else ("defaults", key)


def _last_actors_key(sources: list[_Source],
                     paths: list[tuple[str, ...]]) -> tuple[_Source, tuple[str, ...]]:
    """For an actor left homeless: the last file that set an actors list, and that key."""
    for src in reversed(sources):
        for path in paths:
            if _has(src.doc, path + ("actors",)):
                return src, path + ("actors",)
    return sources[-1], ("process",)


def _spec(name: str, table: Mapping[str, Any], defaults: Mapping[str, Any]) -> ProcessSpec:
    value = {**defaults, **table}

    def seconds(key: str) -> float:
        return float(value[key]) / 1000.0

    return ProcessSpec(
        name=name, actors=tuple(value["actors"]), restart=value["restart"],
        max_restarts=int(value["max_restarts"]), window_s=float(value["restart_window_s"]),
        backoff_initial_s=seconds("backoff_initial_ms"), backoff_max_s=seconds("backoff_max_ms"),
        stdin_grace_s=seconds("stdin_grace_ms"), term_grace_s=seconds("term_grace_ms"),
        kill_grace_s=seconds("kill_grace_ms"), ping_interval_s=seconds("ping_interval_ms"),
        ping_misses=int(value["ping_misses"]), per=value.get("per", "instance"),
        when=value.get("when", "always"), max_live=int(value["max_live"]),
        spare=bool(value["spare"]), zygote=bool(value.get("zygote", False)))


_BUILTIN_DEFAULTS: dict[str, Any] = {  # what a file without [defaults] gets
    "restart": "on-failure", "max_restarts": 5, "restart_window_s": 60,
    "backoff_initial_ms": 100, "backoff_max_ms": 5000, "stdin_grace_ms": 1000,
    "term_grace_ms": 1000, "kill_grace_ms": 1000, "ping_interval_ms": 1000, "ping_misses": 3,
    "max_live": 16, "spare": False,
}


def _placed_actors(doc: Mapping[str, Any]) -> tuple[str, ...]:
    """The actors a file places in its processes, in order (the list when no registry is
    given)."""
    names: list[str] = []
    for table in doc.get("process", {}).values():
        for actor in table.get("actors", ()) if isinstance(table, dict) else ():
            if isinstance(actor, str) and actor not in names:
                names.append(actor)
    return tuple(names)


def load_config(shipped_path: Path | str | None = None, user_path: Path | str | None = None,
                placement: str | None = None, *, actors: Sequence[str] | None = None,
                on_demand: Sequence[str] = ()) -> SupervisorConfig:
    """Read the shipped file (default: the packaged one), apply the user copy if it exists
    (see :func:`default_user_path`), then the named placement. Raises ConfigError; never
    returns a half-valid config.

    ``actors`` is the list of actors this build has (the supervisor passes the registry,
    ``actors.runtime.actor_registry.known_actors()``): a name outside it is a mistake in the file, and
    every one of them but the ``on_demand`` ones needs a process. Without it, the actors the
    shipped file places are the list."""
    shipped = Path(shipped_path) if shipped_path is not None else packaged_path()
    sources = [_read(shipped, shipped=True)]
    if user_path is not None and Path(user_path).is_file():
        sources.append(_read(Path(user_path), shipped=False))
    known = tuple(actors) if actors is not None else _placed_actors(sources[0].doc)
    for src in sources:
        _check_document(src)
    doc: dict[str, Any] = {}
    for src in sources:
        doc = _merge(doc, src.doc)
    defaults = {**_BUILTIN_DEFAULTS, **doc.get("defaults", {})}
    placements = tuple(doc.get("placement", {}))

    tables: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
        name: (("process", name), table) for name, table in doc.get("process", {}).items()}
    if placement is not None:
        if placement not in placements:
            raise ConfigError(
                "config.unknown_placement",
                f"No placement {placement!r} in {', '.join(str(s.path) for s in sources)}.",
                f"Use one of: {', '.join(placements) or '(none defined)'}.")
        placed = doc["placement"][placement]
        moved = {actor for table in placed.values() for actor in table.get("actors", ())}
        for name in list(tables):
            path, table = tables[name]
            left = [a for a in table.get("actors", ()) if a not in moved]
            if name in placed or not left:
                del tables[name]
            else:
                tables[name] = (path, {**table, "actors": left})
        for name, table in placed.items():
            tables[name] = (("placement", placement, name), table)

    specs: list[ProcessSpec] = []
    home: dict[str, tuple[str, tuple[str, ...]]] = {}
    for name, (path, table) in tables.items():
        if "actors" not in table:
            src, key = _blame(sources, path)
            raise src.fail(key, f"process {name!r} has no actors list")
        for actor in table["actors"]:
            if actor not in known:
                src, key = _blame(sources, path + ("actors",))
                raise src.fail(key, f"unknown actor {actor!r} (known: {', '.join(known)})")
            if actor in home:
                other, other_path = home[actor]
                src, key = _blame(sources, path + ("actors",), other_path + ("actors",))
                raise src.fail(key, f"actor {actor!r} is in two processes: {other!r} and "
                                    f"{name!r}")
            home[actor] = (name, path)
        spec = _spec(name, table, defaults)
        if spec.backoff_max_s < spec.backoff_initial_s:
            src, key = _blame(sources, _setting_key(path, table, "backoff_max_ms"),
                              _setting_key(path, table, "backoff_initial_ms"))
            raise src.fail(key, f"backoff_max_ms ({spec.backoff_max_s * 1000:g}) is below "
                                f"backoff_initial_ms ({spec.backoff_initial_s * 1000:g}) "
                                f"for process {name!r}")
        specs.append(spec)
    missing = [a for a in known if a not in home and a not in on_demand]
    if missing:
        src, key = _last_actors_key(sources, [path for path, _ in tables.values()])
        raise src.fail(key, f"no process hosts {', '.join(missing)}: every actor needs one")
    return SupervisorConfig(processes=tuple(specs), placement=placement, placements=placements,
                            sources=tuple(s.path for s in sources))
