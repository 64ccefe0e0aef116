"""The agent panel's widgets: the conversation text, tool cards, proposal (diff) cards, the
end-of-turn card, and the input box. Display only — what to show comes from the model
(ui/tk/agent/model.py) and every action goes back to the controller (ui/tk/agent/panel.py).

The conversation is one read-only ``tk.Text``. Streamed text is appended at its end: only the
line still being written is redrawn (``tail`` mark), never the history. Tool cards are lines
with a grey face; proposal cards and the end-of-turn card are small 3-D frames embedded in the
text, with real buttons. Each block carries a tag ``b<index>`` so a card can be redrawn where
it is when its state changes.
"""

from __future__ import annotations

import tkinter as tk
from functools import partial
from tkinter import ttk
from typing import Any

from rio.protocol.tool_input import short_input
from ui.tk.agent.cards import Card, PermissionCard, ProposalCard, SignInCard, TurnEndCard
from ui.tk.agent.extras import plan_lines
from ui.tk.agent.model import Block, Conversation, error_lines
from ui.tk.agent.seams import ViewHost
from ui.tk.agent.text import MarkdownStream, fold_output, markdown_line, render_markdown

#: A card's edges across: its embedding's padx (2 + 2), its raised border (2 + 2), its
#: padding (4 + 4) and 4 px to spare.
CARD_EDGES_PX = 20
#: Errors whose next action is a key: their line gets a "Set API key…" button.
KEY_KINDS = {"agent.not_configured", "agent.auth_rejected"}
#: Errors whose next action is "send it again": their line gets a Retry button.
RETRYABLE = {"agent.session_died", "agent.network", "agent.rate_limited", "agent.server_error",
             "agent.session_unavailable", "agent.session_timeout", "agent.interrupted"}


def _colours(theme: Any) -> dict[str, str]:
    dark = getattr(theme, "name", "classic") == "dark"
    return {"add_bg": "#003a00" if dark else "#d8ffd8", "add_fg": "#80ff80" if dark else "#006000",
            "del_bg": "#3a0000" if dark else "#ffd8d8", "del_fg": "#ff8080" if dark else "#a00000",
            "hunk_fg": "#80c0ff" if dark else "#000080", "file_fg": theme.disabled_fg,
            "error": "#ff6060" if dark else "#c00000", "note": theme.disabled_fg}


def _read_only_key(event: tk.Event) -> str | None:
    """Keys do nothing in the conversation (it is read-only) but Ctrl+key (copy, select all)."""
    ctrl = isinstance(event.state, int) and bool(event.state & 0x4)
    return None if ctrl else "break"


class ConversationView:
    """The conversation's text widget and the cards in it."""

    def __init__(self, panel: ViewHost, parent: tk.Misc):
        self.panel = panel
        app = panel.app
        t = app.theme
        self.colours = _colours(t)
        body = ttk.Frame(parent, style="Sunken.TFrame")
        body.pack(side="top", fill="both", expand=True)
        ui_font = (app.ui_font_family(), 9)
        self.text = tk.Text(body, wrap="word", undo=False, cursor="arrow", font=ui_font,
                            bg=t.field_bg, fg=t.field_fg, borderwidth=0, relief="flat",
                            padx=6, pady=4, insertwidth=0, spacing1=1, spacing3=1,
                            selectbackground=t.selection_bg, selectforeground=t.selection_fg)
        scroll = ttk.Scrollbar(body, orient="vertical", command=self.text.yview)
        self.text.configure(yscrollcommand=scroll.set)
        scroll.pack(side="right", fill="y")
        self.text.pack(side="left", fill="both", expand=True)
        # Read-only, but selectable and copyable.
        self.text.bind("<Key>", _read_only_key)
        self._style_tags()
        self.text.bind("<Configure>", lambda e: self.fit_cards(), add="+")
        self.conv: Conversation | None = None
        self.stream: MarkdownStream | None = None
        self.cards: dict[int, "Card"] = {}
        self.extras: list[tk.Widget] = []       # other embedded widgets (Retry buttons)
        self.rendered = 0

    def _style_tags(self) -> None:
        app = self.panel.app
        t = app.theme
        c = self.colours
        family = app.ui_font_family()
        mono = app.editor_font_tuple()
        tx = self.text
        tx.tag_configure("who", font=(family, 9, "bold"), foreground=t.title_active_bg
                         if t.name == "classic" else t.link, spacing1=6)
        tx.tag_configure("user", lmargin1=4, lmargin2=4)
        tx.tag_configure("md_h1", font=(family, 12, "bold"), spacing1=4)
        tx.tag_configure("md_h2", font=(family, 11, "bold"), spacing1=3)
        tx.tag_configure("md_h3", font=(family, 10, "bold"), spacing1=2)
        tx.tag_configure("md_bold", font=(family, 9, "bold"))
        tx.tag_configure("md_list", lmargin1=6, lmargin2=22)
        tx.tag_configure("md_code", font=mono, background=t.gutter_bg)
        tx.tag_configure("md_bold_code", font=(mono[0], mono[1], "bold"))
        tx.tag_configure("md_pre", font=mono, background=t.gutter_bg, lmargin1=10, lmargin2=10,
                         wrap="none", spacing1=0, spacing3=0)
        tx.tag_configure("card", background=t.face, lmargin1=4, lmargin2=18, spacing1=2,
                         font=(family, 8))
        tx.tag_configure("card_out", background=t.face, font=(mono[0], max(7, mono[1] - 1)),
                         lmargin1=18, lmargin2=18, wrap="none", spacing1=0, spacing3=0)
        tx.tag_configure("ok", foreground="#008000" if t.name == "classic" else "#40d040")
        tx.tag_configure("failed", foreground=c["error"])
        tx.tag_configure("error", foreground=c["error"], font=(family, 9, "bold"))
        tx.tag_configure("note", foreground=c["note"], font=(family, 9, "italic"))
        tx.tag_configure("error_label", foreground=c["error"], font=(family, 8, "bold"),
                         lmargin1=18, lmargin2=18, spacing1=2)
        tx.tag_configure("error_detail", background=t.face, font=(mono[0], max(7, mono[1] - 1)),
                         lmargin1=18, lmargin2=18, rmargin=4, wrap="word", spacing1=0,
                         spacing3=0)
        tx.tag_configure("thought", foreground=c["note"], font=(family, 9, "italic"),
                         lmargin1=12, lmargin2=12)

    # --- whole conversations -----------------------------------------------------------------
    def show(self, conv: Conversation | None) -> None:
        """Draw a conversation from its blocks (switching, or a history loaded)."""
        for card in self.cards.values():
            card.destroy()
        self.cards.clear()
        for widget in self.extras:
            widget.destroy()
        self.extras.clear()
        self.text.delete("1.0", "end")
        self.conv = conv
        self.stream = None
        self.rendered = 0
        if conv is None:
            self.text.insert("end", "No conversation yet. Type a message below and press "
                             "Enter; the agent answers here.", ("note",))
            return
        last = len(conv.blocks) - 1
        for i, block in enumerate(conv.blocks):
            # A running turn's text goes on streaming: its block is drawn as a stream.
            live = i == last and block.kind == "assistant" and block.turn == conv.turn
            self._draw(i, whole=not live)
        self.text.see("end")

    # --- changes -----------------------------------------------------------------------------
    def apply(self, changes: list[tuple[Any, ...]]) -> None:
        if self.conv is None:
            return
        if any(change[0] == "reset" for change in changes):
            # A block went before others (text an agent sent late): drawn again, as a
            # conversation is when it is switched to.
            top = self.text.yview()[0]
            at_end = self.text.yview()[1] >= 0.98
            self.show(self.conv)
            if not at_end:
                self.text.yview_moveto(top)
            return
        at_end = self.text.yview()[1] >= 0.98
        for change in changes:
            kind, i = change[0], change[1]
            if kind == "finish":
                # The turn ended: its last line (no newline after it) is Markdown now.
                if i == self.rendered - 1 and self.stream is not None:
                    self._finish_stream()
            elif kind == "block":
                if i == self.rendered:
                    self._draw(i)
            elif kind == "text":
                if i == self.rendered - 1 and self.conv.blocks[i].kind == "thought":
                    self.text.insert("end", change[2], ("thought", f"b{i}", f"b{i}_body"))
                elif i == self.rendered - 1 and self.stream is not None:
                    self._stream(change[2])
                elif i == self.rendered:
                    self._draw(i)
            elif kind == "update" and i < self.rendered:
                self._redraw(i)
        if at_end:
            self.text.see("end")
            # Embedded cards get their height at idle time: follow the end once more then.
            self.text.after(60, lambda: self.text.yview_moveto(1.0))

    def _open_line(self) -> None:
        """Start the next block on a fresh line."""
        if self.text.index("end-1c") != "1.0" and self.text.get("end-2c") != "\n":
            self.text.insert("end", "\n")

    def _finish_stream(self) -> None:
        if self.stream is None:
            return
        tail = self.stream.tail
        if tail:
            # The unfinished last line, styled now that nothing more comes.
            self.text.delete("tail", "end-1c")
            spans, _ = markdown_line(tail, self.stream.in_code)
            tag = f"b{self.rendered - 1}"
            for text, tags in spans:
                self.text.insert("end", text, tags + (tag,))
        self.stream = None

    def _draw(self, i: int, whole: bool = False) -> None:
        assert self.conv is not None
        self._finish_stream()
        block = self.conv.blocks[i]
        self.rendered = i + 1
        self._open_line()
        tag = f"b{i}"
        tx = self.text
        if block.kind == "user":
            tx.insert("end", "You\n", ("who", tag))
            tx.insert("end", block.text + "\n", ("user", tag))
        elif block.kind == "assistant":
            if whole:
                self._assistant(i, block)
            else:
                self._who(i, block)
                self.stream = MarkdownStream()
                tx.mark_set("tail", "end-1c")
                tx.mark_gravity("tail", "left")
                self._stream(block.text)
        elif block.kind == "tool":
            self._tool(i, block)
        elif block.kind == "thought":
            self._thought(i, block)
        elif block.kind == "plan":
            self._plan(i, block)
        elif block.kind in ("proposal", "turn_end", "sign_in", "permission") or (
                block.kind == "note" and block.data.get("changed_files")):
            from ui.tk.agent.changed import ChangedFilesCard  # Review / Revert per file
            card = {"proposal": ProposalCard, "turn_end": TurnEndCard, "sign_in": SignInCard,
                    "permission": PermissionCard, "note": ChangedFilesCard}[block.kind](
                        self, i, block)
            self.cards[i] = card
            tx.window_create("end", window=card.frame, padx=2, pady=3)
            tx.insert("end", "\n", (tag,))
        elif block.kind == "error":
            kind = block.data.get("kind")
            tx.insert("end", f"✗ {block.text}" + (f" ({kind})" if kind else ""), ("error", tag))
            if kind in RETRYABLE and hasattr(self.panel, "retry"):
                button = ttk.Button(tx, text="Retry", width=6,
                                    command=partial(self.panel.retry, block))
                self.extras.append(button)
                tx.window_create("end", window=button, padx=6)
            # Rio's keys are for the API providers: an ACP agent signs in its own way (its
            # details name it; the next action says how), so no key button for it.
            acp = isinstance(block.data.get("details"), dict) and \
                bool(block.data["details"].get("agent"))
            if kind in KEY_KINDS and not acp and hasattr(self.panel, "set_key"):
                button = ttk.Button(tx, text="Set API key…", command=self.panel.set_key)
                self.extras.append(button)
                tx.window_create("end", window=button, padx=6)
            tx.insert("end", "\n", ("error", tag))
            self._error_details(i, block)
        else:
            self._note(i, block)

    def _who(self, i: int, block: Block, at: str = "end") -> None:
        """"Agent" over the first of a turn's text blocks (after the user's message, or
        after a block of another turn)."""
        assert self.conv is not None
        prev = next((b for b in reversed(self.conv.blocks[:i]) if not b.data.get("hidden")),
                    None)
        if prev is None or prev.kind == "user" or prev.turn != block.turn:
            self.text.insert(at, "Agent\n", ("who", f"b{i}"))

    def _assistant(self, i: int, block: Block, at: str = "end") -> None:
        """A finished text block, whole (a history, a redraw)."""
        tag = f"b{i}"
        self._who(i, block, at)
        for spans in render_markdown(block.text):
            for text, tags in spans:
                self.text.insert(at, text, tags + (tag,))
            self.text.insert(at, "\n", (tag,))

    def _error_details(self, i: int, block: Block) -> None:
        """An ACP agent's own words and its error's details under the error line, whole:
        wrapped by the conversation's width, selectable and copyable like any of its text."""
        for label, text in error_lines(block.data):
            self.text.insert("end", f"{label}:\n", ("error_label", f"b{i}"))
            self.text.insert("end", text.rstrip("\n") + "\n", ("error_detail", f"b{i}"))

    def _stream(self, delta: str) -> None:
        """Append a delta: finished lines styled once, the unfinished one redrawn plain."""
        assert self.stream is not None
        tag = f"b{self.rendered - 1}"
        lines, tail = self.stream.feed(delta)
        tx = self.text
        tx.delete("tail", "end-1c")
        for spans in lines:
            for text, tags in spans:
                tx.insert("end", text, tags + (tag,))
            tx.insert("end", "\n", (tag,))
        tx.mark_set("tail", "end-1c")
        if tail:
            tx.insert("end", tail, self.stream.tail_tags() + (tag,))

    def _tool(self, i: int, block: Block, at: str = "end") -> None:
        d = block.data
        tag = f"b{i}"
        if d.get("hidden"):
            return      # an agent's own line for a call Rio's line shows (one per call)
        status = d.get("status")
        mark, mtag = {"ok": ("✓", "ok"), "failed": ("✗", "failed")}.get(str(status),
                                                                      ("…", "card"))
        shown = d.get("input") or {}
        if str(d.get("name")).startswith("propose_") and isinstance(shown, dict):
            shown = {"path": shown.get("path")}      # the card below shows the change
        line = f"⚙ {d['title']}  " if d.get("title") else \
            f"⚙ {d.get('name')} {short_input(shown, 60)}  "
        self.text.insert(at, line, ("card", tag))
        summary = " ".join(str(d.get("summary") or "").split())[:100]
        more = " (truncated)" if d.get("truncated") else ""
        self.text.insert(at, f"{mark} {summary}{more}\n", ("card", mtag, tag))
        if d.get("output"):
            rows = fold_output(str(d["output"]))
            self.text.insert(at, "\n".join(rows) + "\n", ("card_out", tag))

    def _redraw(self, i: int) -> None:
        assert self.conv is not None
        card = self.cards.get(i)
        if card is not None:
            card.refresh()
            return
        block = self.conv.blocks[i]
        draw = {"tool": self._tool, "plan": self._plan, "note": self._note,
                "assistant": self._assistant}.get(block.kind)
        if block.kind == "assistant" and i == self.rendered - 1 and self.stream is not None:
            return      # the block being streamed is drawn as it comes
        ranges = self.text.tag_ranges(f"b{i}")
        if draw is None or not ranges:
            return
        start = self.text.index(ranges[0])
        self.text.delete(ranges[0], ranges[-1])
        # Inserting at a right-gravity mark keeps the pieces in order.
        self.text.mark_set("redraw", start)
        self.text.mark_gravity("redraw", "right")
        draw(i, block, at="redraw")

    def _note(self, i: int, block: Block, at: str = "end") -> None:
        self.text.insert(at, block.text + "\n", ("note", f"b{i}"))

    def _plan(self, i: int, block: Block, at: str = "end") -> None:
        tag = f"b{i}"
        self.text.insert(at, "Plan\n", ("card", "md_bold", tag))
        rows = plan_lines(block.data.get("entries") or [])
        self.text.insert(at, "\n".join(rows or ["(empty)"]) + "\n", ("card", tag))

    def _thought(self, i: int, block: Block) -> None:
        """Reasoning, folded: a click on its header line shows or hides it."""
        tag, body = f"b{i}", f"b{i}_body"
        head = f"b{i}_head"
        self.text.insert("end", "▸ Thinking (click to show)\n", ("note", tag, head))
        self.text.tag_configure(body, elide=True)
        self.text.insert("end", block.text, ("thought", tag, body))

        def toggle(_e: Any) -> str:
            hidden = not bool(self.text.tag_cget(body, "elide"))
            self.text.tag_configure(body, elide=hidden)
            return "break"
        self.text.tag_bind(head, "<Button-1>", toggle)

    def card_chars(self) -> int:
        """How many diff characters fit across the conversation (cards never overflow it)."""
        import tkinter.font as tkfont
        mono = self.panel.app.editor_font_tuple()
        width = self.text.winfo_width()
        if width <= 1:
            width = int(self.text.cget("width")) * 7
        char = tkfont.Font(root=self.text, family=mono[0], size=max(7, mono[1] - 1)).measure("0")
        return max(20, (width - 2 * int(str(self.text.cget("padx"))) - 40) // max(1, char))

    def card_width(self) -> int:
        """Pixels a card's content may take across the conversation: the text's width less
        its padding and the card's own edges (its embedding, border and padding), so that
        nothing in a card is cut off at the panel's right edge."""
        width = self.text.winfo_width()
        if width <= 1:
            width = int(self.text.cget("width")) * 7
        return max(100, width - 2 * int(str(self.text.cget("padx"))) - CARD_EDGES_PX)

    def fit_cards(self) -> None:
        chars = self.card_chars()
        for card in self.cards.values():
            card.fit(chars)

    def restyle(self) -> None:
        t = self.panel.app.theme
        self.colours = _colours(t)
        self.text.configure(bg=t.field_bg, fg=t.field_fg)
        self._style_tags()
        for card in self.cards.values():
            card.refresh()
