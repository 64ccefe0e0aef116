"""The terminal client of the agent: one turn, or a conversation at the prompt.

:class:`ChatClient` sends ``agent.send`` and renders the turn's ``agent.*`` events as they
arrive: text deltas written straight through, tool activity as one short line each, proposals
with their unified diff (coloured only on a terminal) and a question — approve, reject, or
always allow — answered at the prompt, or by policy for scripts (``--approve yes|no``).

Events are only *collected* by the bus handler and rendered by the loop afterwards: answering
a proposal is a request, and a request made from inside the bus's event dispatch would re-enter
it.

Exit codes, from how the turn ended (docs/agent.md):

    0 done   1 error   2 Rio unreachable   3 usage   4 stopped   5 rejected by policy
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Literal, Mapping, TextIO

from rio.agent.failures import CONFIG_ERRORS, keyless_choices, missing_key, shown_details
from rio.protocol.errors import RioError, error_from_wire, error_line
from rio.protocol.frames import Reply, thaw
from rio.protocol.tool_input import short_input

if TYPE_CHECKING:
    from actors.bus.client import BusConnection

EXIT_DONE, EXIT_ERROR, EXIT_UNREACHABLE, EXIT_USAGE, EXIT_STOPPED, EXIT_REJECTED = range(6)

Approve = Literal["ask", "yes", "no"]

#: A quiet stream this long makes the client check that Rio is still there.
SILENCE_CHECK_S = 5.0
#: After Ctrl+C (agent.stop), how long to wait for the turn to say it stopped.
STOP_WAIT_S = 5.0

_ANSI = {"add": "\033[32m", "del": "\033[31m", "hunk": "\033[36m", "dim": "\033[2m",
         "warn": "\033[33;1m", "err": "\033[31;1m", "reset": "\033[0m"}


class Style:
    """ANSI colours, or none at all (not a terminal, or NO_COLOR)."""

    def __init__(self, enabled: bool):
        self.enabled = enabled

    def __call__(self, role: str, text: str) -> str:
        return f"{_ANSI[role]}{text}{_ANSI['reset']}" if self.enabled else text

    def diff(self, diff: str) -> str:
        lines = []
        for line in diff.splitlines():
            if line.startswith(("+++", "---")):
                lines.append(self("dim", line))
            elif line.startswith("+"):
                lines.append(self("add", line))
            elif line.startswith("-"):
                lines.append(self("del", line))
            elif line.startswith("@@"):
                lines.append(self("hunk", line))
            else:
                lines.append(line)
        return "\n".join(lines)


#: run_command output in the chat: its last lines, the earlier ones folded away.
SHOWN_OUTPUT_LINES = 6


def fold_output(output: str, lines: int = SHOWN_OUTPUT_LINES) -> str:
    """A command's output as the model got it, indented, only its last ``lines`` lines."""
    rows = output.rstrip("\n").splitlines()
    if rows and (rows[0].startswith("exit code") or "(exit code" in rows[0]):
        rows = rows[1:]                     # the summary line says it already
    if not rows:
        return "    │ (no output)"
    if len(rows) > lines:
        rows = [f"… {len(rows) - lines} earlier lines folded …"] + rows[-lines:]
    return "\n".join("    │ " + r for r in rows)


def indent_block(text: str, prefix: str = "    │ ") -> str:
    """Text quoted under an error line, every line of it (a multi-line JSON body too)."""
    return "\n".join(prefix + line for line in text.rstrip("\n").splitlines() or [""])


#: What a person types at a proposal → the decision (``agent.approve``).
_APPLY_ANSWERS = {"y": "approve", "yes": "approve", "n": "reject", "no": "reject",
                  "a": "always", "always": "always"}


@dataclass
class TurnResult:
    turn: str | None = None
    state: str | None = None                 # done | stopped | error
    error: Mapping[str, Any] | None = None
    rejected_by_policy: int = 0
    text_seen: bool = False
    buffers: list[str] = field(default_factory=list)   # what the turn changed (unsaved)

    @property
    def exit_code(self) -> int:
        if self.state == "done":
            return EXIT_REJECTED if self.rejected_by_policy else EXIT_DONE
        if self.state == "stopped":
            return EXIT_STOPPED
        return EXIT_ERROR


@dataclass
class _Inbox:
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def __call__(self, event: Any) -> None:
        self.events.append((event.topic, thaw(event.data)))


class ChatClient:
    """One conversation over one bus connection (subscribed to ``agent.``)."""

    def __init__(self, conn: BusConnection, conversation: str, *, out: TextIO = sys.stdout,
                 err: TextIO = sys.stderr, ask: Callable[[str], str] | None = None,
                 approve: Approve = "ask", color: bool = False, allow_dangerous: bool = False,
                 can_ask: bool | None = None):
        self.conn = conn
        self.conversation = conversation
        self.out = out
        self.err = err
        self.ask = ask or input
        self.approve = approve
        #: --allow-dangerous: --approve yes may run what rio.agent.danger flags (never a default).
        self.allow_dangerous = allow_dangerous
        #: A person at a terminal who can answer (None: stdin is a terminal).
        self.can_ask = sys.stdin.isatty() if can_ask is None else can_ask
        #: Buffers agent turns changed that are not saved yet, and the last turn's ones.
        self.unsaved: dict[str, str] = {}
        self.last_turn_buffers: list[str] = []
        #: Save what a turn changed when it ends (``rio chat --save``).
        self.autosave = False
        self.style = Style(color)
        #: A turn of this client got further than its configuration (an answer, a stop, an
        #: error of the model or the network): False while every turn failed before any model
        #: was asked (no API key …), so a conversation `rio chat` made for it can be discarded.
        self.reached_model = False
        self.inbox = _Inbox()
        conn.subscribe("agent.", self.inbox)
        # A core restart: say so once; buffers come back under their ids (ADR-0020).
        conn.subscribe("buffer.recovered", self.inbox)
        self._line_start = True

    # --- one turn ----------------------------------------------------------------------------
    def send(self, text: str) -> TurnResult:
        """Send ``text`` and render the turn until it ends; Ctrl+C stops it."""
        result = TurnResult()
        box: list[Reply] = []
        self.conn.request("agent.send", {"conversation": self.conversation, "text": text},
                          box.append, timeout=30.0)
        stop_sent_at: float | None = None
        last_heard = time.monotonic()
        while result.state is None:
            try:
                heard = self._pump(0.05)
                if box and result.turn is None:
                    reply = box.pop()
                    if not reply.ok:
                        raise error_from_wire(thaw(reply.error))
                    result.turn = str(thaw(reply.result)["turn"])
                if result.turn is not None:
                    heard = self._render(result) or heard
                now = time.monotonic()
                if heard:
                    last_heard = now
                elif now - last_heard > SILENCE_CHECK_S:
                    self.conn.call("system.ping", {}, timeout=5.0)  # raises when Rio is gone
                    last_heard = now
                if stop_sent_at is not None and now - stop_sent_at > STOP_WAIT_S:
                    result.state = "stopped"
            except KeyboardInterrupt:
                if stop_sent_at is not None:
                    result.state = "stopped"  # a second Ctrl+C: leave without waiting
                    break
                self._newline()
                self.err.write(self.style("warn", "Stopping the turn…") + "\n")
                stop_sent_at = time.monotonic()
                self.conn.call("agent.stop", {"conversation": self.conversation}, timeout=5.0)
        self._newline()
        kind = (result.error or {}).get("kind")
        if result.state != "error" or result.text_seen or kind not in CONFIG_ERRORS:
            self.reached_model = True
        return result

    def _pump(self, timeout_s: float) -> bool:
        return self.conn.wait(timeout_s)

    def _render(self, result: TurnResult) -> bool:
        """Render the collected events of this turn; True when any were for it."""
        pending, self.inbox.events = self.inbox.events, []
        any_ours = False
        for topic, data in pending:
            if topic == "buffer.recovered":
                self._recovered(data)
                continue
            if data.get("conversation") != self.conversation or data.get("turn") != result.turn:
                continue
            any_ours = True
            self._show(topic, data, result)
        return any_ours

    def _show(self, topic: str, data: Mapping[str, Any], result: TurnResult) -> None:
        s = self.style
        if topic == "agent.delta":
            text = str(data.get("text", ""))
            if text:
                self.out.write(text)
                self.out.flush()
                self._line_start = text.endswith("\n")
                result.text_seen = True
        elif topic == "agent.tool":
            self._line(s("dim", f"· {data.get('name')} {short_input(data.get('input', {}))}"))
        elif topic == "agent.tool_result":
            mark = "✓" if data.get("ok") else "✗"
            name = str(data.get("name"))
            summary = " ".join(str(data.get("summary", "")).split())
            if summary.startswith(f"{name}: "):     # "propose_create: rejected", said once
                summary = summary[len(name) + 2:]
            summary = summary[:120]
            more = " (truncated)" if data.get("truncated") else ""
            self._line(s("dim", f"  {mark} {name}: {summary}{more}"))
            if data.get("output"):
                self._line(s("dim", fold_output(str(data["output"]))))
        elif topic == "agent.propose":
            self._propose(data, result)
        elif topic == "agent.message":
            if not result.text_seen and data.get("text"):
                self._line(str(data["text"]))
        elif topic == "agent.error":
            result.error = dict(data)
            self._error(data)
        elif topic == "agent.turn" and data.get("state") in ("done", "stopped", "error"):
            result.state = str(data["state"])
            result.buffers = [str(b) for b in data.get("buffers") or ()]
            if data.get("error") and result.error is None:
                result.error = dict(data["error"])
                if result.state == "error":
                    self._error(data["error"])
            if result.state == "stopped":
                self._line(s("warn", "(stopped)"))
        else:
            from ui.term import chat_acp  # an ACP agent's own events (rio chat --agent)
            chat_acp.show(self, topic, data, result)

    def _propose(self, data: Mapping[str, Any], result: TurnResult) -> None:
        s = self.style
        kind = data.get("kind")
        if kind == "command":
            head = f"The agent wants to run in {data.get('cwd') or '.'}:  {data.get('command')}"
        elif kind == "create":
            head = f"The agent proposes a new file {data.get('path')}:"
        else:
            head = f"The agent proposes an edit to {data.get('path')}:"
        self._line(s("warn", head))
        danger = data.get("danger")
        if danger:
            why = danger.get("reason") or danger.get("rule") if isinstance(danger, Mapping) \
                else danger
            self._line(s("err", f"  ! dangerous: {why}"))
        if data.get("diff"):
            self._line(s.diff(str(data["diff"])))
        decision = self._decide(result, data)
        reply = self.conn.call("agent.approve", {"turn": result.turn,
                                                 "proposal": data.get("proposal"),
                                                 "decision": decision}, timeout=15.0)
        if decision == "reject":
            self._line(s("dim", "  rejected"))
        elif reply.get("applied"):
            self._line(s("dim", "  applied" + (" (always allowed from now on)"
                                               if decision == "always" else "")))
        else:
            self._line(s("warn", f"  not applied: {reply.get('reason', 'refused')}"))

    def _decide(self, result: TurnResult, data: Mapping[str, Any]) -> str:
        if data.get("danger") and self.approve == "yes":
            if self.allow_dangerous:
                self._line(self.style("dim", "  approving (--approve yes --allow-dangerous)"))
                return "approve"
            if not self.can_ask:
                # A command Rio flags as dangerous always asks a person; a script has none.
                result.rejected_by_policy += 1
                self._line(self.style("err", "  refused: a dangerous command needs a person "
                                      "to approve it, and there is no terminal to ask. Run "
                                      "it yourself, or pass --allow-dangerous to let "
                                      "--approve yes run it."))
                return "reject"
            self._line(self.style("warn", "  --approve yes does not cover dangerous commands:"))
            return self._ask_person(result)
        if self.approve == "yes":
            self._line(self.style("dim", "  approving (--approve yes)"))
            return "approve"
        if self.approve == "no":
            result.rejected_by_policy += 1
            self._line(self.style("dim", "  rejecting (--approve no)"))
            return "reject"
        return self._ask_person(result)

    def _ask_person(self, result: TurnResult) -> str:
        answer = self.ask_choice("Apply? [y]es / [n]o / [a]lways: ", _APPLY_ANSWERS)
        if answer is None:
            result.rejected_by_policy += 1
            return "reject"
        return answer

    def ask_choice(self, prompt: str, answers: Mapping[str, str]) -> str | None:
        """Ask until one of ``answers`` (what is typed → what it means) is typed; None when
        nobody can answer (stdin closed), said once: a write or an agent's tool is then
        refused, never allowed by default."""
        while True:
            try:
                answer = self.ask(prompt).strip().lower()
            except EOFError:
                self._line(self.style("dim", "  rejecting (no one to ask)"))
                return None
            if answer in answers:
                return answers[answer]

    # --- what agent turns left unsaved ----------------------------------------------------------
    def note_unsaved(self, result: TurnResult, *, at_prompt: bool) -> bool:
        """After a turn: remember the buffers it left unsaved and say which, and what to do
        (or save them: ``autosave``, ``rio chat --save``). False when saving failed."""
        self.last_turn_buffers = list(result.buffers)
        for bid in result.buffers:
            self.unsaved.setdefault(bid, bid)
        self._refresh_unsaved()
        if not self.unsaved:
            return True
        if self.autosave:
            return self.save_unsaved()
        names = ", ".join(sorted(self.unsaved.values()))
        how = ("/save writes them, /undo takes back this turn's change, /diff shows them"
               if at_prompt else "`rio chat --save` saves at the end of a turn")
        self._line(self.style("warn", f"Unsaved agent changes: {names}") + " — in Rio's "
                   f"editor and journal, not on disk yet; {how}.")
        return True

    def _recovered(self, data: Mapping[str, Any]) -> None:
        names = [str(b.get("path") or b.get("name") or b.get("buffer"))
                 for b in data.get("buffers") or ()]
        self._line(self.style("warn", "Rio's core restarted") + (
            f"; unsaved changes were recovered: {', '.join(names)}." if names else "."))

    def _refresh_unsaved(self) -> None:
        for bid in list(self.unsaved):
            try:
                info = self.conn.call("buffer.info", {"buffer": bid}, timeout=10.0)
            except RioError as err:
                if not err.kind.startswith("bus."):   # a restarting core still holds it
                    del self.unsaved[bid]          # closed (saved or discarded elsewhere)
                continue
            if info.get("dirty"):
                self.unsaved[bid] = str(info.get("path") or bid)
            else:
                del self.unsaved[bid]

    def save_unsaved(self) -> bool:
        """/save and --save: write every buffer agent turns left unsaved; False on a failure."""
        self._refresh_unsaved()
        if not self.unsaved:
            self._line("Nothing unsaved from the agent.")
            return True
        ok = True
        for bid, path in sorted(self.unsaved.items(), key=lambda kv: kv[1]):
            try:
                self.conn.call("buffer.save", {"buffer": bid}, timeout=30.0)
                self._line(f"saved {path}")
            except RioError as err:
                ok = False
                self._error(err.to_wire())
        self._refresh_unsaved()
        return ok

    def undo_last_turn(self) -> None:
        """/undo: the last turn's one undo step ("Agent: …") in each buffer it changed."""
        if not self.last_turn_buffers:
            self._line("The last turn changed no buffer.")
            return
        for bid in self.last_turn_buffers:
            try:
                info = self.conn.call("buffer.info", {"buffer": bid}, timeout=10.0)
                if not str(info.get("undo_label") or "").startswith("Agent"):
                    why = ("the core restarted since: the change is part of the recovered text "
                           "(/diff shows it)" if info.get("recovered") else
                           "the last change to it is not the agent's any more")
                    self._line(f"not undone in {info.get('path') or bid}: {why}")
                    continue
                self.conn.call("buffer.undo", {"buffer": bid, "origin": "cli"}, timeout=10.0)
                self._line(f"undid the agent's change to {info.get('path') or bid}")
            except RioError as err:
                self._error(err.to_wire())
        self.last_turn_buffers = []
        self._refresh_unsaved()

    def show_diff(self) -> None:
        """/diff: what saving would change on disk, per unsaved buffer."""
        import difflib
        self._refresh_unsaved()
        if not self.unsaved:
            self._line("Nothing unsaved from the agent.")
            return
        for bid, path in sorted(self.unsaved.items(), key=lambda kv: kv[1]):
            try:
                now = self.conn.call("buffer.text", {"buffer": bid}, timeout=10.0)["text"]
                try:
                    disk = self.conn.call("fs.read", {"path": path}, timeout=10.0)["text"]
                except RioError as err:
                    if err.kind != "path.not_found":
                        raise
                    disk = ""
            except RioError as err:
                self._error(err.to_wire())
                continue
            diff = "".join(difflib.unified_diff(disk.splitlines(True), now.splitlines(True),
                                                f"a/{path}", f"b/{path}"))
            self._line(self.style.diff(diff) if diff else f"{path}: no difference")

    # --- output helpers ----------------------------------------------------------------------
    def _newline(self) -> None:
        if not self._line_start:
            self.out.write("\n")
            self.out.flush()
            self._line_start = True

    def _line(self, text: str) -> None:
        self._newline()
        self.out.write(text + "\n")
        self.out.flush()

    def _error(self, data: Mapping[str, Any]) -> None:
        """The error as every ``rio`` error: one line, ``rio: <kind>: <message> — <next>``
        (a missing API key's next action also names the ways that need no key)."""
        self._newline()
        kind, message = str(data.get("kind") or "internal.unknown"), str(data.get("message"))
        following = str(data.get("next") or "")
        if missing_key(kind, message):
            following = f"{following.rstrip('. ')}; {keyless_choices()}"
        self.err.write(self.style("err", error_line(kind, message, following)) + "\n")
        # An ACP agent's own words and its error's details, whole: the cause of a model
        # server's 400 is there, not in "Internal error" (rio/agent/failures.py).
        for label, text in shown_details(str(data.get("message") or ""), data.get("details")):
            self.err.write(self.style("dim", f"  {label}:") + "\n" + indent_block(text) + "\n")
        self.err.flush()


HELP = """\
Type a message for the agent. Commands (handled here, never sent to the model):
  /save         save the files the agent changed (they are unsaved in Rio until then)
  /undo         take back the last turn's changes (one undo step per file)
  /diff         show what saving would change on disk
  /mode [MODE]  show or set the approval mode (review, auto_buffer, allow_all)
  /help         this list
  /quit         leave (Ctrl+D too); Ctrl+C stops a running turn
"""


def interactive(client: ChatClient, *, read: Callable[[str], str] = input,
                out: TextIO = sys.stdout, notice: str | None = None) -> int:
    """The conversation loop: a prompt, a turn, again. ``/quit`` or end of input ends it.
    ``notice`` is said before the first prompt (e.g. that no API key is set)."""
    code = EXIT_DONE
    out.write(f"Conversation {client.conversation}. Type a message; /help lists the commands, "
              "/quit (or Ctrl+D) leaves. Ctrl+C stops a turn.\n")
    if notice:
        out.write(client.style("warn", notice) + "\n")
    while True:
        try:
            text = read("you> ")
        except EOFError:
            out.write("\n")
            return code
        except KeyboardInterrupt:
            out.write("\n")
            return code
        raw, text = text, text.strip()
        if not text:
            continue
        if text in ("/quit", "/exit"):
            return code
        if raw.startswith("/"):
            word = text.split()[0]
            try:
                if word in ("/help", "/?"):
                    out.write(HELP)
                elif word == "/save":
                    client.save_unsaved()
                elif word == "/undo":
                    client.undo_last_turn()
                elif word == "/diff":
                    client.show_diff()
                elif word == "/mode":
                    mode = text[len("/mode"):].strip()
                    got = client.conn.call("agent.mode", {"mode": mode} if mode else {},
                                           timeout=10.0)
                    out.write(f"mode: {got.get('mode', got) if isinstance(got, Mapping) else got}\n")
                else:
                    out.write(f"unknown command {word}; /help lists them (start the line with "
                              "a space to send it to the agent as it is)\n")
            except RioError as err:
                out.write(error_line(err.kind, err.message, err.next) + "\n")
            continue
        try:
            result = client.send(text)
        except RioError as err:
            client._error(err.to_wire())
            if err.kind in ("bus.unreachable", "bus.timeout", "bus.closed"):
                return EXIT_UNREACHABLE
            code = EXIT_ERROR
            continue
        code = result.exit_code
        try:
            client.note_unsaved(result, at_prompt=True)
        except RioError as err:
            client._error(err.to_wire())
