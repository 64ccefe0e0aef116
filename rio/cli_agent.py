"""``rio chat`` (the agent at the terminal) and ``rio key`` (API keys).

    rio chat [--provider NAME] [--root DIR] [--approve ask|yes|no] [--endpoint URL]
             [--model NAME] [--instance NAME] [--conversation ID] [TEXT...]
    rio key set PROVIDER          the key is read from stdin (never from argv)
    rio key status [PROVIDER]
    rio key delete PROVIDER

``rio chat`` attaches to the instance running on the project root, or starts a headless one
(``rio serve``) for its own duration and stops it at the end. With TEXT it runs one turn and
exits with the turn's code; without, it is a conversation at the prompt. The chat logic lives
in ui/term/chat.py; this module parses, attaches and prints.
"""

from __future__ import annotations

import argparse
import getpass
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from rio.errors import BusError, RioError

EXIT_OK, EXIT_ERROR, EXIT_UNREACHABLE, EXIT_USAGE = 0, 1, 2, 3

#: How long a headless instance started for one chat gets to come up.
START_TIMEOUT_S = 30.0

CHAT_EPILOG = """\
Exit codes (how the turn ended): 0 done, 1 error, 2 Rio unreachable, 3 usage,
4 stopped (Ctrl+C), 5 a proposal was rejected by policy (--approve no, or no one to ask).

Examples:
  rio chat "Explain what src/main.py does"
  rio chat --approve no "Suggest a fix for the failing test"    # look, never touch
  rio chat --provider openai --endpoint http://127.0.0.1:11434/v1 --model llama3.1
  echo "$ANTHROPIC_KEY" | rio key set anthropic
docs/agent.md has the whole guide.
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("chat", help="talk to the agent in the terminal",
                              epilog=CHAT_EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("text", nargs="*", metavar="TEXT",
                   help="one message (one turn); without it, a conversation at the prompt")
    p.add_argument("--provider", help="the model provider (default: from config.toml)")
    p.add_argument("--root", help="the project folder (default: the current folder)")
    p.add_argument("--approve", choices=("ask", "yes", "no"), default="ask",
                   help="answer proposals: ask at the prompt (default), or always yes/no")
    p.add_argument("--endpoint", help="the provider's URL, for this conversation only")
    p.add_argument("--model", help="the model, for this conversation only")
    p.add_argument("--instance", help="talk to this running instance by name")
    p.add_argument("--conversation", metavar="ID", help="continue a conversation (agent.list)")
    p.add_argument("--timeout", type=float, default=10.0, help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_chat)
    _usage_exits_3(p)

    k = subparsers.add_parser("key", help="API keys for the model providers",
                              description="API keys: stored in the system keyring, or where "
                              "none works, in a 0600 file (you are told which). The provider's "
                              "environment variable (ANTHROPIC_API_KEY, OPENAI_API_KEY) wins "
                              "over a stored key.")
    ks = k.add_subparsers(dest="key_command", metavar="ACTION")
    s = ks.add_parser("set", help="store a key read from stdin")
    s.add_argument("provider")
    s.set_defaults(func=cmd_key_set)
    s = ks.add_parser("status", help="whether a key is set, and where from")
    s.add_argument("provider", nargs="?")
    s.set_defaults(func=cmd_key_status)
    s = ks.add_parser("delete", help="remove a stored key")
    s.add_argument("provider")
    s.set_defaults(func=cmd_key_delete)
    k.set_defaults(func=lambda args: (k.print_help(), EXIT_USAGE)[1])
    for parser in (k, *ks.choices.values()):
        _usage_exits_3(parser)


def _usage_exits_3(parser: argparse.ArgumentParser) -> None:
    """argparse exits 2 on bad usage, but for these commands 2 means "Rio unreachable"."""
    def error(message: str) -> None:
        parser.print_usage(sys.stderr)
        print(f"{parser.prog}: error: {message}", file=sys.stderr)
        sys.exit(EXIT_USAGE)
    parser.error = error  # type: ignore[method-assign]


# --- attaching to an instance -------------------------------------------------------------------

@dataclass
class Attached:
    """A live bus connection, and the headless instance we started for it (if any)."""
    conn: Any
    started: subprocess.Popen | None = None
    log: IO[bytes] | None = None

    def close(self) -> None:
        try:
            if self.started is not None and self.started.poll() is None:
                try:
                    self.conn.call("system.stop", {}, timeout=5.0)
                except RioError:
                    self.started.terminate()
                try:
                    self.started.wait(20)
                except subprocess.TimeoutExpired:
                    self.started.kill()
                    self.started.wait(5)
        finally:
            self.conn.close()
            if self.log is not None:
                self.log.close()


def attach(root: Path, instance: str | None, *, timeout: float = 10.0) -> Attached:
    from actors.bus import connect
    from rio.instance import find_instance, running_instances
    if instance:
        return Attached(connect(find_instance(instance), name="chat", timeout=timeout,
                                subscribe=("agent.",)))
    for info in running_instances():
        if Path(info.root) == root:
            return Attached(connect(info, name="chat", timeout=timeout, subscribe=("agent.",)))
    return start_headless(root, timeout=timeout)


def start_headless(root: Path, *, timeout: float) -> Attached:
    """``rio serve`` on ``root`` for the duration of this command."""
    from actors.bus import connect
    from rio.instance import running_instances
    log = tempfile.TemporaryFile(prefix="rio-chat-serve-")
    proc = subprocess.Popen([sys.executable, "-m", "rio.cli", "serve", "--root", str(root)],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                            cwd=str(root), start_new_session=True)
    deadline = time.monotonic() + START_TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                log.seek(0)
                tail = log.read()[-2000:].decode(errors="replace").strip()
                raise BusError("unreachable", f"`rio serve` on {root} ended at once "
                               f"(exit {proc.returncode}): {tail or 'no output'}",
                               "Run `rio serve --root DIR` yourself to see what is wrong.")
            info = next((i for i in running_instances() if Path(i.root) == root), None)
            if info is not None:
                conn = connect(info, name="chat", timeout=timeout, subscribe=("agent.",))
                if _core_ready(conn):
                    return Attached(conn, proc, log)
                conn.close()
            time.sleep(0.1)
        raise BusError("unreachable", f"`rio serve` on {root} did not come up in "
                       f"{START_TIMEOUT_S:g} s.", "Start it yourself with `rio serve` and "
                       "try again; `rio status` shows what runs.")
    except BaseException:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        log.close()
        raise


def _core_ready(conn: Any) -> bool:
    try:
        status = conn.call("system.status", {}, timeout=2.0)
    except RioError:
        return False
    return any(p.get("name") == "core" and p.get("ready") for p in status.get("processes", ()))


# --- rio chat -----------------------------------------------------------------------------------

def cmd_chat(args: argparse.Namespace) -> int:
    from ui.term.chat import ChatClient, interactive
    root = Path(args.root or ".").resolve()
    if not root.is_dir():
        print(f"rio chat: {root} is not a folder.", file=sys.stderr)
        return EXIT_USAGE
    text = " ".join(args.text).strip()
    if args.text and not text:
        print("rio chat: the message is empty.", file=sys.stderr)
        return EXIT_USAGE
    try:
        attached = attach(root, args.instance, timeout=args.timeout)
    except RioError as err:
        _print_error(err)
        return EXIT_UNREACHABLE
    try:
        conn = attached.conn
        try:
            if args.conversation:
                conversation = args.conversation
                conn.call("agent.history", {"conversation": conversation}, timeout=args.timeout)
            else:
                conversation = conn.call("agent.new", {
                    "provider": args.provider, "endpoint": args.endpoint,
                    "model": args.model}, timeout=args.timeout)["conversation"]
        except RioError as err:
            _print_error(err)
            return _code_for(err)
        color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        client = ChatClient(conn, conversation, approve=args.approve, color=color)
        if not text:
            return interactive(client)
        try:
            return client.send(text).exit_code
        except RioError as err:
            _print_error(err)
            return _code_for(err)
    finally:
        attached.close()


def _code_for(err: RioError) -> int:
    return EXIT_UNREACHABLE if err.kind in ("bus.unreachable", "bus.timeout",
                                            "bus.closed") else EXIT_ERROR


def _print_error(err: RioError) -> None:
    print(f"rio: {err.message}\n  ({err.kind}) {err.next}", file=sys.stderr)


# --- rio key ------------------------------------------------------------------------------------

def _known_provider(name: str) -> bool:
    try:
        from rio.providers import discover_providers
        installed = set(discover_providers())
    except Exception:  # noqa: BLE001 -- a broken plug-in must not block key management
        return True
    if name in installed or not installed:
        return True
    print(f"rio key: no provider named {name!r} is installed (installed: "
          f"{', '.join(sorted(installed))}).", file=sys.stderr)
    return False


def cmd_key_set(args: argparse.Namespace) -> int:
    from rio.failures import key_env_var
    from rio.secrets import SecretStore
    if not _known_provider(args.provider):
        return EXIT_USAGE
    store = SecretStore()
    notice = store.storage_notice()
    if notice:
        print(notice, file=sys.stderr)   # before the key is asked for: the user may stop here
    if sys.stdin.isatty():
        key = getpass.getpass(f"API key for {args.provider} (not shown): ")
    else:
        key = sys.stdin.read()
    where = store.set(args.provider, key)
    shown = "the system keyring" if where == "keyring" else f"the file {where[5:]}"
    print(f"Stored the {args.provider} API key in {shown}.")
    var = key_env_var(args.provider)
    if os.environ.get(var, "").strip():
        print(f"Note: {var} is set in this environment and is used instead of the stored key.")
    return EXIT_OK


def cmd_key_status(args: argparse.Namespace) -> int:
    from rio.secrets import SecretStore
    store = SecretStore()
    if args.provider:
        names = [args.provider]
    else:
        try:
            from rio.providers import discover_providers
            names = sorted(discover_providers()) or ["anthropic", "openai"]
        except Exception:  # noqa: BLE001
            names = ["anthropic", "openai"]
    for name in names:
        print(store.status(name))
    return EXIT_OK


def cmd_key_delete(args: argparse.Namespace) -> int:
    from rio.failures import key_env_var
    from rio.secrets import SecretStore
    store = SecretStore()
    removed = store.delete(args.provider)
    print(f"Deleted the stored {args.provider} API key." if removed
          else f"No stored {args.provider} API key to delete.")
    var = key_env_var(args.provider)
    if os.environ.get(var, "").strip():
        print(f"{var} is still set in this environment; unset it to stop using that key.")
    return EXIT_OK
