"""What `rio chat` shows and asks for an ACP agent's own events (``rio chat --agent NAME``).

The agent's text, tools and write proposals come as the usual ``agent.*`` events and are
rendered by :mod:`ui.term.chat`; this module adds the ones only an ACP agent sends:

* ``agent.permission`` — the agent asks before one of its own tools: its options are shown and
  the answer (an option *kind*) goes back with ``agent.permission_answer``: asked at the
  prompt, or by ``--approve yes`` (allow once) / ``no`` (reject once). A shell command Rio
  flags as dangerous still needs a person, as for the API path;
* ``agent.sign_in`` — sign-in needed: the command to run in a terminal, the variables to set;
* ``agent.changed_files`` — files the agent's own shell changed on disk, with their diffs;
* ``agent.restarted`` / ``agent.silent`` / ``agent.note`` — one line each.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping, Protocol

if TYPE_CHECKING:
    from actors.bus.client import BusConnection

#: What a person types at the permission question → the option kind answered.
_KEYS = {"y": "allow_once", "yes": "allow_once", "a": "allow_always", "always": "allow_always",
         "n": "reject_once", "no": "reject_once"}


class ChatTurn(Protocol):
    """What these use of a turn's result (:class:`ui.term.chat.TurnResult`)."""

    turn: str | None
    rejected_by_policy: int


class ChatStyle(Protocol):
    """The chat's colours (:class:`ui.term.chat.Style`)."""

    def __call__(self, role: str, text: str) -> str: ...
    def diff(self, diff: str) -> str: ...


class AcpChat(Protocol):
    """What these use of the chat (:class:`ui.term.chat.ChatClient`; a Protocol, since that
    module imports this one when an ACP agent's first event comes)."""

    @property
    def conn(self) -> BusConnection: ...
    @property
    def conversation(self) -> str: ...
    @property
    def approve(self) -> str: ...
    @property
    def allow_dangerous(self) -> bool: ...
    @property
    def can_ask(self) -> bool: ...
    @property
    def style(self) -> ChatStyle: ...

    def _line(self, text: str) -> None: ...
    def ask_choice(self, prompt: str, answers: Mapping[str, str]) -> str | None: ...


def _command_of(data: Mapping[str, Any]) -> str | None:
    """The shell command a permission question is about, when it names one."""
    value = data.get("input")
    if isinstance(value, Mapping):
        for key in ("command", "cmd"):
            if isinstance(value.get(key), str):
                return str(value[key])
            if isinstance(value.get(key), list):
                return " ".join(str(v) for v in value[key])
    if data.get("tool_kind") == "execute" and isinstance(data.get("title"), str):
        return str(data["title"])
    return None


def dangerous(data: Mapping[str, Any]) -> str | None:
    command = _command_of(data)
    if not command:
        return None
    from rio.agent.danger import classify
    found = classify(command)
    return None if found is None else (found.reason or found.rule)


def permission(chat: AcpChat, data: Mapping[str, Any], result: ChatTurn) -> None:
    """Show the question, decide (prompt or policy) and answer it."""
    s = chat.style
    options = [o for o in data.get("options") or () if isinstance(o, Mapping)]
    kinds = {str(o.get("kind")) for o in options}
    chat._line(s("warn", f"The agent asks permission: {data.get('title') or 'a tool call'}"))
    command = _command_of(data)
    if command and command != data.get("title"):
        chat._line(s("dim", f"    $ {command}"))
    chat._line(s("dim", "  options: " + ", ".join(f"{o.get('name')} ({o.get('kind')})"
                                                   for o in options)))
    kind = _decide(chat, data, result, kinds)
    if kind is not None and kind not in kinds:
        kind = "allow_once" if kind == "allow_always" and "allow_once" in kinds else \
            next((k for k in kinds if k.startswith(kind.split("_")[0])), None)
    reply = chat.conn.call("agent.permission_answer", {
        "conversation": chat.conversation, "turn": result.turn,
        "request": str(data.get("request")), "kind": kind}, timeout=15.0)
    said = kind or "declined"
    chat._line(s("dim", f"  answered: {said}" + ("" if reply.get("answered")
                                                  else " (too late: the question had closed)")))


def _decide(chat: AcpChat, data: Mapping[str, Any], result: ChatTurn, kinds: set[str]) -> str | None:
    why = dangerous(data)
    if why and chat.approve == "yes" and not chat.allow_dangerous:
        if not chat.can_ask:
            result.rejected_by_policy += 1
            chat._line(chat.style("err", f"  refused: a dangerous command ({why}) needs a "
                                  "person to allow it, and there is no terminal to ask."))
            return "reject_once"
        chat._line(chat.style("warn", f"  ! dangerous ({why}): --approve yes does not cover "
                              "it:"))
        return _ask(chat, result)
    if chat.approve == "yes":
        chat._line(chat.style("dim", "  allowing once (--approve yes)"))
        return "allow_once"
    if chat.approve == "no":
        result.rejected_by_policy += 1
        chat._line(chat.style("dim", "  rejecting (--approve no)"))
        return "reject_once"
    return _ask(chat, result)


def _ask(chat: AcpChat, result: ChatTurn) -> str:
    answer = chat.ask_choice("Allow? [y]es once / [a]lways / [n]o: ", _KEYS)
    if answer is None:
        result.rejected_by_policy += 1
        return "reject_once"
    return answer


def sign_in(chat: AcpChat, data: Mapping[str, Any]) -> None:
    if data.get("state") != "needed":
        chat._line(chat.style("dim", f"  signed in ({data.get('method')})"))
        return
    chat._line(chat.style("warn", f"The agent {data.get('agent') or ''} needs you to sign in:"))
    for m in data.get("methods") or ():
        if not isinstance(m, Mapping):
            continue
        if m.get("type") == "terminal":
            chat._line(f"  run in a terminal:  {m.get('shell') or ' '.join(m.get('command') or ())}")
        elif m.get("type") == "env_var":
            chat._line(f"  or set {', '.join(map(str, m.get('vars') or ()))} and restart Rio")
        else:
            chat._line(f"  or sign in through the agent: {m.get('name')} (in the desktop's "
                       "agent panel)")


def changed_files(chat: AcpChat, data: Mapping[str, Any]) -> None:
    files = [f for f in data.get("files") or () if isinstance(f, Mapping)]
    chat._line(chat.style("warn", f"The agent changed {len(files)} file(s) on disk itself "
                          "(not through Rio's proposals):"))
    for f in files:
        chat._line(f"  {f.get('change')}: {f.get('path')}")
        if f.get("diff"):
            chat._line(chat.style.diff(str(f["diff"])))
        elif f.get("note"):
            chat._line(chat.style("dim", f"    ({f['note']})"))
    if data.get("more"):
        chat._line(chat.style("dim", f"  … and {data['more']} more"))
    unchecked = data.get("unchecked")
    if isinstance(unchecked, Mapping) and unchecked.get("note"):
        chat._line(chat.style("warn", f"  {unchecked['note']}"))


def show(chat: AcpChat, topic: str, data: Mapping[str, Any], result: ChatTurn) -> bool:
    """Render an ACP-only event; False when ``topic`` is not one."""
    if topic == "agent.permission":
        permission(chat, data, result)
    elif topic == "agent.sign_in":
        sign_in(chat, data)
    elif topic == "agent.changed_files":
        changed_files(chat, data)
    elif topic == "agent.restarted":
        chat._line(chat.style("warn", str(data.get("message") or "The agent was restarted.")))
    elif topic == "agent.note":
        chat._line(chat.style("dim", f"  ({data.get('text') or data.get('note')})"))
    elif topic == "agent.silent":
        if not data.get("resumed"):
            chat._line(chat.style("warn", f"The agent has sent nothing for {data.get('seconds')}"
                                  " s (Ctrl+C stops it; the protocol log: `rio agents log "
                                  f"{chat.conversation}`)."))
    else:
        return False
    return True
