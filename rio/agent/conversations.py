"""Conversations with the agent, as the core keeps them: records, and the store on disk.

A conversation lives in the project's state folder (``rio.config.instance.project_state_dir(root)``
``/conversations/``) as two files, both mode 0600 in a 0700 folder:

* ``<id>.json``  -- what it is called and which provider it talks to. Small; rewritten whole,
  atomically (temp file, fsync, ``os.replace``).
* ``<id>.jsonl`` -- what happened, one JSON object per line, only ever appended and fsynced
  after each record: ``turn`` (a turn began with the user's text), ``message`` (a Message of
  that turn, in order), ``end`` (how the turn ended) and ``shown`` (what the turn showed: its
  events, compacted and bounded by :mod:`rio.agent.shown`; written once it ended, absent for
  turns recorded before it was kept — a reader draws those from their messages). A reader
  skips a kind it does not know, so an older Rio reads a newer log and the other way round.

Why a log and not one rewritten file: a crash (kill -9, power) in the middle of a write can
only tear the *last* line, and a torn line is skipped on load, so nothing already recorded is
lost; a rewrite would put the whole history at risk on every message. A turn found still
``running`` on load ended with Rio, and is reported as an error turn.

Turn ids are ``<conversation>.<n>`` (n counts from 1), so ``agent.approve {turn, ...}``
names its conversation without a lookup table that a restart would forget.
"""

from __future__ import annotations

import json
import os
import re
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Literal, Mapping, Sequence

from rio.agent.output_limits import bounded_history, bounded_message
from rio.protocol.errors import AgentError, FileError
from rio.providers.base import Message, ToolResultBlock

TurnStatus = Literal["running", "done", "stopped", "error"]
TURN_STATUSES: tuple[str, ...] = ("running", "done", "stopped", "error")

#: What a model is told for a tool call that never got its result (a new message arrived
#: while a proposal waited, or the session died): the API refuses a history with a dangling
#: tool_use, and the model must know the call did not run.
INTERRUPTED_RESULT = ("interrupted: the user sent a new message before this call was "
                      "answered; it did not run")
DEFAULT_TITLE = "New conversation"
TITLE_CHARS = 60
#: What the turns of one ``agent.history`` showed, at most (JSON characters; each turn's own
#: record is bounded by rio/agent/shown.py): the newest turns keep theirs.
SHOWN_HISTORY_CHARS = 16 * 1024 * 1024

_ID_OK = re.compile(r"^[a-z0-9]{6,32}$")


def new_conversation_id() -> str:
    return uuid.uuid4().hex[:12]


def check_conversation_id(cid: Any) -> str:
    """Ids become file and process names: only short lowercase hex-like words get through."""
    if not isinstance(cid, str) or not _ID_OK.match(cid):
        raise AgentError("unknown_conversation", f"There is no conversation {cid!r}.",
                         "List the conversations with agent.list.")
    return cid


def turn_id(conversation: str, number: int) -> str:
    return f"{conversation}.{number}"


def conversation_of_turn(turn: Any) -> str:
    """The conversation a turn id belongs to (``abc123.4`` → ``abc123``)."""
    if isinstance(turn, str) and "." in turn:
        cid, _, number = turn.rpartition(".")
        if number.isdigit():
            return check_conversation_id(cid)
    raise AgentError("unknown_turn", f"There is no turn {turn!r}.",
                     "Use the turn id from agent.send's reply or the agent.* events.")


def short_title(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= TITLE_CHARS else line[:TITLE_CHARS - 1].rstrip() + "…"


def undo_label(text: str) -> str:
    """The label of a turn's merged undo step: "Agent: <first 60 chars of the message>"."""
    return "Agent: " + " ".join(text.split())[:TITLE_CHARS]


# --- records ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class TurnRecord:
    turn: str
    text: str
    status: TurnStatus
    started: float
    ended: float | None = None
    error: Mapping[str, Any] | None = None
    #: what the turn changed, by any path (ADR-0034): ``{"paths": [project paths of the
    #: buffers it left edited], "files": [{path, change}] written behind Rio's back}``
    changes: Mapping[str, Any] | None = None
    #: what the turn showed (rio/agent/shown.py): its events as ``{topic, data}``, None for a
    #: turn recorded before this was kept; ``shown_cut``: the record is not whole
    shown: tuple[Mapping[str, Any], ...] | None = None
    shown_cut: bool = False

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"turn": self.turn, "text": self.text, "status": self.status,
                                "started": self.started, "ended": self.ended}
        if self.error is not None:
            wire["error"] = dict(self.error)
        if self.changes:
            wire["changes"] = dict(self.changes)
        if self.shown is not None:
            wire["shown"] = [dict(e) for e in self.shown]
            if self.shown_cut:
                wire["shown_cut"] = True
        return wire


@dataclass(frozen=True)
class Conversation:
    conversation: str
    title: str
    provider: str | None
    created: float
    updated: float
    endpoint: str | None = None
    model: str | None = None
    messages: tuple[Message, ...] = ()
    turns: tuple[TurnRecord, ...] = ()
    #: An ACP agent's discovery name (``claude``, ``codex`` …) when this conversation drives
    #: one instead of a model API; then ``provider`` is unused.
    agent: str | None = None
    #: The agent's own session id, kept so a restarted agent resumes it (``session/load``).
    acp_session: str | None = None

    @property
    def state(self) -> str:
        """"running" while a turn runs, else "idle"."""
        return "running" if self.turns and self.turns[-1].status == "running" else "idle"

    @property
    def running_turn(self) -> TurnRecord | None:
        return self.turns[-1] if self.state == "running" else None

    def summary(self) -> dict[str, Any]:
        out = {"conversation": self.conversation, "title": self.title,
               "provider": self.provider, "turns": len(self.turns), "updated": self.updated,
               "state": self.state}
        if self.agent:
            out["agent"] = self.agent
        return out

    def history(self) -> dict[str, Any]:
        """What ``agent.history`` answers — bounded whatever the log holds (ADR-0041): the
        messages' text to HISTORY_CHARS (oldest cut first), what the turns showed to
        SHOWN_HISTORY_CHARS (the oldest turns' left out, marked ``shown_cut``)."""
        turns: list[dict[str, Any]] = []
        left = SHOWN_HISTORY_CHARS
        for t in reversed(self.turns):
            wire = t.to_wire()
            if t.shown is not None:
                size = len(json.dumps(wire.get("shown"), ensure_ascii=False, default=str))
                if size > left:
                    wire.pop("shown", None)
                    wire["shown_cut"] = True
                left = max(0, left - size)
            turns.append(wire)
        turns.reverse()
        return {"conversation": self.conversation, "title": self.title,
                "provider": self.provider, "endpoint": self.endpoint, "model": self.model,
                "agent": self.agent,
                "messages": [m.to_dict() for m in bounded_history(self.messages)],
                "turns": turns}

    def meta(self) -> dict[str, Any]:
        return {"version": 1, "conversation": self.conversation, "title": self.title,
                "provider": self.provider, "endpoint": self.endpoint, "model": self.model,
                "created": self.created, "updated": self.updated, "agent": self.agent,
                "acp_session": self.acp_session}


def dangling_tool_calls(messages: Sequence[Message]) -> tuple[str, ...]:
    """Ids of tool calls in the last assistant message that no later message answers."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "assistant":
            asked = [b.id for b in messages[index].tool_uses]
            answered = {b.tool_use_id for m in messages[index + 1:] for b in m.content
                        if isinstance(b, ToolResultBlock)}
            return tuple(i for i in asked if i not in answered)
    return ()


def interrupted_results(call_ids: Sequence[str]) -> Message:
    return Message.tool_results(tuple(ToolResultBlock(i, INTERRUPTED_RESULT, is_error=True)
                                      for i in call_ids))


# --- the store ------------------------------------------------------------------------------------

@dataclass
class _Loaded:
    conversation: Conversation
    needs_newline: bool = False  # the log ends in a torn line: start the next record afresh


class ConversationStore:
    """Conversations of one project. Not thread-safe: one owner (the conversations actor)."""

    def __init__(self, folder: Path, *, clock: Callable[[], float] = time.time):
        self.folder = Path(folder)
        self._clock = clock
        self._cache: dict[str, _Loaded] = {}
        self._scanned = False

    # --- reading ---------------------------------------------------------------------------
    def get(self, cid: str) -> Conversation:
        return self._load(check_conversation_id(cid)).conversation

    def list(self) -> list[Conversation]:
        """Every conversation, most recently updated first."""
        if not self._scanned and self.folder.is_dir():
            for path in self.folder.glob("*.json"):
                if _ID_OK.match(path.stem) and path.stem not in self._cache:
                    try:
                        self._load(path.stem)
                    except (AgentError, FileError):
                        continue  # an unreadable one is skipped, not fatal to the list
            self._scanned = True
        return sorted((c.conversation for c in self._cache.values()),
                      key=lambda c: c.updated, reverse=True)

    # --- writing ---------------------------------------------------------------------------
    def create(self, *, title: str | None = None, provider: str | None = None,
               endpoint: str | None = None, model: str | None = None,
               agent: str | None = None) -> Conversation:
        now = self._clock()
        cid = new_conversation_id()
        while (self.folder / f"{cid}.json").exists():
            cid = new_conversation_id()
        conv = Conversation(cid, short_title(title) if title and title.strip() else DEFAULT_TITLE,
                            provider, now, now, endpoint, model, agent=agent)
        self._private_folder()
        self._write_meta(conv)
        _create_private(self.folder / f"{cid}.jsonl")
        self._cache[cid] = _Loaded(conv)
        return conv

    def begin_turn(self, cid: str, text: str) -> tuple[Conversation, TurnRecord]:
        """Record the user's message and a running turn. Dangling tool calls of an earlier
        turn are closed first with an "interrupted" result, so the history stays valid."""
        loaded = self._load(check_conversation_id(cid))
        conv = loaded.conversation
        if conv.running_turn is not None:
            raise AgentError("busy", "The agent is still working on the last message.",
                             "Wait, or Stop the turn.", turn=conv.running_turn.turn)
        now = self._clock()
        record = TurnRecord(turn_id(cid, len(conv.turns) + 1), text, "running", now)
        lines: list[dict[str, Any]] = []
        new_messages: list[Message] = []
        dangling = dangling_tool_calls(conv.messages)
        if dangling:
            closing = interrupted_results(dangling)
            prior = conv.turns[-1].turn if conv.turns else record.turn
            lines.append({"t": "message", "turn": prior, "message": closing.to_dict()})
            new_messages.append(closing)
        user = Message.user(text)
        lines.append({"t": "turn", "turn": record.turn, "text": text, "started": now})
        lines.append({"t": "message", "turn": record.turn, "message": user.to_dict()})
        new_messages.append(user)
        self._append(loaded, lines)
        title = conv.title
        if title == DEFAULT_TITLE and not conv.turns:
            title = short_title(text) or DEFAULT_TITLE
        renamed = title != conv.title
        conv = replace(conv, title=title, updated=now,
                       messages=conv.messages + tuple(new_messages), turns=conv.turns + (record,))
        loaded.conversation = conv
        if renamed:
            self._write_meta(conv)  # otherwise end_turn writes "updated": one fsync less a turn
        return conv, record

    def add_messages(self, turn: str, messages: Sequence[Message | Mapping[str, Any]]
                     ) -> Conversation:
        """Append the messages a turn produced (Message records or their wire dicts)."""
        cid = conversation_of_turn(turn)
        loaded = self._load(cid)
        parsed: list[Message] = []
        for m in messages:
            try:
                # bounded before it is written: a log line never holds more than a message may
                parsed.append(bounded_message(m if isinstance(m, Message)
                                              else Message.from_dict(m)))
            except (KeyError, TypeError, ValueError) as exc:
                raise AgentError("unexpected_response", f"The agent session sent a message "
                                 f"Rio cannot record ({exc}).",
                                 "Report this as a bug with the agent log.") from None
        self._find_turn(loaded.conversation, turn)
        if parsed:
            self._append(loaded, [{"t": "message", "turn": turn, "message": m.to_dict()}
                                  for m in parsed])
        loaded.conversation = replace(loaded.conversation, updated=self._clock(),
                                      messages=loaded.conversation.messages + tuple(parsed))
        return loaded.conversation

    def end_turn(self, turn: str, status: TurnStatus,
                 error: Mapping[str, Any] | None = None,
                 changes: Mapping[str, Any] | None = None) -> TurnRecord:
        if status not in ("done", "stopped", "error"):
            raise ValueError(f"a turn cannot end as {status!r}")
        cid = conversation_of_turn(turn)
        loaded = self._load(cid)
        conv = loaded.conversation
        index = self._find_turn(conv, turn)
        now = self._clock()
        record = replace(conv.turns[index], status=status, ended=now,
                         error=dict(error) if error else None,
                         changes=dict(changes) if changes else None)
        line: dict[str, Any] = {"t": "end", "turn": turn, "status": status,
                                "error": record.error, "ended": now}
        if record.changes:
            line["changes"] = record.changes
        self._append(loaded, [line])
        turns = conv.turns[:index] + (record,) + conv.turns[index + 1:]
        loaded.conversation = replace(conv, turns=turns, updated=now)
        self._write_meta(loaded.conversation)
        return record

    def discard(self, cid: str) -> None:
        """Forget a conversation that never had an answer: its files (meta, log, an ACP
        agent's protocol log) are removed. Refused (``agent.not_discardable``) while a turn
        runs or once an assistant message is recorded — then it is the user's history."""
        conv = self.get(cid)
        if conv.running_turn is not None or any(m.role == "assistant" for m in conv.messages):
            raise AgentError("not_discardable", f"The conversation {cid!r} has an answer or a "
                             "turn running, so it is kept.", "Nothing to do: it stays in the "
                             "list (agent.list).", conversation=cid)
        for leaf in (f"{cid}.json", f"{cid}.jsonl", f"{cid}.acp.log"):
            try:
                (self.folder / leaf).unlink()
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise FileError("save_failed", f"The conversation {cid!r} could not be "
                                f"removed ({exc.strerror or exc}).",
                                "Check the state folder's permissions.") from None
        self._cache.pop(cid, None)

    def record_shown(self, turn: str, events: Sequence[Mapping[str, Any]],
                     cut: bool = False) -> TurnRecord:
        """Keep what an ended turn showed (:class:`rio.agent.shown.ShownRecorder`'s record):
        one ``shown`` line, after its ``end``. A turn keeps the first such record."""
        cid = conversation_of_turn(turn)
        loaded = self._load(cid)
        conv = loaded.conversation
        index = self._find_turn(conv, turn)
        record = conv.turns[index]
        if record.shown is not None:
            return record
        line: dict[str, Any] = {"t": "shown", "turn": turn, "events": list(events)}
        if cut:
            line["cut"] = True
        self._append(loaded, [line])
        record = replace(record, shown=tuple(events), shown_cut=cut)
        loaded.conversation = replace(conv, turns=conv.turns[:index] + (record,)
                                      + conv.turns[index + 1:])
        return record

    def set_acp_session(self, cid: str, session: str | None) -> Conversation:
        """Remember the ACP agent's session id (written with the conversation's meta)."""
        loaded = self._load(cid)
        if loaded.conversation.acp_session != session:
            loaded.conversation = replace(loaded.conversation, acp_session=session)
            self._write_meta(loaded.conversation)
        return loaded.conversation

    # --- internals -------------------------------------------------------------------------
    @staticmethod
    def _find_turn(conv: Conversation, turn: str) -> int:
        for index in range(len(conv.turns) - 1, -1, -1):
            if conv.turns[index].turn == turn:
                return index
        raise AgentError("unknown_turn", f"There is no turn {turn!r}.",
                         "Use the turn id from agent.send's reply or the agent.* events.")

    def _private_folder(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        if self.folder.stat().st_mode & 0o077:
            os.chmod(self.folder, 0o700)

    def _load(self, cid: str) -> _Loaded:
        loaded = self._cache.get(cid)
        if loaded is not None:
            return loaded
        meta_path = self.folder / f"{cid}.json"
        try:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise AgentError("unknown_conversation", f"There is no conversation {cid!r}.",
                             "List the conversations with agent.list.") from None
        except (OSError, ValueError) as exc:
            raise FileError("read_failed", f"{meta_path} cannot be read ({exc}).",
                            "Move the file away; the other conversations are not affected."
                            ) from None
        conv = Conversation(cid, str(meta.get("title") or DEFAULT_TITLE), meta.get("provider"),
                            float(meta.get("created") or 0.0), float(meta.get("updated") or 0.0),
                            meta.get("endpoint"), meta.get("model"),
                            agent=meta.get("agent") or None,
                            acp_session=meta.get("acp_session") or None)
        loaded = _Loaded(conv)
        self._replay(loaded, self.folder / f"{cid}.jsonl")
        self._cache[cid] = loaded
        running = loaded.conversation.running_turn
        if running is not None:
            # The turn was running when Rio stopped: nothing will ever end it but us.
            self.end_turn(running.turn, "error", {
                "kind": "agent.interrupted",
                "message": "Rio stopped while this turn was running; its text so far is kept.",
                "next": "Send your message again."})
        return loaded

    def _replay(self, loaded: _Loaded, log_path: Path) -> None:
        try:
            raw = log_path.read_bytes()
        except FileNotFoundError:
            return
        loaded.needs_newline = bool(raw) and not raw.endswith(b"\n")
        conv = loaded.conversation
        messages: list[Message] = list(conv.messages)
        turns: list[TurnRecord] = list(conv.turns)
        for line in raw.split(b"\n"):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                kind = rec["t"]
                if kind == "turn":
                    turns.append(TurnRecord(str(rec["turn"]), str(rec.get("text", "")),
                                            "running", float(rec.get("started") or 0.0)))
                elif kind == "message":
                    # an older Rio wrote any length (a 70 MB reply): cut as it is read
                    messages.append(bounded_message(Message.from_dict(rec["message"])))
                elif kind == "end":
                    for i in range(len(turns) - 1, -1, -1):
                        if turns[i].turn == rec["turn"]:
                            status = rec.get("status")
                            changes = rec.get("changes")
                            turns[i] = replace(turns[i], status=status if status in
                                               TURN_STATUSES else "error",
                                               ended=rec.get("ended"), error=rec.get("error"),
                                               changes=changes if isinstance(changes, dict)
                                               else None)
                            break
                elif kind == "shown":
                    events = rec.get("events")
                    for i in range(len(turns) - 1, -1, -1):
                        if turns[i].turn == rec["turn"] and isinstance(events, list):
                            turns[i] = replace(turns[i], shown=tuple(
                                e for e in events if isinstance(e, dict)),
                                shown_cut=bool(rec.get("cut")))
                            break
            except (ValueError, KeyError, TypeError):
                continue  # a torn last line (a crash mid-append) or a foreign line: skipped
        loaded.conversation = replace(conv, messages=tuple(messages), turns=tuple(turns))

    def _append(self, loaded: _Loaded, records: Sequence[dict[str, Any]]) -> None:
        payload = "".join(json.dumps(r, ensure_ascii=False, separators=(",", ":")) + "\n"
                          for r in records).encode("utf-8")
        if loaded.needs_newline:
            payload = b"\n" + payload  # keep a torn line from swallowing the next record
        path = self.folder / f"{loaded.conversation.conversation}.jsonl"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT
                         | getattr(os, "O_NOFOLLOW", 0), 0o600)
            try:
                os.write(fd, payload)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            raise FileError("save_failed", f"The conversation could not be recorded in {path} "
                            f"({exc.strerror or exc}).",
                            "Free some disk space or check the state folder's permissions."
                            ) from None
        loaded.needs_newline = False

    def _write_meta(self, conv: Conversation) -> None:
        path = self.folder / f"{conv.conversation}.json"
        tmp = self.folder / f".{conv.conversation}.json.{os.getpid()}.tmp"
        try:
            tmp.unlink(missing_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL
                         | getattr(os, "O_NOFOLLOW", 0), 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(conv.meta(), fh, ensure_ascii=False, indent=1)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise FileError("save_failed", f"The conversation could not be saved in {path} "
                            f"({exc.strerror or exc}).",
                            "Free some disk space or check the state folder's permissions."
                            ) from None


def _create_private(path: Path) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    os.close(fd)


def conversations_dir(project_state: Path) -> Path:
    return Path(project_state) / "conversations"
