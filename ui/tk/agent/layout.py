"""The agent panel's frame: title bar, header, input box, where it docks, and the minimised
strip. Display only; the panel (ui/tk/agent/panel.py) owns the state and the actions, and holds
one :class:`PanelLayout` that builds its widgets (onto the panel: :class:`PanelHost`) and keeps
them docked at their width.

Docked as a pane of ``app.hpane`` — after the editor (right) or between the project tree and
the editor (left) — so the user resizes it with the same raised sash as the other panes; it
takes its width from the editor, never from the tree. Dragging its caption to the other half
of the window docks it there. Minimised, it is a 30 px strip with the
state as a coloured dot and the number of questions waiting; a click restores it.
"""

from __future__ import annotations

import tkinter as tk
from tkinter import ttk
from typing import Iterable

from ui.tk.agent.flow import FlowRow, labelled
from ui.tk.agent.seams import PanelHost
from ui.tk.agent.view import ConversationView
from ui.tk.widgets.icons import icon

STRIP_PX = 30
MODES = ("review", "auto_buffer", "allow_all")
MIN_PX = 220
#: What the editor keeps, at least, when the panel takes its width.
EDITOR_PX = 260
#: The conversation picker's style: its list is as wide as its longest entry (postoffset).
CHOOSER_STYLE = "AgentChooser.TCombobox"
#: The ticks under the input: their text wraps at the panel's width.
TICK_STYLE = "AgentTick.TCheckbutton"
#: The state dot's colour on the strip (the VGA palette of the icons).
DOT = {"idle": "#008000", "thinking": "#e0b000", "waiting": "#ff0000", "error": "#800000"}


def picker_width(values: Iterable[object], least: int = 10, most: int = 22) -> int:
    """A read-only picker's width in characters (Tk counts "0"s): its longest entry whole
    ("opencode (ACP)" was cut to "opencode (ACF"), within bounds. Measured in the font when
    Tk is up, else one character per letter."""
    import tkinter.font as tkfont
    values = list(values)
    try:
        font = tkfont.nametofont("TkTextFont")
        zero = max(1, font.measure("0"))
        need = max((-(-font.measure(str(v)) // zero) for v in values), default=0) + 1
    except (tk.TclError, RuntimeError):
        need = max((len(str(v)) for v in values), default=0) + 1
    return max(least, min(most, need))


def drop_side(x_root: int, window_x: int, window_width: int, side: str) -> str:
    """Where a caption let go at ``x_root`` docks the panel: the half of the window it is in."""
    if window_width <= 0:
        return side
    return "left" if x_root - window_x < window_width / 2 else "right"


class PanelLayout:
    """The panel's frame in the window: builds its widgets onto the panel, docks it as a pane
    on its side, keeps its width (its preference) as the window is resized, folds it to the
    strip and back."""

    def __init__(self, panel: PanelHost) -> None:
        self.panel = panel
        self._refit_job: str | None = None
        self._fit_bound = False          # the pane's <Configure> is bound (once a window)

    def build(self) -> None:
        panel = self.panel
        app = panel.app
        t = app.theme
        frame = ttk.Frame(app.hpane, style="Raised.TFrame", padding=2, name="agent_panel",
                          width=panel.prefs.width)
        # The pane's width is the panel's (its preference, the sash): what its rows ask for —
        # a header laid out on one line before it knows its width — must not widen it.
        frame.pack_propagate(False)
        panel.frame = frame
        body = ttk.Frame(frame)
        panel.body = body
        title = ttk.Frame(body)
        title.pack(side="top", fill="x")
        for text, fn, name in (("×", panel.close, "close"), ("⇆", panel.dock_other_side, "dock"),
                               ("_", panel.minimise, "minimise")):
            ttk.Button(title, text=text, width=2, style="Toolbutton", takefocus=False,
                       command=fn, name=name).pack(side="right")
        caption = ttk.Label(title, text=" Agent", style="Title.TLabel", image=icon(
            "agent", t.name, app.root), compound="left", cursor="fleur", name="caption")
        caption.pack(side="left", fill="x", expand=True)
        panel.caption = caption
        # Drag the caption across the window and let go on the other half: it docks there.
        caption.bind("<ButtonRelease-1>", lambda e: self._dropped(e.x_root))
        # Provider, Mode and Stop wrap onto a second line when the panel is narrow: every one
        # stays visible at any width (ui/tk/agent/flow.py).
        head = FlowRow(body, name="head", padding=(2, 3, 2, 1))
        head.frame.pack(side="top", fill="x")
        panel.head = head
        panel.provider = tk.StringVar(frame, panel.default_provider)
        provider_box = labelled(head, "provider_item", "Provider:", lambda box: ttk.Combobox(
            box, textvariable=panel.provider, values=panel.providers,
            width=picker_width(panel.providers), state="readonly", name="provider"))
        panel.provider_box = provider_box
        # A pick with a conversation shown starts a new conversation with that provider or
        # agent (a conversation keeps the one it started with): PanelActions.provider_chosen.
        provider_box.bind("<<ComboboxSelected>>", lambda e: panel.provider_chosen())
        # The approval gate's mode (agent.mode): what runs by itself and what asks.
        panel.mode = tk.StringVar(frame, "")
        mode = labelled(head, "mode_item", "Mode:", lambda box: ttk.Combobox(
            box, textvariable=panel.mode, values=MODES, width=9, state="readonly",
            name="mode"))
        mode.bind("<<ComboboxSelected>>", lambda e: panel.set_mode(panel.mode.get()))
        stop_button = ttk.Button(head.frame, text="Stop", width=5, command=panel.stop,
                                 name="stop", state="disabled")
        panel.stop_button = stop_button
        head.add(stop_button)
        row = ttk.Frame(body, padding=(2, 1, 2, 3), name="conversation_row")
        row.pack(side="top", fill="x")
        ttk.Button(row, text="New", width=5, command=panel.new_conversation,
                   name="new").pack(side="right", padx=(3, 0))
        ttk.Label(row, text="Conversation:").pack(side="left")
        chooser = ttk.Combobox(row, state="readonly", width=16, name="conversations",
                               style=CHOOSER_STYLE)
        panel.chooser = chooser
        chooser.pack(side="left", fill="x", expand=True, padx=(3, 0))
        chooser.bind("<<ComboboxSelected>>", lambda e: panel.chosen())
        # The ACP agent's own mode and model pickers, shown where it offers them
        # (ui/tk/agent/pickers.py); packed under the conversation row by PickerRow.sync.
        panel.conv_row = row
        agent_flow = FlowRow(body, name="agent_pickers", padding=(2, 0, 2, 3))
        panel.agent_flow = agent_flow
        panel.agent_row = agent_flow.frame
        # The input is packed before the conversation so a short panel shrinks the history.
        bottom = ttk.Frame(body, padding=(0, 3, 0, 0))
        bottom.pack(side="bottom", fill="x")
        ticks = ttk.Frame(body, padding=(2, 2, 0, 0))
        ticks.pack(side="bottom", fill="x")
        name_active = tk.BooleanVar(frame, panel.prefs.name_active)
        panel.name_active = name_active
        ttk.Checkbutton(ticks, text="Name the active file in the message", style=TICK_STYLE,
                        variable=name_active, name="name_active",
                        command=lambda: panel.set_prefs(name_active=name_active.get())
                        ).pack(side="left")
        # In a narrow panel the tick's text wraps, whole, rather than run past the edge.
        ticks.bind("<Configure>", lambda e: ttk.Style(ticks).configure(
            TICK_STYLE, wraplength=max(80, e.width - 30)), add="+")
        # Send first, from the right: the box takes what is left and never hides it.
        send_button = ttk.Button(bottom, text="Send", width=6, command=panel.send_input,
                                 name="send")
        panel.send_button = send_button
        send_button.pack(side="right", anchor="s", padx=(3, 0))
        box = ttk.Frame(bottom, style="Sunken.TFrame")
        box.pack(side="left", fill="both", expand=True)
        entry = tk.Text(box, height=3, wrap="word", undo=True,
                        font=(app.ui_font_family(), 9), bg=t.field_bg, fg=t.field_fg,
                        insertbackground=t.cursor, borderwidth=0, padx=3, pady=2, name="input")
        panel.input = entry
        entry.pack(fill="both", expand=True)
        entry.bind("<Return>", panel.on_enter)
        entry.bind("<KP_Enter>", panel.on_enter)
        entry.bind("<Shift-Return>", lambda e: None)   # the class binding: a new line
        from ui.tk.agent.complete import PathCompleter
        panel.completer = PathCompleter(panel, entry)
        view = ConversationView(panel, body)
        panel.view = view
        view.show(panel.model.shown)
        strip = self._build_strip(frame)
        if panel.prefs.minimised:
            strip.pack(side="top", fill="y", expand=True)
        else:
            body.pack(side="top", fill="both", expand=True)

    def fit_chooser_list(self, values: list[str]) -> None:
        """The conversation picker's drop-down as wide as its longest entry (the box itself
        keeps the panel's width), opening toward the window's inside: leftwards when docked
        right."""
        import tkinter.font as tkfont
        box = self.panel.chooser
        if box is None:
            return
        try:
            font = tkfont.nametofont("TkDefaultFont")
            need = max((font.measure(v) for v in values), default=0) + 40
            extra = max(0, min(need, box.winfo_screenwidth() // 2) - max(box.winfo_width(), 1))
            dx = -extra if self.panel.prefs.side == "right" else 0
            ttk.Style(box).configure(CHOOSER_STYLE, postoffset=(dx, 0, extra, 0))
        except tk.TclError:
            return

    def _build_strip(self, frame: ttk.Frame) -> ttk.Frame:
        panel = self.panel
        app = panel.app
        strip = ttk.Frame(frame, name="strip")
        panel.strip = strip
        restore = ttk.Button(strip, image=icon("agent", app.theme.name, app.root),
                             style="Toolbutton", takefocus=False, command=panel.restore,
                             name="restore")
        restore.pack(side="top", pady=(2, 4))
        dot = tk.Canvas(strip, width=14, height=14, highlightthickness=0,
                        background=app.theme.face, name="dot")
        dot.create_oval(2, 2, 12, 12, fill=DOT["idle"], outline="#000000", tags=("dot",))
        dot.pack(side="top")
        count = ttk.Label(strip, text="", anchor="center", width=3, name="count")
        panel.strip_count = count
        count.pack(side="top", pady=(2, 0))
        for w in (strip, dot, count):
            w.bind("<Button-1>", lambda e: panel.restore(), add="+")
        return strip

    def refresh_strip(self) -> None:
        panel = self.panel
        strip, count = panel.strip, panel.strip_count
        if strip is None or count is None or panel.frame is None:
            return
        state = panel.model.state
        try:
            dot = strip.children["dot"]
            assert isinstance(dot, tk.Canvas)
            dot.itemconfigure("dot", fill=DOT.get(state, DOT["idle"]))
            n = panel.model.waiting_count()
            count.configure(text=str(n) if n else "")
        except tk.TclError:
            return

    def width_now(self) -> int:
        prefs = self.panel.prefs
        return STRIP_PX if prefs.minimised else prefs.width

    def dock(self) -> None:
        """Add the built frame to the window's panes, on its side, at its width."""
        panel = self.panel
        app = panel.app
        pane = app.hpane
        if panel.frame is None:
            return
        try:
            tree_w: int | None = pane.sash_coord(0)[0]
        except tk.TclError:
            tree_w = None
        minimised = panel.prefs.minimised
        if panel.prefs.side == "right":
            pane.add(panel.frame, minsize=STRIP_PX if minimised else MIN_PX,
                     width=self.width_now(), stretch="never", after=app.vpane)
        else:
            pane.add(panel.frame, minsize=STRIP_PX if minimised else MIN_PX,
                     width=self.width_now(), stretch="never", before=app.vpane)
        # The editor takes what the window gains or loses, on either side. A pane's default
        # is "stretch if last": docked right the editor is no longer last, so nothing
        # stretched — the window's extra width was dead grey space right of the panel, and a
        # window that started narrow kept the panel squeezed to its minimum.
        pane.paneconfigure(app.vpane, stretch="always")  # type: ignore[no-untyped-call]  # typeshed: unannotated
        if not self._fit_bound:
            self._fit_bound = True
            pane.bind("<Configure>", lambda e: self.refit_later(), add="+")
            pane.bind("<ButtonRelease-1>", lambda e: pane.after_idle(self._remember_width),
                      add="+")
        self.place_sashes(tree_w)
        self.refit_later()

    def refit_later(self) -> None:
        """The window was resized, or the panel was just built: once Tk has laid the panes
        out, the panel reaches the window's edge at its width (see :meth:`refit`)."""
        if self._refit_job is None and self.panel.frame is not None:
            def run() -> None:
                self._refit_job = None
                self.refit()
            self._refit_job = self.panel.app.root.after_idle(run)

    def refit(self) -> None:
        """Put the panel's sash where its width says, if it is not there. A paned window lays
        its panes out again from their requested sizes when one of them changes (a panel
        being built, the editor's tabs) and gives what is left over, or missing, to the LAST
        pane: the panel docked right came out squeezed to its minimum, or pushed past the
        window's edge. Placed sashes hold, so this runs once things settle and whenever the
        window is resized."""
        panel = self.panel
        if panel.frame is None or not panel.is_open:
            return
        pane = panel.app.hpane
        try:
            total = pane.winfo_width()
            panes = [str(p) for p in pane.panes()]  # type: ignore[no-untyped-call]  # unannotated
            if total <= 1 or len(panes) < 3 or str(panel.frame) not in panes:
                return
            tree_w = pane.sash_coord(0)[0]       # the tree's sash, on either side
            if abs(pane.sash_coord(1)[0] - self.sash_for(total, tree_w)) > 2:
                self.place_sashes(tree_w)
        except tk.TclError:
            return

    def sash_for(self, total: int, tree_w: int) -> int:
        """Where the sash between the panel and the editor goes."""
        sash = int(self.panel.app.hpane.cget("sashwidth"))
        width = self.fitting_width(total, tree_w)
        return total - width - sash if self.panel.prefs.side == "right" \
            else tree_w + sash + width

    def _remember_width(self) -> None:
        """The user let go of a sash: the panel's width now is the one it keeps (a
        preference), so a resized window gives it back this width, not an older one."""
        panel = self.panel
        if panel.frame is None or not panel.is_open or panel.prefs.minimised:
            return
        try:
            width = panel.frame.winfo_width()
        except tk.TclError:
            return
        if width >= MIN_PX and abs(width - panel.prefs.width) > 2:
            panel.set_prefs(width=width)

    def fitting_width(self, total: int, tree_w: int) -> int:
        """The panel's width in a window ``total`` pixels wide: its preferred width, less
        what the editor needs (EDITOR_PX), never under MIN_PX."""
        prefs = self.panel.prefs
        if prefs.minimised:
            return STRIP_PX
        return min(prefs.width, max(MIN_PX, total - tree_w - EDITOR_PX))

    def place_sashes(self, tree_w: int | None) -> None:
        """The panel takes its width from the editor, never from the project tree."""
        pane = self.panel.app.hpane
        try:
            pane.update_idletasks()
            total = pane.winfo_width()
            if tree_w is None or total <= 1:
                return
            # Sash 0 only when it moved (placing both at once, the second did not hold).
            if pane.sash_coord(0)[0] != tree_w:
                pane.sash_place(0, tree_w, 0)
                pane.update_idletasks()
            pane.sash_place(1, self.sash_for(total, tree_w), 0)
        except tk.TclError:
            return

    def fold(self, minimised: bool) -> None:
        """Minimise to the strip, or restore the whole panel, in place."""
        panel = self.panel
        frame, body, strip = panel.frame, panel.body, panel.strip
        if frame is None or body is None or strip is None or \
                panel.prefs.minimised == minimised:
            return
        pane = panel.app.hpane
        try:
            tree_w: int | None = pane.sash_coord(0)[0]
        except tk.TclError:
            tree_w = None
        if minimised:
            width = frame.winfo_width()
            panel.set_prefs(minimised=True,
                            width=width if width > MIN_PX else panel.prefs.width)
            body.pack_forget()
            strip.pack(side="top", fill="y", expand=True)
            pane.paneconfigure(  # type: ignore[no-untyped-call]  # typeshed: unannotated
                frame, minsize=STRIP_PX, width=STRIP_PX)
        else:
            panel.set_prefs(minimised=False)
            strip.pack_forget()
            body.pack(side="top", fill="both", expand=True)
            pane.paneconfigure(  # type: ignore[no-untyped-call]  # typeshed: unannotated
                frame, minsize=MIN_PX, width=panel.prefs.width)
        self.place_sashes(tree_w)
        self.refit_later()
        self.refresh_strip()

    def _dropped(self, x_root: int) -> None:
        panel = self.panel
        root = panel.app.root
        side = drop_side(x_root, root.winfo_rootx(), root.winfo_width(), panel.prefs.side)
        if side != panel.prefs.side:
            root.after_idle(lambda: panel.open(side=side))
