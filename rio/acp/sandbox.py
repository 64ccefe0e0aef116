"""Agents in a box: the sandbox an ACP agent, and everything it starts, runs in (ADR-0038).

An ACP agent runs as the user. Unboxed it can read Rio's runtime folder (the bus sockets,
``instance.json``), connect to the bus as a local owner, change the gate for every
conversation, read other conversations' MCP tokens, and start helpers that outlive Rio. Where
the machine allows, Rio starts it under **bubblewrap** (``bwrap``, a Debian package) instead:

* **its own PID namespace** (``--unshare-pid``, ``--die-with-parent``): when the agent ends —
  or bwrap is killed, or the session process dies — the kernel kills every process of the
  namespace, including a helper that cleared its environment, called ``setsid`` and
  double-forked (no spawn cookie is needed to find it);
* **its own view of the files**: the whole file system read-only (tools, the user's ``~/.gitconfig``
  …), the project read-write, the agent's own config and cache folders read-write
  (:data:`AGENT_FOLDERS`, ``~/.npm``, ``[sandbox] writable``), a private ``/tmp``, an empty
  ``$XDG_RUNTIME_DIR`` (no bus of Rio's, no D-Bus, no systemd user manager to start a process
  outside), and Rio's own folders — runtime, state, configuration, cache: bus endpoints,
  ``instance.json``, tokens, keys, journals — hidden under empty tmpfs mounts;
* **no way back out**: no new user namespace inside (``--disable-userns``), no capabilities
  (``--cap-drop ALL``, which matters when Rio runs as root), and where the kernel has Landlock
  ABI 6 or later, abstract unix sockets and signals scoped to the box (an X11 or D-Bus
  abstract socket outside is refused: actors/runtime/landlock.py applies it before bwrap starts);
* **the network as it is**: agents call their model services, and Rio's MCP endpoint is HTTP on
  127.0.0.1 (its bearer token comes in ``session/new``, so no file is needed).

Where bwrap is missing or cannot create its namespaces (user namespaces off, a container's
seccomp profile), :func:`probe` says why in words the user can act on; the agent then runs as
before and the session says so once (``agent.note`` ``no_sandbox``), as ``rio agents`` does.
``[sandbox] mode = "required"`` refuses to start an agent without one instead; ``"off"`` (or
``RIO_AGENT_SANDBOX=off``, what the test suite sets for tests that are not about the box)
never uses one.

This module is the plan — which folders, which flags — and the probe; it starts nothing
long-running (actors/agent/acp_process.py spawns the wrapped argv).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rio.config.toml_file import parse_toml, read_config_text
from rio.protocol.errors import AgentError, ConfigError

Mode = Literal["auto", "off", "required"]
MODES: tuple[Mode, ...] = ("auto", "off", "required")
#: Overrides ``[sandbox] mode`` for one run (a user's shell, the test suite).
MODE_ENV = "RIO_AGENT_SANDBOX"
#: How long the probe's trial sandbox may take.
PROBE_TIMEOUT_S = 5.0

#: The isolation every box gets (bwrap 0.8's names). ``--unshare-user --disable-userns`` is
#: left out by a bwrap too old for ``--disable-userns`` (before 0.8): see :func:`probe`.
CORE_FLAGS: tuple[str, ...] = ("--unshare-pid", "--unshare-ipc", "--die-with-parent",
                               "--cap-drop", "ALL")
USERNS_FLAGS: tuple[str, ...] = ("--unshare-user", "--disable-userns")

#: Each known agent's own folders (read-write in its box), as (variable, default, below):
#: ``$variable/below`` when the variable is set, else ``default/below``. Observed with
#: claude-agent-acp 0.23.1, codex-acp 0.16.0 and opencode 1.18.33 in a fresh HOME; the others
#: from their documentation. A folder is created if it does not exist yet (the agent would).
AGENT_FOLDERS: Mapping[str, tuple[tuple[str | None, str, str], ...]] = {
    "claude": (("CLAUDE_CONFIG_DIR", "~/.claude", ""), (None, "~/.cache", "claude-cli-nodejs")),
    "codex": (("CODEX_HOME", "~/.codex", ""),),
    "opencode": (("XDG_CONFIG_HOME", "~/.config", "opencode"),
                 ("XDG_DATA_HOME", "~/.local/share", "opencode"),
                 ("XDG_CACHE_HOME", "~/.cache", "opencode"),
                 ("XDG_STATE_HOME", "~/.local/state", "opencode")),
    "gemini": ((None, "~/.gemini", ""),),
    "qwen": ((None, "~/.qwen", ""),),
    "grok": ((None, "~/.grok", ""),),
    "copilot": ((None, "~/.copilot", ""), ("XDG_CONFIG_HOME", "~/.config", "github-copilot")),
    "goose": (("XDG_CONFIG_HOME", "~/.config", "goose"),
              ("XDG_DATA_HOME", "~/.local/share", "goose"),
              ("XDG_STATE_HOME", "~/.local/state", "goose")),
    "cline": ((None, "~/.cline", ""),),
    "kimi": ((None, "~/.kimi", ""),),
}
#: Files of an agent's own in the home folder, read-write: (the variable that moves it into
#: the agent's folder, the file, what it is made with when missing — a bind needs a file, and
#: Claude Code takes an empty ``~/.claude.json`` for a corrupted one; ``{}`` it fills in).
AGENT_FILES: Mapping[str, tuple[tuple[str, str, str], ...]] = {
    "claude": (("CLAUDE_CONFIG_DIR", "~/.claude.json", "{}\n"),),
}
#: Every agent's: npm's cache and logs (node agents, ``npx``).
COMMON_FOLDERS: tuple[str, ...] = ("~/.npm",)


# --------------------------------------------------------------------------- configuration

@dataclass(frozen=True)
class SandboxConfig:
    """``[sandbox]`` in config.toml (every key optional)::

        [sandbox]
        mode = "auto"                 # "auto": where the machine allows; "off"; "required"
        writable = ["~/.cargo"]       # also read-write for every agent (created if missing)
        readable = ["/opt/sdk"]       # also visible read-only (e.g. a tool kept under /tmp)
        hidden = ["~/.ssh"]           # also hidden, like Rio's own folders
        bwrap = "/usr/bin/bwrap"      # where bubblewrap is, when not on PATH
    """

    mode: Mode = "auto"
    writable: tuple[str, ...] = ()
    readable: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    bwrap: str = "bwrap"
    #: where the mode came from: "default", "config", or "env:RIO_AGENT_SANDBOX"
    source: str = "default"


_KEYS: dict[str, type] = {"mode": str, "writable": list, "readable": list, "hidden": list,
                          "bwrap": str}


def parse_config(text: str, path: Path | None = None,
                 env: Mapping[str, str] | None = None) -> SandboxConfig:
    """``[sandbox]`` of config.toml's text; ``RIO_AGENT_SANDBOX`` in ``env`` overrides its
    mode. A typo is an error naming the key, never a silent default (the box is a safety
    setting)."""
    where = str(path or "config.toml")
    table = parse_toml(text, path).get("sandbox", {})
    if not isinstance(table, dict):
        raise ConfigError("invalid", f"{where}: [sandbox] must be a table.",
                          f"Fix [sandbox] in {where}.")
    for key, value in table.items():
        expected = _KEYS.get(key)
        if expected is None:
            raise ConfigError("invalid", f"{where}: [sandbox] has unknown key {key!r} (known: "
                              f"{', '.join(sorted(_KEYS))}).", f"Fix [sandbox] in {where}.")
        paths_ok = isinstance(value, list) and all(isinstance(v, str) and v for v in value)
        if not isinstance(value, expected) or (expected is list and not paths_ok):
            what = "a list of paths" if expected is list else "a string"
            raise ConfigError("invalid", f"{where}: [sandbox] {key} must be {what}.",
                              f"Fix [sandbox] in {where}.")
    mode = table.get("mode", "auto")
    source = "config" if "mode" in table else "default"
    override = (env if env is not None else os.environ).get(MODE_ENV, "").strip()
    if override:
        mode, source, where = override, f"env:{MODE_ENV}", MODE_ENV
    if mode not in MODES:
        raise ConfigError("invalid", f"{where}: the sandbox mode must be one of "
                          f"{', '.join(MODES)}, not {mode!r}.",
                          f"Fix the sandbox mode in {where}.")
    return SandboxConfig(mode=mode, writable=tuple(table.get("writable", ())),
                         readable=tuple(table.get("readable", ())),
                         hidden=tuple(table.get("hidden", ())),
                         bwrap=table.get("bwrap", "bwrap"), source=source)


def load_config(config_directory: Path, env: Mapping[str, str] | None = None) -> SandboxConfig:
    """``[sandbox]`` from ``config_directory/config.toml`` (a missing file: the defaults)."""
    path = config_directory / "config.toml"
    return parse_config(read_config_text(path), path, env)


# ----------------------------------------------------------------------------------- probe

@dataclass(frozen=True)
class Availability:
    """Whether agents can be boxed here, and with what."""

    usable: bool
    tool: str = ""                     # "bubblewrap 0.8.0"
    path: str = ""                     # the bwrap that worked
    reason: str = ""                   # why not, in words the user can act on
    flags: tuple[str, ...] = ()        # the isolation flags this bwrap accepted
    #: the kernel's Landlock ABI (0: none); 6 and later scope abstract sockets and signals
    landlock: int = 0

    @property
    def scoped(self) -> bool:
        """Abstract unix sockets and signals are scoped to the box (Landlock ABI ≥ 6)."""
        return self.landlock >= 6

    def describe(self) -> str:
        """One line for ``rio agents`` and the logs."""
        if not self.usable:
            return (f"none — {self.reason} Agents run with your own access to everything "
                    "(docs/agent-chat.md, \"Agents in a box\").")
        extra = ("; abstract sockets and signals scoped (Landlock)" if self.scoped else
                 "; no Landlock scoping on this kernel (abstract sockets reachable)")
        return (f"{self.tool} — each agent in a box of its own: the project read-write, "
                f"Rio's folders hidden, its own process namespace{extra}")


_probed: dict[str, Availability] = {}


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def probe(bwrap: str = "bwrap", *, env: Mapping[str, str] | None = None,
          landlock_abi: Callable[[], int] | None = None, fresh: bool = False,
          run: Callable[..., Any] = subprocess.run) -> Availability:
    """Can a box be made here? Runs ``bwrap --version`` and a trial box around ``true``
    (~5 ms), once per process and bwrap (``fresh`` asks again)."""
    env = os.environ if env is None else env
    key = f"{bwrap}\0{env.get('PATH', '')}"
    if not fresh and key in _probed:
        return _probed[key]
    found = shutil.which(bwrap, path=env.get("PATH")) if os.sep not in bwrap else (
        bwrap if os.access(bwrap, os.X_OK) else None)
    if found is None:
        result = Availability(False, reason=f"bubblewrap ({bwrap}) is not installed "
                              "(Debian/Ubuntu: apt install bubblewrap).")
    else:
        result = _trial(found, run)
        if result.usable and landlock_abi is not None:
            result = Availability(True, result.tool, result.path, flags=result.flags,
                                  landlock=landlock_abi())
    _probed[key] = result
    return result


def _trial(bwrap: str, run: Callable[..., Any]) -> Availability:
    try:
        version = run([bwrap, "--version"], capture_output=True, text=True,
                      timeout=PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        return Availability(False, reason=f"{bwrap} could not be run ({exc}).")
    tool = _first_line(version.stdout) or "bubblewrap"
    true = shutil.which("true") or "/bin/true"
    error = ""
    for flags in (USERNS_FLAGS + CORE_FLAGS, CORE_FLAGS):
        argv = [bwrap, *flags, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                "--", true]
        try:
            done = run(argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S,
                       stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError) as exc:
            return Availability(False, tool, reason=f"{bwrap} could not make a box ({exc}).")
        if done.returncode == 0:
            return Availability(True, tool, bwrap, flags=flags)
        error = _first_line(done.stderr) or f"exit code {done.returncode}"
        if "disable-userns" not in error and "Unknown option" not in error:
            break           # not about the flag: the older flags fail the same way
    why = error
    if "uid map" in error or "namespace" in error or "Operation not permitted" in error:
        why = (f"{error} — this machine does not let unprivileged programs make user "
               "namespaces (a container's seccomp profile, kernel.unprivileged_userns_clone=0, "
               "or AppArmor's restriction on Ubuntu 24.04)")
    return Availability(False, tool, reason=f"{tool} cannot make a box here: {why}.")


# ------------------------------------------------------------------------------------ plan

@dataclass(frozen=True)
class Plan:
    """The wrapped argv and what it shows the agent (for the protocol log and the tests)."""

    argv: tuple[str, ...]
    writable: tuple[str, ...] = ()
    readable: tuple[str, ...] = ()
    hidden: tuple[str, ...] = ()
    #: apply the Landlock scope (abstract sockets, signals) before bwrap starts
    scoped: bool = False
    tool: str = ""
    notes: tuple[str, ...] = field(default=())


def expand(path: str, env: Mapping[str, str]) -> Path:
    """``~`` and ``$VARS`` expanded against ``env`` (the agent's), made absolute."""
    home = env.get("HOME") or os.path.expanduser("~")
    text = home + path[1:] if path == "~" or path.startswith("~/") else path
    for name, value in sorted(env.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(f"${{{name}}}", value).replace(f"${name}", value)
    return Path(os.path.abspath(text))


def agent_folders(agent: str, env: Mapping[str, str]) -> list[Path]:
    """The folders ``agent`` (a discovery name) keeps its settings, sign-in and caches in."""
    out = [expand(p, env) for p in COMMON_FOLDERS]
    for var, default, below in AGENT_FOLDERS.get(agent, ()):
        base = env.get(var) if var else None
        folder = expand(base, env) if base else expand(default, env)
        out.append(folder / below if below else folder)
    return out


def agent_files(agent: str, env: Mapping[str, str]) -> list[Path]:
    """Files of ``agent``'s own directly in the home folder (not under one of its folders)."""
    return [expand(default, env) for unless, default, _ in AGENT_FILES.get(agent, ())
            if not env.get(unless)]


def _first_content(agent: str, file: Path, env: Mapping[str, str]) -> str:
    for _, default, content in AGENT_FILES.get(agent, ()):
        if expand(default, env) == file:
            return content
    return ""


def rio_folders(env: Mapping[str, str]) -> list[Path]:
    """Rio's own folders as the session process sees them: runtime (bus sockets,
    ``instance.json``, the MCP endpoint's port), state (journals, conversations, tokens,
    logs), configuration (keys, credentials), cache."""
    import tempfile

    import platformdirs
    out = []
    runtime = env.get("RIO_RUNTIME_DIR")
    xdg = env.get("XDG_RUNTIME_DIR")
    if runtime:
        out.append(Path(runtime))
    elif xdg and os.path.isdir(xdg):
        out.append(Path(xdg) / "rio")
    else:
        out.append(Path(tempfile.gettempdir()) / f"rio-{os.getuid()}")
    for var, default in (("RIO_STATE_DIR", platformdirs.user_state_dir("rio")),
                         ("RIO_CONFIG_DIR", platformdirs.user_config_dir("rio")),
                         ("RIO_CACHE_DIR", platformdirs.user_cache_dir("rio"))):
        out.append(Path(env.get(var) or default))
    return [Path(os.path.abspath(p)) for p in out]


def install_root(path: str) -> Path | None:
    """Where an agent's program is installed, to be kept visible: the folder holding the
    outermost ``node_modules`` of its real path (an npm prefix: the adapter's script, its
    bundled native binary and its dependencies), the prefix of a program in a ``bin`` folder
    (a Python's ``lib`` beside it), else the program's own folder."""
    if not os.path.isabs(path) or not os.path.exists(path):
        return None
    real = Path(os.path.realpath(path))
    parts = real.parts
    if "node_modules" in parts:
        return Path(*parts[:parts.index("node_modules")])
    if real.parent.name == "bin":       # a prefix: python's lib, a tool's share/ beside it
        return real.parent.parent
    return real.parent


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def plan(argv: Sequence[str], root: Path, env: Mapping[str, str], agent: str,
         config: SandboxConfig, available: Availability, *,
         rio_dirs: Iterable[Path] | None = None, extra_readable: Iterable[str] = (),
         make_dirs: bool = True) -> Plan:
    """bwrap's argv around ``argv`` for ``agent`` (a discovery name) working in ``root``.

    The order matters (bwrap applies its mounts in order): everything read-only, a fresh
    ``/dev``, ``/proc`` of the new namespace, private ``/tmp`` and ``/var/tmp``, an empty
    ``$XDG_RUNTIME_DIR``; then the home folder read-only again (it may be under ``/tmp``, as in
    the tests), the programs' install roots, the agent's own folders and files and the project
    read-write; Rio's folders hidden last, so that no bind above brings one back."""
    root = Path(os.path.abspath(root))
    out: list[str] = [available.path or config.bwrap, *available.flags,
                      "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    notes: list[str] = []
    masked: list[Path] = []         # empty in the box: the project, under one, comes back below
    for tmp in ("/tmp", "/var/tmp"):
        if os.path.isdir(tmp):
            masked.append(Path(tmp))
    xdg = env.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isabs(xdg) and os.path.isdir(xdg):
        masked.append(Path(os.path.abspath(xdg)))
    for path in masked:
        out += ["--tmpfs", str(path)]
    home = expand("~", env)
    # shown again, read-only, when under a masked folder: the home folder, where the agent's
    # programs are installed (an npm prefix under /tmp, as in the tests), `[sandbox] readable`
    readable: list[Path] = []
    if home != Path("/") and home.is_dir():
        readable.append(home)
    for item in (*argv, *extra_readable):
        where = install_root(item)
        if where is not None:
            readable.append(where)
    readable = [p for p in readable if any(_inside(p, m) for m in masked)]
    readable += [expand(p, env) for p in config.readable]
    shown: list[str] = []
    for path in readable:
        if _inside(path, root) or str(path) in shown:
            continue
        shown.append(str(path))
        out += ["--ro-bind-try", str(path), str(path)]
    writable: list[str] = []
    for folder in [*agent_folders(agent, env), *(expand(p, env) for p in config.writable)]:
        if _inside(folder, root) or str(folder) in writable:
            continue
        if make_dirs:
            try:
                folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            except OSError as exc:
                notes.append(f"{folder} could not be made ({exc.strerror}): read-only")
                continue
        if folder.is_dir():
            writable.append(str(folder))
            out += ["--bind", str(folder), str(folder)]
    for file in agent_files(agent, env):
        if make_dirs and not file.exists():
            try:     # the agent would create it: it must exist to be bound (write-through)
                fd = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
                try:
                    os.write(fd, _first_content(agent, file, env).encode("utf-8"))
                finally:
                    os.close(fd)
            except OSError as exc:
                notes.append(f"{file} could not be made ({exc.strerror}): read-only")
                continue
        if file.is_file():
            writable.append(str(file))
            out += ["--bind", str(file), str(file)]
    out += ["--bind", str(root), str(root)]
    writable.append(str(root))
    hidden: list[str] = []
    ours = list(rio_dirs if rio_dirs is not None else rio_folders(env))
    for path in ours:
        if make_dirs and not path.exists():
            try:    # hidden even if Rio writes there only later (a key made meanwhile)
                path.mkdir(parents=True, exist_ok=True, mode=0o700)
            except OSError:
                pass
    for path in [*ours, *(expand(p, env) for p in config.hidden)]:
        if str(path) in hidden or not path.exists():
            continue
        if _inside(root, path):
            notes.append(f"{path} holds the project, so it is not hidden")
            continue
        hidden.append(str(path))
        if path.is_dir():
            out += ["--tmpfs", str(path)]
        else:
            out += ["--ro-bind", "/dev/null", str(path)]
    tmpdir = env.get("TMPDIR")
    if tmpdir and not tmpdir.startswith("/tmp"):
        out += ["--setenv", "TMPDIR", "/tmp"]    # it may be hidden (a runtime folder)
    out += ["--chdir", str(root), "--", *argv]
    return Plan(tuple(out), tuple(writable), tuple(shown), tuple(hidden),
                scoped=available.scoped, tool=available.tool, notes=tuple(notes))


# ------------------------------------------------------------------------------- decision

NO_SANDBOX_NOTE = "no_sandbox"


def no_sandbox_text(available: Availability) -> str:
    """The one line a conversation shows when its agent runs unboxed (``agent.note``)."""
    return (f"The agent runs without a sandbox: {available.reason} It can read and change "
            "everything you can, and its helpers may outlive it. docs/agent-chat.md, "
            "\"Agents in a box\", says what the box does.")


def required_error(available: Availability) -> AgentError:
    return AgentError("sandbox_unavailable", f"No sandbox can be made for the agent, and "
                      f"[sandbox] mode is \"required\": {available.reason}",
                      "Install bubblewrap (apt install bubblewrap) and allow user "
                      "namespaces, or set [sandbox] mode = \"auto\" in config.toml.")


__all__ = ["AGENT_FILES", "AGENT_FOLDERS", "Availability", "MODES", "MODE_ENV",
           "NO_SANDBOX_NOTE", "Plan", "SandboxConfig", "agent_files", "agent_folders",
           "expand", "install_root", "load_config", "no_sandbox_text", "parse_config", "plan",
           "probe", "required_error", "rio_folders"]
