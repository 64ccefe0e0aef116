"""The ``rio`` command: the one place that wires rio/, actors/ and ui/ together.

Exit codes for client commands: 0 success, 1 the instance answered with an error (printed),
2 no instance could be reached (with the reason), 3 bad usage.

Every error is one line on stderr, ``rio: <kind>: <message> — <next>``, never a traceback: a
:class:`RioError` is printed as it is, bad usage (argparse included) as ``usage``, and anything
unexpected as ``internal.unexpected`` (``RIO_DEBUG=1`` shows the traceback as well).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence, cast

from rio import __version__
from rio.protocol.errors import BusError, RioError, error_line

if TYPE_CHECKING:
    from actors.bus.client import BusConnection
    from rio.config.instance import InstanceInfo

EXIT_OK, EXIT_ERROR, EXIT_UNREACHABLE, EXIT_USAGE = 0, 1, 2, 3

DESCRIPTION = """\
Rio: a lightweight '90s-style text editor and development environment that drives coding agents.

Start here:
  rio [PATH...]                 open the desktop editor on a folder (default: the current one)
  rio serve [--root DIR]        run Rio headless in the foreground (Ctrl+C or `rio stop` ends it)
  rio --connect tcp://HOST:PORT the desktop on a remote `rio serve --listen` (docs/deploy.md)
  rio call OP [JSON_ARGS]       send one request to a running Rio, print the reply as JSON
  rio events [--topic PREFIX]   print the event stream as JSON lines
  rio status / rio stop         what is running / stop it
  rio health                    exit 0 healthy, 1 degraded, 2 unreachable (for probes)

Examples:
  rio serve --root ~/project &
  rio call buffer.open '{"path": "README.md"}'
  rio call system.ops           # every op with its arguments
"""


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def print_error(kind: str, message: str, next_action: str = "") -> None:
    print(error_line(kind, message, next_action), file=sys.stderr, flush=True)


def _fail(err: RioError) -> int:
    print_error(err.kind, err.message, err.next)
    return EXIT_UNREACHABLE if err.kind in ("bus.unreachable", "bus.ambiguous_instance",
                                             "bus.timeout") else EXIT_ERROR


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and exits 3 (argparse's own 2 means
    "unreachable" for rio)."""

    def error(self, message: str) -> Any:
        usage = " ".join(self.format_usage().split())   # "usage: rio chat [-h] …", one line
        print_error("usage", f"{self.prog}: {message}", f"{usage}; see `{self.prog} --help`")
        sys.exit(EXIT_USAGE)


#: Commands that only look: in a folder no instance serves they may take the only instance
#: running, and say on stderr which one answered. The others (``rio call``, ``rio stop``)
#: refuse there: they must not act on another project's instance (docs/deploy.md).
LOOKING_COMMANDS = ("status", "events", "health")


def _connect(args: argparse.Namespace, *, subscribe: tuple[str, ...] = ()) -> BusConnection:
    from actors.bus.client import connect, connect_remote
    if getattr(args, "connect", None):
        return connect_remote(args.connect, args.server_key, name="cli", timeout=args.timeout,
                              subscribe=subscribe)
    info = _find_instance(args)
    return connect(info, name="cli", timeout=args.timeout, subscribe=subscribe)


def _find_instance(args: argparse.Namespace) -> InstanceInfo:
    """The instance ``--instance`` names, else the one serving this folder; a looking command
    (:data:`LOOKING_COMMANDS`) in a folder none serves takes the only one running and says
    so on stderr."""
    from rio.config.instance import find_instance, serves_folder
    looking = getattr(args, "command", None) in LOOKING_COMMANDS
    info = find_instance(args.instance, elsewhere=looking)
    here = Path.cwd().resolve()
    if not args.instance and not serves_folder(info, here):
        print(f"rio: no instance runs on {here}; instance {info.name} (on {info.root}) "
              "answered", file=sys.stderr, flush=True)
    return info


# --- commands -----------------------------------------------------------------------------------

def cmd_serve(args: argparse.Namespace) -> int:
    from actors.runtime.supervisor import run_supervisor
    return run_supervisor(root=Path(args.root or ".").resolve(), instance=args.instance,
                          desktop=False, listen=args.listen, placement=args.placement,
                          fault_injection=args.fault_injection, log_stderr=args.log_stderr)


def check_desktop_paths(paths: Sequence[str], commands: Sequence[str]) -> int | None:
    """Catch what `rio PATH...` would get wrong before a window opens on it: a mistyped
    command (``rio sevre``) and a folder that does not exist (``rio /no/such/dir/``)."""
    import difflib
    for raw in paths:
        path = Path(raw)
        if path.exists():
            continue
        close = difflib.get_close_matches(raw, commands, n=1, cutoff=0.6)
        if close and "/" not in raw and "." not in raw:
            print_error("usage", f"unknown command {raw!r}, did you mean {close[0]}?",
                        f"run `rio {close[0]} …`, or `rio ./{raw}` to open a new file of that "
                        "name")
            return EXIT_USAGE
        if raw.endswith(("/", os.sep)):
            print_error("path.not_found", f"there is no folder {raw}",
                        "check the path, or create the folder first")
            return EXIT_USAGE
        if not path.absolute().parent.is_dir():
            print_error("path.not_found", f"there is no folder {path.parent} (for {raw})",
                        "check the path, or create the folder first")
            return EXIT_USAGE
    return None


def cmd_desktop(args: argparse.Namespace) -> int:
    if args.connect:
        return cmd_remote_desktop(args)
    paths = [Path(p) for p in args.paths]
    folders = [p for p in paths if p.is_dir()]
    root = (folders[0] if folders else Path(".")).resolve()
    files = [str(p.resolve()) for p in paths if not p.is_dir()]
    if not os.environ.get("DISPLAY"):
        print("rio: there is no display to open the window on (DISPLAY is not set).\n"
              "  Run Rio headless with `rio serve`, or start it from a desktop session.",
              file=sys.stderr)
        return EXIT_USAGE
    running = _instance_for_root(root, args.instance)
    if running is not None:
        # Rio already serves this folder: its window is raised (one window per instance),
        # or, on a headless instance (`rio serve`), a window is attached to it.
        print(f"Rio is already running on this folder (instance {running.name}).", flush=True)
        argv = [sys.executable, "-P", "-m", "ui.tk", "--instance", running.name]   # ADR-0033
        for path in files:
            argv += ["--open", path]
        return subprocess.call(argv)
    # The window first: a fork of this process draws it before this one imports the supervisor
    # (which adopts it), and the rest starts once the window is drawn (ADR-0026 b).
    from actors.runtime.window_first import fork_window, wait_drawn
    from rio.config.instance import check_name, default_name
    name = check_name(args.instance) if args.instance else default_name(root)
    window = fork_window(name, root, files, _window_main)
    wait_drawn(window)
    from actors.runtime.supervisor import run_supervisor
    return run_supervisor(root=root, instance=name, desktop=True, open_files=files,
                          window=window)


def _window_main(argv: list[str]) -> int:
    """The window, in the fork `rio` makes of itself (actors/runtime/window_first.py)."""
    from ui.tk.start.first import main
    return main(argv)


def cmd_remote_desktop(args: argparse.Namespace) -> int:
    """``rio --connect tcp://HOST:PORT [FILE]...``: the desktop on a remote headless instance
    (``rio serve --listen``), over CURVE; FILEs are paths in the remote project."""
    if not os.environ.get("DISPLAY"):
        print_error("usage", "there is no display to open the window on (DISPLAY is not set)",
                    "run `rio --connect` from a desktop session")
        return EXIT_USAGE
    if args.instance:
        print_error("usage", "--instance names a local instance; --connect a remote one",
                    "give one of them")
        return EXIT_USAGE
    argv = [sys.executable, "-P", "-m", "ui.tk", "--connect", args.connect]   # ADR-0033
    if args.server_key:
        argv.append(f"--server-key={args.server_key}")   # a key may start with "-"
    for path in args.paths:
        argv += ["--open", path]
    sys.stdout.flush()
    # This process becomes the window: a signal to `rio --connect` reaches the desktop itself
    # (a child would outlive a killed parent).
    os.execv(sys.executable, argv)


def _instance_for_root(root: Path, name: str | None) -> InstanceInfo | None:
    from rio.config.instance import running_instances
    for info in running_instances():
        if (name and info.name == name) or (not name and Path(info.root) == root):
            return info
    return None


def cmd_call(args: argparse.Namespace) -> int:
    try:
        call_args = json.loads(args.json_args) if args.json_args else {}
    except json.JSONDecodeError as exc:
        print_error("usage", f"JSON_ARGS is not valid JSON: {exc}",
                    "example: rio call buffer.open '{\"path\": \"README.md\"}'")
        return EXIT_USAGE
    if not isinstance(call_args, dict):
        print_error("usage", "JSON_ARGS must be a JSON object",
                    "example: rio call buffer.open '{\"path\": \"a.txt\"}'")
        return EXIT_USAGE
    try:
        json.dumps(call_args, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        print_error("usage", "JSON_ARGS holds text that is not valid UTF-8 (a file name from "
                    "the shell?)", "pass names as UTF-8, or rename the file")
        return EXIT_USAGE
    try:
        conn = _connect(args)
    except RioError as err:
        _fail(err)
        return EXIT_UNREACHABLE
    try:
        result = conn.call(args.op, call_args, timeout=args.timeout)
    except RioError as err:
        if err.kind == "bus.timeout":
            _fail(err)
            return EXIT_UNREACHABLE
        err = explain_call_error(args.op, err)
        _print_json({"ok": False, "error": err.to_wire()})   # the reply, for scripts
        print_error(err.kind, err.message, err.next)
        return EXIT_ERROR
    finally:
        conn.close()
    _print_json(result)
    return EXIT_OK


def explain_call_error(op: str, err: RioError) -> RioError:
    """Say what "nothing serves it" means for the op asked: an op that does not exist is a
    typo (not a restarting process), and ``ui.*`` needs a window the instance may not have."""
    from rio.protocol.errors import ProtocolError
    from rio.protocol.ops import REGISTRY
    if err.kind not in ("bus.no_route", "protocol.unknown_op"):
        return err
    if op not in REGISTRY:
        return ProtocolError("unknown_op", f"There is no op {op!r}.",
                             "`rio call system.ops` lists them.", op=op)
    if op.startswith("ui.") and err.kind == "bus.no_route":
        return BusError("no_window", f"{op} needs the desktop window, and this instance has "
                        "none (it runs headless, or its window was closed).",
                        "Open the window on the project with `rio` (it attaches to the "
                        "running instance), then try again.", op=op)
    return err


def cmd_events(args: argparse.Namespace) -> int:
    topics = tuple(args.topic or [""])
    try:
        conn = _connect(args, subscribe=())
    except RioError as err:
        _fail(err)
        return EXIT_UNREACHABLE
    count = 0

    def show(event: Any) -> None:
        nonlocal count
        from rio.protocol.frames import thaw
        print(json.dumps({"topic": event.topic, "seq": event.seq, "data": thaw(event.data)},
                         ensure_ascii=False, default=str), flush=True)
        count += 1

    stream = conn.events(topics, timeout=args.duration or None)
    try:
        for event in stream if args.count is None or args.count > 0 else ():
            show(event)
            if args.count is not None and count >= args.count:
                break
    except KeyboardInterrupt:
        pass
    finally:
        # events() is a generator function (actors.bus.client annotates it as a plain Iterator).
        stream.close()  # type: ignore[attr-defined]
        conn.close()
    return EXIT_OK


def cmd_status(args: argparse.Namespace) -> int:
    from rio.config.instance import running_instances
    if args.all:
        live = running_instances()
        if args.json:
            _print_json([vars(i) for i in live])
        elif not live:
            print("No Rio instance is running. Start one with `rio serve` or `rio`.")
        for info in live:
            print(f"{info.name}  pid {info.pid}  root {info.root}")
        return EXIT_OK
    try:
        conn = _connect(args)
    except RioError as err:
        return _fail(err)
    try:
        # tree: what each process started (an agent session's ACP agent, its helpers) and
        # its memory, and the instance's total
        status = conn.call("system.status", {"tree": True}, timeout=args.timeout)
        agents = agent_states(conn, status, min(args.timeout, AGENT_STATE_TIMEOUT_S))
    except RioError as err:
        return _fail(err)
    finally:
        conn.close()
    for proc in status.get("processes", ()):
        if proc["name"] in agents:
            proc["agent"] = agents[proc["name"]]
    if args.json:
        _print_json(status)
        return status_code(status)
    print("\n".join(render_status(status)))
    from rio.service.health import failed_processes
    for name in failed_processes(status):
        print_error("failed", f"Rio gave up on {name} (its restart budget is spent)",
                    f"read its log, fix the cause, then `rio call system.restart "
                    f"'{{\"process\": \"{name}\"}}'`")
    return status_code(status)


def status_code(status: dict[str, Any]) -> int:
    """``rio status`` exits 1 when Rio gave up on a process (state ``failed``): the table is
    printed all the same, but the instance is not whole until someone acts (`rio call
    system.restart`). A process ``restarting`` is Rio doing its job: 0 (``rio health`` is the
    stricter probe)."""
    from rio.service.health import failed_processes
    return EXIT_ERROR if failed_processes(status) else EXIT_OK


#: How long ``rio status`` waits for the agent sessions to say whether their agent runs.
AGENT_STATE_TIMEOUT_S = 2.0


def agent_states(conn: BusConnection, status: dict[str, Any], timeout: float
                 ) -> dict[str, dict[str, Any]]:
    """Each running agent session's ACP agent as its session sees it (``session.status``'s
    ``agent``: running or not, and how it ended), asked of all of them at once; a session that
    does not answer in ``timeout`` (busy starting, hung: the table says so) is left out."""
    from actors.bus.client import result_of
    asked: dict[str, Any] = {}

    def keep(name: str) -> Callable[[Any], None]:
        return lambda reply: asked.__setitem__(name, reply)
    sessions = [str(p["name"]) for p in status.get("processes", ())
                if str(p.get("name") or "").startswith("agent:") and p.get("state") == "running"]
    for name in sessions:
        conn.request("session.status", {"conversation": name.split(":", 1)[1]}, keep(name),
                     timeout=timeout)
    deadline = time.monotonic() + timeout
    while len(asked) < len(sessions) and time.monotonic() < deadline:
        conn.wait(max(0.01, deadline - time.monotonic()))
    found: dict[str, dict[str, Any]] = {}
    for name, reply in asked.items():
        try:
            result = result_of(reply)
        except RioError:
            continue
        agent = result.get("agent") if isinstance(result, dict) else None
        if isinstance(agent, dict):
            found[name] = dict(agent)
    return found


def _mb(rss: Any) -> str:
    return f"{rss / 1048576:.1f} MB" if rss else "-"


def render_status(status: dict[str, Any]) -> list[str]:
    """``rio status`` as text: a header, the process table (columns as wide as their longest
    cell, so ``agent:<id>`` names keep it aligned) with what each process started indented
    under it (an agent session's ACP agent and its helpers, with their memory), whether a
    conversation's agent runs, the instance's memory in all, and where the logs are."""
    # USS: the pages only that process maps (`rio status` asks for the tree) — what a session
    # forked from the zygote really costs, where RSS also counts the pages it shares
    rows: list[tuple[str, ...] | str] = [
        ("PROCESS", "PID", "STATE", "RESTARTS", "RSS", "USS", "ACTORS", "LAST EXIT")]
    started = 0
    for proc in status.get("processes", ()):
        rows.append((str(proc["name"]), str(proc.get("pid") or "-"), str(proc["state"]),
                     str(proc.get("restarts", 0)), _mb(proc.get("rss")), _mb(proc.get("uss")),
                     ",".join(proc.get("actors") or ()) or "-", str(proc.get("last_exit") or "-")))
        for child in proc.get("children") or ():
            started += 1
            rows.append(("  " * int(child.get("depth") or 1) + "└ " + str(child.get("name")),
                         str(child.get("pid") or "-"), str(child.get("state") or "-"), "-",
                         _mb(child.get("rss")), "-", "-", "-"))
        agent = proc.get("agent")
        if isinstance(agent, dict) and agent.get("running") is False:
            ended = f" — {agent['ended']}" if agent.get("ended") else ""
            rows.append(f"  agent {agent.get('name') or '?'}: not running{ended}; the next "
                        "message starts it again")
    for child in status.get("adopted") or ():
        started += 1
        rows.append(("  " * int(child.get("depth") or 0) + "└ " + str(child.get("name")) +
                     " (adopted)", str(child.get("pid") or "-"), str(child.get("state") or "-"),
                     "-", _mb(child.get("rss")), "-", "-", "-"))
    table = [r for r in rows if isinstance(r, tuple)]
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]) - 1)]
    right = {1, 3, 4, 5}
    lines = [f"instance {status['instance']}  root {status['root']}  supervisor pid "
             f"{status['pid']}  up {status['uptime_s']:.0f} s"]
    for row in rows:
        if isinstance(row, str):
            lines.append(row)
            continue
        cells = [cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
                 for i, cell in enumerate(row[:-1])]
        lines.append("  ".join(cells + [row[-1]]).rstrip())
    if status.get("rss_total"):
        own = sum(int(p.get("rss") or 0) for p in status.get("processes", ()))
        spare = sum(int(p.get("rss") or 0) for p in status.get("spares") or ())
        lines.append(f"memory: {_mb(status['rss_total'])} in all — the supervisor "
                     f"{_mb(status.get('rss'))}, Rio's processes {_mb(own)}"
                     + (f", the spare {_mb(spare)}" if spare else "") +
                     f", and {started} process{'es' if started != 1 else ''} they started "
                     f"(agents and their helpers) {_mb(_started_rss(status))}")
    if status.get("uss_own"):
        sessions = [p for p in status.get("processes", ())
                    if str(p.get("name") or "").startswith("agent:") and p.get("uss")]
        each = sum(int(p["uss"]) for p in sessions) / len(sessions) if sessions else 0
        lines.append(f"Rio's own pages (USS): {_mb(status['uss_own'])}"
                     + (f"; {len(sessions)} conversation session"
                        f"{'s' if len(sessions) != 1 else ''}, {_mb(each)} each on average"
                        if sessions else ""))
    logs = sorted({str(Path(p["log"]).parent) for p in status.get("processes", ())
                   if p.get("log")})
    if logs:
        lines.append(f"logs: {', '.join(logs)}  (one file per process: <instance>.<process>.log)")
    elif status.get("processes"):
        lines.append("logs: on the instance's stderr, a [process] prefix on each line "
                     "(rio serve --log-stderr: the journal, `kubectl logs`)")
    return lines


def _started_rss(status: dict[str, Any]) -> int:
    return sum(int(c.get("rss") or 0) for p in status.get("processes", ())
               for c in p.get("children") or ()) + sum(int(c.get("rss") or 0)
                                                       for c in status.get("adopted") or ())


def cmd_stop(args: argparse.Namespace) -> int:
    from rio.config.instance import pid_alive
    try:
        info = None if args.connect else _find_instance(args)
        conn = _connect(args)
    except RioError as err:
        return _fail(err)
    try:
        conn.call("system.stop", timeout=args.timeout)
    except RioError as err:
        if err.kind != "bus.timeout":
            return _fail(err)
    finally:
        conn.close()
    if info is None:        # remote: we cannot watch its pid
        print("Asked the remote instance to stop.")
        return EXIT_OK
    deadline = time.monotonic() + 15
    while pid_alive(info.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if pid_alive(info.pid):
        print(f"rio: instance {info.name} (pid {info.pid}) is still stopping.", file=sys.stderr)
        return EXIT_ERROR
    print(f"Stopped {info.name}.")
    return EXIT_OK


# --- the parser ---------------------------------------------------------------------------------

def _client_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--instance", help="the instance to talk to (default: the one for this folder)")
    p.add_argument("--connect", metavar="tcp://HOST:PORT",
                   help="a remote instance over CURVE-encrypted TCP")
    p.add_argument("--server-key", help="the remote server's public key (from `rio keys`)")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds to wait (default 10)")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """Every command's parser; with ``command`` (the first word), only the module of that
    command among those in modules of their own is imported (``rio mcp`` is started by an
    agent and waited for: the others' imports cost ~0.4 s, ADR-0025)."""
    # Typed as the base class so the subcommand modules' register() take plain parsers.
    parser: argparse.ArgumentParser = _Parser(
        prog="rio", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"rio {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("serve", help="run Rio headless in the foreground")
    p.add_argument("--root", help="the project folder (default: the current folder)")
    p.add_argument("--instance", help="a name for this instance (default: from the folder)")
    p.add_argument("--listen", metavar="tcp://HOST:PORT",
                   help="also accept remote clients over TCP with CURVE (needs `rio keys`)")
    p.add_argument("--placement", help="a placement from supervisor.toml (e.g. isolated)")
    p.add_argument("--fault-injection", action="store_true",
                   help="enable the fault-injection ops used by `rio faults`")
    p.add_argument("--log-stderr", action="store_true",
                   help="every process's log lines on this stderr, prefixed [name] (for "
                        "journald, `kubectl logs`); also RIO_LOG_STDERR=1. Default: a file per "
                        "process")
    p.set_defaults(func=cmd_serve)

    p = sub.add_parser("call", help="send one request and print the reply as JSON")
    p.add_argument("op", help="e.g. buffer.open (see `rio call system.ops`)")
    p.add_argument("json_args", nargs="?", help="arguments as a JSON object")
    _client_options(p)
    p.set_defaults(func=cmd_call)

    p = sub.add_parser("events", help="print events as JSON lines")
    p.add_argument("--topic", action="append", help="only topics starting with this (repeatable)")
    p.add_argument("--count", type=int, help="stop after this many events")
    p.add_argument("--duration", type=float, help="stop after this many seconds")
    _client_options(p)
    p.set_defaults(func=cmd_events)

    p = sub.add_parser("status", help="the processes of a running instance")
    p.add_argument("--all", action="store_true", help="list every running instance")
    p.add_argument("--json", action="store_true", help="print JSON")
    _client_options(p)
    p.set_defaults(func=cmd_status)

    p = sub.add_parser("stop", help="stop a running instance")
    _client_options(p)
    p.set_defaults(func=cmd_stop)

    for extra in _extra_commands(command):
        extra(sub)
    return parser


#: The commands that live in modules of their own, by first word.
_COMMAND_MODULES = {"chat": "rio.cli.agent", "key": "rio.cli.agent", "agents": "rio.cli.agents",
                    "faults": "rio.cli.faults", "keys": "rio.cli.keys", "mcp": "rio.cli.mcp",
                    "health": "rio.cli.health"}


def _extra_commands(command: str | None = None
                    ) -> list[Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]]:
    """Commands that live in their own modules (agent chat, keys, faults ...): all of them,
    or only ``command``'s."""
    found = []
    only = _COMMAND_MODULES.get(command or "")
    for module in ("rio.cli.agent", "rio.cli.agents", "rio.cli.faults", "rio.cli.health",
                   "rio.cli.keys", "rio.cli.mcp"):
        if only is not None and module != only:
            continue
        try:
            mod = __import__(module, fromlist=["register"])
        except ImportError:
            continue
        found.append(mod.register)
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``rio`` command; whatever goes wrong ends as one line and a documented code."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print_error("interrupted", "stopped by Ctrl+C")
        return 130
    except RioError as err:
        return _fail(err)
    except Exception as exc:  # noqa: BLE001 -- the last line of defence: one line, not a trace
        if os.environ.get("RIO_DEBUG"):
            import traceback
            traceback.print_exc()
        print_error("internal.unexpected", f"{type(exc).__name__}: {exc}",
                    "this is a bug in Rio: run it again with RIO_DEBUG=1 and report the "
                    "traceback")
        return EXIT_ERROR


def _choices(action: argparse.Action) -> dict[str, argparse.ArgumentParser]:
    """The parsers by name of an action made by ``add_subparsers`` (the only kind passed here):
    its ``choices`` is that dict, though argparse types it as any iterable."""
    return cast("dict[str, argparse.ArgumentParser]", action.choices)


#: Every command's name, without building the parser: the desktop path (`rio FILE`) decides it
#: is not a command without importing the command modules (~0.3 s; the window comes first,
#: ADR-0026 b). tests/runtime/test_window_first.py keeps it equal to the parser's.
COMMANDS = ("agents", "call", "chat", "events", "faults", "health", "key", "keys", "mcp",
            "serve", "status", "stop")


def _main(argv: Sequence[str] | None = None) -> int:
    argv = glue_server_key(list(sys.argv[1:] if argv is None else argv))
    known = set(COMMANDS)
    first = _first_word(argv)
    if first == "" or (first is not None and first not in known):
        desktop = _Parser(prog="rio", description=DESCRIPTION,
                          formatter_class=argparse.RawDescriptionHelpFormatter)
        desktop.add_argument("paths", nargs="*", help="a folder or files to open")
        desktop.add_argument("--instance")
        desktop.add_argument("--connect", metavar="tcp://HOST:PORT",
                             help="open the desktop on a remote instance (`rio serve --listen`)")
        desktop.add_argument("--server-key", help="the remote server's public key (`rio keys`)")
        args = desktop.parse_args(argv)
        if args.connect:
            return cmd_desktop(args)
        refused = check_desktop_paths(args.paths, sorted(known))
        return refused if refused is not None else cmd_desktop(args)
    parser = build_parser(first)
    args, extra = parser.parse_known_args(argv)
    if extra:
        # An unknown option: the subcommand's usage, not the top-level one.
        chosen = parser
        while chosen._subparsers is not None:      # rio key set --x: `rio key set`'s usage
            action = chosen._subparsers._group_actions[0]
            name = getattr(args, action.dest, None)
            if name not in _choices(action):
                break
            chosen = _choices(action)[name]
        chosen.error(f"unrecognized arguments: {' '.join(extra)}")
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        code: int = args.func(args)   # every command returns its exit status
        return code
    except RioError as err:
        return _fail(err)


_DESKTOP_OPTIONS = ("--instance", "--connect", "--server-key")


#: A CURVE public key as `rio keys` prints it: 40 characters of Z85.
_Z85_KEY_WORD = re.compile(r"^[0-9a-zA-Z.:+=^!/*?&<>()\[\]{}@%$#-]{40}$")


def glue_server_key(argv: list[str]) -> list[str]:
    """``--server-key KEY`` → ``--server-key=KEY``: a Z85 key may start with "-" (1 key in 85),
    which argparse would take for an option and refuse the command. A key given as a word of
    its own (``rio keys add NAME KEY``, ``--authorize NAME KEY``) gets a leading space instead,
    which argparse reads as a positional; every reader of a key strips it
    (``check_public_key``)."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] == "--server-key" and i + 1 < len(argv):
            out.append(f"--server-key={argv[i + 1]}")
            i += 2
        else:
            word = argv[i]
            if word.startswith("-") and _Z85_KEY_WORD.match(word):
                word = " " + word
            out.append(word)
            i += 1
    return out


def _first_word(argv: Sequence[str]) -> str | None:
    """The first word that is not a desktop option (``--instance NAME``, ``--connect ADDRESS``,
    ``--server-key KEY``): "" when there is none (``rio``, ``rio --instance X``), None when
    another option comes first (``--help``, ``--version``: the main parser's)."""
    i = 0
    while i < len(argv):
        word = argv[i]
        if word in _DESKTOP_OPTIONS:
            i += 2
        elif word.startswith(tuple(f"{o}=" for o in _DESKTOP_OPTIONS)):
            i += 1
        elif word.startswith("-") and word != "-":
            return None
        else:
            return word
    return ""


def run() -> int:
    """The ``rio`` program (console script and ``python -m rio.cli.main``): :func:`main` with the
    default SIGPIPE action, so ``rio events | head`` ends quietly. Only the program sets it —
    a process that calls :func:`main` in-process (the tests) keeps Python's own handling, or
    a later write to a closed socket would kill that whole process."""
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    return main()


if __name__ == "__main__":
    sys.exit(run())
