"""The agent panel's cards: small 3-D frames embedded in the conversation text, with real
buttons — a proposal with its coloured unified diff (Approve / Reject / Always), the end of a
turn (Save all, Undo), an ACP agent's sign-in (its own ways; never a key field) and its
permission question (its own options). Each redraws itself from its block when its state
changes (:meth:`Card.refresh`); the view (ui/tk/agent/view.py) places them.
"""

from __future__ import annotations

import tkinter as tk
from functools import partial
from tkinter import ttk
from typing import Any, Callable, Mapping, Protocol

from ui.tk.agent import permission_model as perm
from ui.tk.agent.extras import sign_in_lines
from ui.tk.agent.model import Block, turn_end_text
from ui.tk.agent.seams import ViewHost
from ui.tk.agent.text import diff_line_tag

#: The most diff lines a card shows before it scrolls.
DIFF_ROWS = 14


class CardHost(Protocol):
    """The conversation view (ui/tk/agent/view.py) as its cards use it: the text they are
    embedded in, its colours, how wide a card may be, and the panel their buttons call."""

    @property
    def panel(self) -> ViewHost: ...
    @property
    def text(self) -> tk.Text: ...
    @property
    def colours(self) -> Mapping[str, str]: ...
    def card_chars(self) -> int: ...
    def card_width(self) -> int: ...


class Card:
    def __init__(self, view: CardHost, index: int, block: Block):
        self.view = view
        self.index = index
        self.block = block
        self.frame = ttk.Frame(view.text, style="Raised.TFrame", padding=(4, 3))

    def refresh(self) -> None:
        pass

    def fit(self, chars: int) -> None:
        pass

    def destroy(self) -> None:
        self.frame.destroy()


class BodyCard(Card):
    """A card whose body is drawn anew at each :meth:`refresh` (the block's state changed):
    :meth:`draw` fills the emptied body."""

    def __init__(self, view: CardHost, index: int, block: Block):
        super().__init__(view, index, block)
        self.body = ttk.Frame(self.frame)
        self.body.pack(side="top", fill="x")
        self.refresh()

    def refresh(self) -> None:
        for w in self.body.winfo_children():
            w.destroy()
        self.draw(self.block.data)

    def draw(self, d: Mapping[str, Any]) -> None:
        raise NotImplementedError


class ProposalCard(Card):
    """A proposal: what and where, the coloured unified diff, Approve / Reject / Always."""

    def __init__(self, view: CardHost, index: int, block: Block):
        super().__init__(view, index, block)
        panel = view.panel
        d = block.data
        app = panel.app
        head = ttk.Frame(self.frame)
        head.pack(side="top", fill="x")
        kind = d.get("kind")
        title = {"command": "Run a command", "create": "New file"}.get(str(kind), "Edit")
        ttk.Label(head, text=f"{title}:", font=(app.ui_font_family(), 9, "bold")) \
            .pack(side="left")
        if d.get("path") and kind != "command":
            link = ttk.Label(head, text=str(d["path"]), foreground=app.theme.link,
                             cursor="hand2", font=(app.ui_font_family(), 9, "underline"))
            link.pack(side="left", padx=(4, 0))
            link.bind("<Button-1>", lambda e: panel.open_file(str(d["path"])))
        if d.get("danger"):
            danger = d["danger"]
            why = danger.get("reason") or danger.get("rule") if isinstance(danger, dict) \
                else danger
            ttk.Label(self.frame, text=f"! Dangerous: {why}", foreground=view.colours["error"]) \
                .pack(side="top", anchor="w")
        body = d.get("diff") or ""
        if kind == "command":
            body = f"$ {d.get('command')}\n  (in {d.get('cwd') or '.'})"
        rows = body.splitlines() or [""]
        mono = app.editor_font_tuple()
        self.longest = max(len(r) for r in rows) + 1
        box = ttk.Frame(self.frame, style="Sunken.TFrame")
        box.pack(side="top", fill="x", pady=(3, 3))
        diff = tk.Text(box, height=min(DIFF_ROWS, len(rows)), width=40, wrap="none",
                       font=(mono[0], max(7, mono[1] - 1)), bg=app.theme.field_bg,
                       fg=app.theme.field_fg, borderwidth=0, insertwidth=0, cursor="arrow")
        c = view.colours
        diff.tag_configure("diff_add", background=c["add_bg"], foreground=c["add_fg"])
        diff.tag_configure("diff_del", background=c["del_bg"], foreground=c["del_fg"])
        diff.tag_configure("diff_hunk", foreground=c["hunk_fg"])
        diff.tag_configure("diff_file", foreground=c["file_fg"])
        for n, row in enumerate(rows):
            diff.insert("end", row + ("\n" if n < len(rows) - 1 else ""),
                        (diff_line_tag(row) if kind != "command" else "diff_ctx",))
        diff.configure(state="disabled")
        if len(rows) > DIFF_ROWS:
            sb = ttk.Scrollbar(box, orient="vertical", command=diff.yview)
            diff.configure(yscrollcommand=sb.set)
            sb.pack(side="right", fill="y")
        # Long lines scroll sideways, as in a diff viewer; the card keeps the panel's width.
        self.xscroll = ttk.Scrollbar(box, orient="horizontal", command=diff.xview)
        diff.configure(xscrollcommand=self.xscroll.set)
        diff.pack(side="top", fill="x", expand=True)
        self.diff = diff
        self.fit(view.card_chars())
        self.buttons = ttk.Frame(self.frame)
        self.buttons.pack(side="top", fill="x")
        self.refresh()

    def _answer(self, pid: str, what: str) -> Callable[[], None]:
        return lambda: self.view.panel.answer(pid, what)

    def fit(self, chars: int) -> None:
        self.diff.configure(width=chars)
        if self.longest > chars:
            self.xscroll.pack(side="bottom", fill="x")
        else:
            self.xscroll.pack_forget()

    def refresh(self) -> None:
        for w in self.buttons.winfo_children():
            w.destroy()
        d = self.block.data
        decision = d.get("decision")
        pid = str(d.get("proposal"))
        if decision is None:
            for label, what in (("Approve", "approve"), ("Reject", "reject"),
                                ("Always", "always")):
                b = ttk.Button(self.buttons, text=label, width=8,
                               command=self._answer(pid, what),
                               name=f"btn_{what}")
                b.pack(side="left", padx=(0, 4))
            return
        text = {"answering": "Answering…", "applied": "Approved: applied.", "always": "Approved (always allowed now).",
                "rejected": "Rejected.", "interrupted": "Closed: a new message interrupted it.",
                "stopped": "Closed: the turn was stopped.",
                "timed_out": "Declined: nobody answered in time.",
                "not applied": "Not applied.",
                "closed": "Closed: the turn ended."}.get(decision, f"{decision}.")
        reason = str(d.get("reason") or "").strip()
        if reason and reason.lower().rstrip(".") not in text.lower():
            text += f" {reason}"        # not "Rejected. rejected"
        ttk.Label(self.buttons, text=text, foreground=self.view.colours["note"]) \
            .pack(side="left")


class TurnEndCard(Card):
    """After a turn that changed buffers: which ones are unsaved, Save all, Undo."""

    def __init__(self, view: CardHost, index: int, block: Block):
        super().__init__(view, index, block)
        self.label = ttk.Label(self.frame, text="", wraplength=320, justify="left")
        self.label.pack(side="top", anchor="w")
        self.buttons = ttk.Frame(self.frame)
        self.buttons.pack(side="top", fill="x", pady=(3, 0))
        panel = view.panel
        self.save = ttk.Button(self.buttons, text="Save all", width=9, name="btn_save_all",
                               command=lambda: panel.save_turn(self.block))
        self.save.pack(side="left", padx=(0, 4))
        self.undo = ttk.Button(self.buttons, text="Undo", width=8, name="btn_undo",
                               command=lambda: panel.undo_turn(self.block))
        self.undo.pack(side="left")
        self.refresh()

    def refresh(self) -> None:
        self.label.configure(text=turn_end_text(self.block.data))
        d = self.block.data
        undo = d.get("undo")
        self.save.configure(state="disabled" if d.get("saved") or undo == "undone"
                            else "normal")
        self.undo.configure(state="normal" if undo == "available" else "disabled",
                            text="Undone" if undo == "undone" else "Undo")


class SignInCard(BodyCard):
    """An agent that needs a sign-in, with its own ways to do it; never a key field."""

    def draw(self, d: Mapping[str, Any]) -> None:
        app = self.view.panel.app
        if d.get("state") == "signed_in":
            ttk.Label(self.body, text=f"Signed in to {d.get('agent') or 'the agent'}.") \
                .pack(anchor="w")
            return
        if d.get("state") == "past":      # from the history: asked then, not now
            ttk.Label(self.body, text=f"{d.get('agent') or 'The agent'} asked for a sign-in "
                      "here.").pack(anchor="w")
            return
        ttk.Label(self.body, text=f"Sign-in needed: {d.get('agent') or 'the agent'}",
                  font=(app.ui_font_family(), 9, "bold")).pack(anchor="w")
        signing = d.get("signing")
        mono = app.editor_font_tuple()
        for method in d.get("methods") or ():
            what, command = sign_in_lines(method)
            ttk.Label(self.body, text=what, wraplength=320, justify="left") \
                .pack(anchor="w", pady=(3, 0))
            if method.get("type") not in ("terminal", "env_var"):
                # An agent method: the agent signs you in itself (authenticate).
                mid = str(method.get("id"))
                buttons = ttk.Frame(self.body)
                buttons.pack(anchor="w", pady=(2, 0))
                ttk.Button(buttons, text="Signing in…" if signing == mid else "Sign in",
                           state="disabled" if signing else "normal",
                           name=f"btn_sign_in_{len(self.body.winfo_children())}",
                           command=self._sign_in(mid)).pack(side="left")
                if signing == mid:
                    # The agent may wait for a browser that never comes (offline): Cancel is
                    # Stop, which ends the sign-in and the agent (the session's own bound is
                    # 300 s); the next message starts the agent afresh.
                    ttk.Button(buttons, text="Cancel", name="btn_cancel_sign_in",
                               command=self.view.panel.stop).pack(side="left", padx=(4, 0))
            if command:
                row = ttk.Frame(self.body)
                row.pack(anchor="w", fill="x")
                # Copy first, from the right: the command takes what is left of the card's
                # width (it scrolls inside the field), so the button is never cut off.
                ttk.Button(row, text="Copy", width=6,
                           command=partial(self._copy, command)).pack(side="right", padx=3)
                # The whole command, wrapped (a temp folder's path would hide its end in a
                # one-line field), selectable, read-only.
                width = max(16, min(len(command) + 1, self.view.card_chars() - 10))
                box = ttk.Frame(row, style="Sunken.TFrame")
                box.pack(side="left", fill="x", expand=True)
                shown = tk.Text(box, height=max(1, min(3, -(-len(command) // width))),
                                width=width, wrap="char", font=(mono[0], max(7, mono[1] - 1)),
                                bg=app.theme.field_bg, fg=app.theme.field_fg, borderwidth=0,
                                insertwidth=0, padx=2, pady=1, name="command")
                shown.insert("1.0", command)
                shown.configure(state="disabled")
                shown.pack(fill="x", expand=True)
                ttk.Button(self.body, text="Open a terminal here",
                           command=partial(self._terminal, command)).pack(anchor="w",
                                                                              pady=(2, 0))

    def _sign_in(self, method: str) -> Callable[[], None]:
        return lambda: self.view.panel.sign_in(method)

    def _copy(self, text: str) -> None:
        self.frame.clipboard_clear()
        self.frame.clipboard_append(text)

    def _terminal(self, command: str) -> None:
        from ui.tk.agent.actions import open_terminal
        panel = self.view.panel
        try:
            open_terminal(str(panel.app.project_root), command)
        except OSError as exc:
            panel.app.set_message(f"Could not open a terminal: {exc}. Copy the command and run "
                                  "it in one yourself.")


class PermissionCard(Card):
    """An ACP agent asks before one of its own tools: a short summary, the input that matters
    as ``key: value`` lines, and the agent's own options as buttons that wrap onto more rows
    so each stays visible at any panel width; once answered or closed it says how. What to
    show is decided in :mod:`ui.tk.agent.permission_model`; this only lays it out."""

    #: The buttons' style: it wraps an option's name longer than the card (set in fit()).
    STYLE = "AgentOption.TButton"
    GAP = 4

    def __init__(self, view: CardHost, index: int, block: Block):
        super().__init__(view, index, block)
        d = block.data
        app = view.panel.app
        self.title = ttk.Label(self.frame, text=f"The agent asks: {perm.summary(d)}",
                               font=(app.ui_font_family(), 9, "bold"), wraplength=320,
                               justify="left", name="summary")
        self.title.pack(side="top", anchor="w")
        shown = perm.input_text(d.get("input"))
        # The text colour, not the grey of notes: this is what the user decides on.
        self.input = ttk.Label(self.frame, text=shown, wraplength=320, justify="left",
                               font=(app.ui_font_family(), 8), name="input")
        if shown:
            self.input.pack(side="top", anchor="w", pady=(1, 0))
        self.buttons = ttk.Frame(self.frame)
        self.buttons.pack(side="top", fill="x", pady=(3, 0))
        self._rows: list[list[int]] = []
        self._width = 0
        self.refresh()

    def refresh(self) -> None:
        for w in self.buttons.winfo_children():
            w.destroy()
        self._rows = []
        d = self.block.data
        if d.get("decision") is None:
            key = f"perm:{d.get('request')}"
            for n, option in enumerate(d.get("options") or ()):
                ttk.Button(self.buttons, text=str(option.get("name") or option.get("kind")),
                           style=self.STYLE, name=f"option_{n}",
                           command=self._choose(key, option.get("kind")))
            self.fit(0)
            return
        text = perm.settled_text(str(d["decision"]), d.get("options") or (),
                                 str(d.get("reason") or ""))
        ttk.Label(self.buttons, text=text, foreground=self.view.colours["note"],
                  wraplength=max(120, self._width), justify="left",
                  name="settled").pack(side="left")

    def _choose(self, key: str, kind: str | None) -> Callable[[], None]:
        return lambda: self.view.panel.answer_permission(key, kind)

    def fit(self, chars: int) -> None:
        """Lay the card out for the conversation's width (in pixels, whatever ``chars``):
        the labels wrap at it and the buttons go into as many rows as they need."""
        width = self.view.card_width()
        self._width = width
        self.title.configure(wraplength=width)
        self.input.configure(wraplength=width)
        for label in self.buttons.winfo_children():
            if isinstance(label, ttk.Label):
                label.configure(wraplength=width)
        buttons = [b for b in self.buttons.winfo_children() if isinstance(b, ttk.Button)]
        if not buttons:
            return
        # A name longer than the whole card wraps inside its button (its padding: ~16 px).
        # Buttons take a style change at idle time: their sizes are read after it, and only
        # when the wrap changed (the panel was resized), not at every card drawn.
        style, wrap = ttk.Style(self.frame), max(40, width - 16)
        if str(style.lookup(self.STYLE, "wraplength")) != str(wrap):
            style.configure(self.STYLE, wraplength=wrap, justify="center")
            self.buttons.update_idletasks()
        rows = perm.button_rows([b.winfo_reqwidth() for b in buttons], width, self.GAP)
        if rows == self._rows:
            return
        self._rows = rows
        # One frame per row (a grid would share column widths across rows and push a row
        # past the edge); the buttons stay children of self.buttons, packed into their row.
        for old in [w for w in self.buttons.winfo_children() if isinstance(w, ttk.Frame)]:
            for b in old.pack_slaves():
                b.pack_forget()
            old.destroy()
        for r, row in enumerate(rows):
            line = ttk.Frame(self.buttons, name=f"row_{r}")
            line.pack(side="top", anchor="w", pady=(0 if r == 0 else 2, 0))
            for n, i in enumerate(row):
                buttons[i].pack(in_=line, side="left", padx=(self.GAP if n else 0, 0))
                buttons[i].lift(line)            # above its row's frame, or it is hidden
