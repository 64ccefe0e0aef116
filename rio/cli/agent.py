"""``rio chat`` (the agent at the terminal) and ``rio key`` (API keys).

    rio chat [--provider NAME | --agent NAME] [--root DIR] [--approve ask|yes|no] [--endpoint URL]
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

from rio.protocol.errors import BusError, RioError

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
  rio chat --agent claude "Add a test for parse()"     # the ACP agent you are signed in to
  echo "$ANTHROPIC_KEY" | rio key set anthropic
docs/agent.md has the whole guide.
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser("chat", help="talk to the agent in the terminal",
                              epilog=CHAT_EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("text", nargs="*", metavar="TEXT",
                   help="one message (one turn); without it, a conversation at the prompt")
    p.add_argument("--provider", help="the model provider (default: from config.toml)")
    p.add_argument("--agent", metavar="NAME",
                   help="drive an ACP agent instead of a model API: claude, codex, opencode, "
                   "gemini … or [agents.NAME] of config.toml (`rio agents` lists them)")
    p.add_argument("--root", help="the project folder (default: the current folder)")
    p.add_argument("--approve", choices=("ask", "yes", "no"), default="ask",
                   help="answer proposals: ask at the prompt (default), or always yes/no")
    p.add_argument("--endpoint", help="the provider's URL, for this conversation only")
    p.add_argument("--model", help="the model, for this conversation only")
    p.add_argument("--instance", help="talk to this running instance by name")
    p.add_argument("--conversation", metavar="ID", help="continue a conversation (agent.list)")
    p.add_argument("--save", action="store_true",
                   help="save the files the agent changed at the end of each turn (scripts, "
                   "headless workers); without it they stay unsaved in Rio until you /save")
    p.add_argument("--allow-dangerous", action="store_true",
                   help="let --approve yes run commands Rio flags as dangerous (rm -rf, "
                   "git clean -f, writes into ~/.bashrc …); without it they need a person")
    p.add_argument("--timeout", type=float, default=10.0, help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_chat)

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

    def key_help(args: argparse.Namespace) -> int:
        k.print_help()
        return EXIT_USAGE
    k.set_defaults(func=key_help)
    # Usage errors exit 3 with the command's usage: the parsers are rio.cli.main's (they inherit
    # the top-level parser's class), one line like every rio error.


# --- attaching to an instance -------------------------------------------------------------------

@dataclass
class Attached:
    """A live bus connection, and the headless instance we started for it (if any)."""
    conn: Any
    started: subprocess.Popen[bytes] | None = None
    log: IO[bytes] | None = None
    name: str | None = None

    def close(self, unsaved: Any = ()) -> None:
        """Stop the instance we started — unless ``unsaved`` (paths the agent changed and
        nobody saved) says it still holds work: then it keeps running and we say how to
        save and stop it."""
        try:
            if self.started is not None and self.started.poll() is None and unsaved:
                keep_running_notice(self.name or "?", self.started.pid, sorted(unsaved))
            elif self.started is not None and self.started.poll() is None:
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
    from actors.bus.client import connect
    from rio.config.instance import find_instance, running_instances
    if instance:
        info = find_instance(instance)
        return Attached(connect(info, name="chat", timeout=timeout, subscribe=("agent.",)),
                        name=info.name)
    for info in running_instances():
        if Path(info.root) == root:
            return Attached(connect(info, name="chat", timeout=timeout, subscribe=("agent.",)),
                            name=info.name)
    return start_headless(root, timeout=timeout)


def start_headless(root: Path, *, timeout: float) -> Attached:
    """``rio serve`` on ``root`` for the duration of this command.

    No polling for the instance to come up: the instance's name (so its socket paths) is
    chosen here, the bus connection is made before ``rio serve`` has bound them (libzmq
    connects the moment they appear), and the hub's welcome, then the supervisor's
    ``system.process`` "ready" event for the core, wake this up (ADR-0009, "Revised")."""
    from actors.bus.client import BusConnection, Endpoints
    from rio.config.instance import InstancePaths, default_name
    paths = InstancePaths.for_name(default_name(root))
    log = tempfile.TemporaryFile(prefix="rio-chat-serve-")
    # -P: started in the project, whose own modules must not shadow Rio's (a msgpack.py)
    proc = subprocess.Popen([sys.executable, "-P", "-m", "rio.cli", "serve", "--root", str(root),
                             "--instance", paths.name],
                            stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                            cwd=str(root), start_new_session=True)
    conn = None
    try:
        conn = BusConnection(Endpoints(paths.requests_endpoint, paths.events_endpoint),
                             name="chat", subscribe=("agent.",), reconnect_ms=10)
        core_up: list[Any] = []

        def on_process(event: Any) -> None:
            if event.data.get("name") == "core" and event.data.get("event") == "ready":
                core_up.append(event)

        conn.subscribe("system.process", on_process)   # before the hub exists: no event missed
        deadline = time.monotonic() + START_TIMEOUT_S
        # wakes at the welcome; the slices only notice a `rio serve` that ended at once
        while not conn.wait_live(min(0.5, max(0.0, deadline - time.monotonic()))):
            _check_started(proc, log, root, deadline)
        status = conn.call("system.status", {}, timeout=max(1.0, deadline - time.monotonic()))
        if status.get("pid") != proc.pid:   # nothing is sent to a process we did not start
            raise BusError("unreachable", f"Another process answers on {paths.requests_endpoint}"
                           f" (pid {status.get('pid')}, not the `rio serve` started: "
                           f"{proc.pid}).", "Check `rio status --all` and stop the other one.")
        ready = _core_ready(status)
        while not ready:
            ready = conn.wait_for(lambda: core_up,
                                  min(1.0, max(0.0, deadline - time.monotonic())))
            if not ready:   # a quiet second: is it still there? ready before we subscribed?
                _check_started(proc, log, root, deadline)
                ready = _core_ready(conn.call("system.status", {}, timeout=5.0))
        conn.unsubscribe("system.process", on_process)
        return Attached(conn, proc, log, paths.name)
    except BaseException:
        if conn is not None:
            conn.close()
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
        log.close()
        raise


def _check_started(proc: subprocess.Popen[bytes], log: IO[bytes], root: Path, deadline: float) -> None:
    """Raise when the ``rio serve`` we started has ended, or did not come up in time."""
    if proc.poll() is not None:
        log.seek(0)
        tail = log.read()[-2000:].decode(errors="replace").strip()
        raise BusError("unreachable", f"`rio serve` on {root} ended at once "
                       f"(exit {proc.returncode}): {tail or 'no output'}",
                       "Run `rio serve --root DIR` yourself to see what is wrong.")
    if time.monotonic() >= deadline:
        raise BusError("unreachable", f"`rio serve` on {root} did not come up in "
                       f"{START_TIMEOUT_S:g} s.", "Start it yourself with `rio serve` and "
                       "try again; `rio status` shows what runs.")


def _core_ready(status: Any) -> bool:
    return any(p.get("name") == "core" and p.get("ready") for p in status.get("processes", ()))


# --- rio chat -----------------------------------------------------------------------------------

def cmd_chat(args: argparse.Namespace) -> int:
    from ui.term.chat import ChatClient, interactive
    root = Path(args.root or ".").resolve()
    if not root.is_dir():
        print(f"rio chat: {root} is not a folder.", file=sys.stderr)
        return EXIT_USAGE
    text = " ".join(args.text).strip()
    agent = getattr(args, "agent", None)
    if agent and (args.provider or args.endpoint or args.model):
        print("rio chat: --agent drives the agent's own model; --provider, --endpoint and "
              "--model are for the model APIs (set the agent's model in its own settings).",
              file=sys.stderr)
        return EXIT_USAGE
    if args.text and not text:
        print("rio chat: the message is empty.", file=sys.stderr)
        return EXIT_USAGE
    try:
        attached = attach(root, args.instance, timeout=args.timeout)
    except RioError as err:
        _print_error(err)
        return EXIT_UNREACHABLE
    client = None
    made_here = not args.conversation
    try:
        conn = attached.conn
        try:
            if args.conversation:
                conversation = args.conversation
                conn.call("agent.history", {"conversation": conversation}, timeout=args.timeout)
            elif agent:
                conversation = conn.call("agent.new", {"agent": agent},
                                         timeout=args.timeout)["conversation"]
            else:
                conversation = conn.call("agent.new", {
                    "provider": args.provider, "endpoint": args.endpoint,
                    "model": args.model}, timeout=args.timeout)["conversation"]
        except RioError as err:
            _print_error(err)
            explain_key_mismatch(err.kind, args.provider, attached)
            return _code_for(err)
        color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        client = ChatClient(conn, conversation, approve=args.approve, color=color,
                            allow_dangerous=args.allow_dangerous)
        client.autosave = args.save
        if not text:
            notice = None if agent else key_notice(args.provider, args.endpoint,
                                                   attached.started is not None)
            return interactive(client, notice=notice)
        try:
            result = client.send(text)
        except RioError as err:
            _print_error(err)
            return _code_for(err)
        explain_key_mismatch((result.error or {}).get("kind"), args.provider, attached)
        try:
            if not client.note_unsaved(result, at_prompt=False):
                return EXIT_ERROR              # --save failed (the error is printed)
        except RioError as err:
            _print_error(err)
            return _code_for(err)
        return result.exit_code
    finally:
        if agent and client is not None and not args.conversation:
            end_agent(attached, client.conversation)
        if made_here and not agent and client is not None and not client.reached_model:
            discard(attached, client.conversation)
        attached.close(unsaved=set(client.unsaved.values()) if client is not None else ())


def discard(attached: Attached, conversation: str) -> None:
    """The conversation this `rio chat` made never reached a model (every message failed on
    the provider's configuration: no API key …, or none was sent): it is not kept — the
    core forgets it (``agent.discard``), so failed attempts do not pile up in the list."""
    try:
        attached.conn.call("agent.discard", {"conversation": conversation}, timeout=10.0)
    except RioError:
        pass            # it has an answer after all, or the instance is gone: kept as it is


def end_agent(attached: Attached, conversation: str) -> None:
    """`rio chat --agent` is over: end the conversation's agent and everything it started (the
    stop sequence), as for an idle conversation — the next message to it (`--conversation`,
    the desktop) starts it again and resumes its session."""
    if attached.started is not None:
        return                      # the instance we started stops, and everything with it
    try:
        attached.conn.call("system.restart", {"process": f"agent:{conversation}",
                                              "again": False, "reason": "idle"}, timeout=15.0)
    except RioError:
        pass                        # never started, or gone already


def keep_running_notice(name: str, pid: int, paths: list[str]) -> None:
    """Why the instance `rio chat` started is still running, and how to finish."""
    print(f"Rio keeps running (instance {name}, pid {pid}): the agent's changes to "
          f"{', '.join(paths)} are unsaved (in its editor and journal, not on disk).\n"
          f"  Save them: `rio chat --instance {name}` and /save (or /diff, /undo first); "
          "next time `rio chat --save` saves at the end of the turn.\n"
          f"  Stop it: `rio stop --instance {name}` (unsaved changes stay in the journal and "
          "come back at the next start).", file=sys.stderr)


def _provider_and_endpoint(provider: str | None, endpoint: str | None) -> tuple[str, str]:
    from rio.agent.config import load_agent_config
    try:
        config = load_agent_config()
    except RioError:
        return provider or "anthropic", endpoint or ""
    name = provider or config.provider
    return name, endpoint or config.provider_settings(name).endpoint


def key_notice(provider: str | None, endpoint: str | None, started_here: bool,
               env: Any = None, store: Any = None) -> str | None:
    """Said when the prompt opens: no API key can reach the model, and what to do.

    A Rio that was already running sees only its own environment and the stored keys
    (keyring or file), never this shell's variables: ADR-0018."""
    from rio.agent.config import config_dir
    from rio.agent.failures import key_env_var
    from rio.agent.secrets import SecretStore
    from rio.providers.base import is_loopback_url
    env = os.environ if env is None else env
    name, url = _provider_and_endpoint(provider, endpoint)
    if name != "anthropic" and (not url or is_loopback_url(url)):
        return None                          # a local OpenAI-compatible server needs no key
    var = key_env_var(name)
    in_shell = bool(env.get(var, "").strip())
    # Stored keys only (keyring or file): what any Rio can read, whatever its environment.
    store = store or SecretStore(config_dir=config_dir(env), env={})
    if store.get(name)[0] is not None or (in_shell and started_here):
        return None
    if in_shell:
        return (f"Note: {var} is set in this shell, but the Rio already running cannot see "
                "this shell's environment, and no key is stored. `rio key set "
                f"{name}` stores it where the running Rio reads it (or `rio stop`, then "
                "`rio chat` from this shell).")
    from rio.agent.failures import keyless_choices
    return (f"No API key is set for {name}: messages will fail until `rio key set {name}` "
            f"stores one (or {var} is set before Rio starts); {keyless_choices()}.")


def explain_key_mismatch(kind: Any, provider: str | None, attached: Attached) -> None:
    """agent.not_configured from a Rio that was already running, while this shell has the
    key in its environment: say why the two disagree (the core cannot see it) and the fix."""
    if kind != "agent.not_configured" or attached.started is not None:
        return
    from rio.agent.failures import key_env_var
    name, _ = _provider_and_endpoint(provider, None)
    var = key_env_var(name)
    if not os.environ.get(var, "").strip():
        return
    print(f"  {var} is set in this shell, but the Rio already running (instance "
          f"{attached.name or '?'}) was started without it and cannot see this shell's "
          f"environment. Store the key where it reads it: `rio key set {name}` (e.g. "
          f"`printenv {var} | rio key set {name}`), or stop it (`rio stop`) and run "
          "`rio chat` from this shell so the instance it starts inherits the variable.",
          file=sys.stderr)


def _code_for(err: RioError) -> int:
    return EXIT_UNREACHABLE if err.kind in ("bus.unreachable", "bus.timeout",
                                            "bus.closed") else EXIT_ERROR


def _print_error(err: RioError) -> None:
    """One line, as every ``rio`` error (rio/cli/main.py); a missing API key's next action
    also names the ways that need no key."""
    from rio.agent.failures import keyless_choices, missing_key
    from rio.protocol.errors import error_line
    following = err.next
    if missing_key(err.kind, err.message):
        following = f"{following.rstrip('. ')}; {keyless_choices()}"
    print(error_line(err.kind, err.message, following), file=sys.stderr, flush=True)


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
    from rio.agent.failures import key_env_var
    from rio.agent.secrets import SecretStore
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
    from rio.agent.secrets import SecretStore
    store = SecretStore()
    if args.provider:
        names = [args.provider]
    else:
        try:
            from rio.providers import discover_providers
            names = sorted(discover_providers()) or ["anthropic", "openai"]
        except Exception:  # noqa: BLE001 -- a provider plug-in that fails to load must not cost the listing
            names = ["anthropic", "openai"]
    from rio.agent.failures import key_env_var
    for name in names:
        print(store.status(name))
        if os.environ.get(key_env_var(name), "").strip():
            # What `rio chat` against a running instance would otherwise contradict.
            print(f"  ({key_env_var(name)} is this shell's: a Rio started from here uses it, "
                  "one already running does not see it — `rio key set "
                  f"{name}` stores the key for every instance.)")
    return EXIT_OK


def cmd_key_delete(args: argparse.Namespace) -> int:
    from rio.agent.failures import key_env_var
    from rio.agent.secrets import SecretStore
    store = SecretStore()
    removed = store.delete(args.provider)
    print(f"Deleted the stored {args.provider} API key." if removed
          else f"No stored {args.provider} API key to delete.")
    var = key_env_var(args.provider)
    if os.environ.get(var, "").strip():
        print(f"{var} is still set in this environment; unset it to stop using that key.")
    return EXIT_OK
