"""The agent panel's frame: title bar, header, input box, where it docks, and the minimised
strip. Display only; the panel (ui/tk/agent_panel.py) owns the state and the actions.

Docked as a pane of ``app.hpane`` — after the editor (right) or between the project tree and
the editor (left) — so the user resizes it with the same raised sash as the other panes; it
takes its width from the editor, never from the tree. Dragging its caption to the other half
of the window docks it there. Minimised, it is a 30 px strip with the
state as a coloured dot and the number of questions waiting; a click restores it.
"""

from __future__ import annotations

import tkinter as tk
from tkinter import ttk
from typing import Any

from ui.tk.agent_view import ConversationView
from ui.tk.icons import icon

STRIP_PX = 30
MODES = ("review", "auto_buffer", "allow_all")
MIN_PX = 220
#: The state dot's colour on the strip (the VGA palette of the icons).
DOT = {"idle": "#008000", "thinking": "#e0b000", "waiting": "#ff0000", "error": "#800000"}


def build(panel: Any) -> None:
    app = panel.app
    t = app.theme
    frame = ttk.Frame(app.hpane, style="Raised.TFrame", padding=2, name="agent_panel")
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
    # Drag the caption across the window and let go on the other half: the panel docks there.
    caption.bind("<ButtonRelease-1>", lambda e: _dropped(panel, e.x_root))
    head = ttk.Frame(body, padding=(2, 3, 2, 1))
    head.pack(side="top", fill="x")
    panel.provider = tk.StringVar(frame, panel.default_provider)
    ttk.Label(head, text="Provider:").pack(side="left")
    panel.provider_box = ttk.Combobox(head, textvariable=panel.provider, values=panel.providers,
                                      width=10, state="readonly", name="provider")
    panel.provider_box.pack(side="left", padx=(3, 4))
    # The approval gate's mode (agent.mode): what runs by itself and what asks.
    panel.mode = tk.StringVar(frame, "")
    ttk.Label(head, text="Mode:").pack(side="left")
    mode = ttk.Combobox(head, textvariable=panel.mode, values=MODES, width=10,
                        state="readonly", name="mode")
    mode.pack(side="left", padx=(3, 4))
    mode.bind("<<ComboboxSelected>>", lambda e: panel.set_mode(panel.mode.get()))
    panel.stop_button = ttk.Button(head, text="Stop", width=5, command=panel.stop,
                                   name="stop", state="disabled")
    panel.stop_button.pack(side="right")
    row = ttk.Frame(body, padding=(2, 1, 2, 3))
    row.pack(side="top", fill="x")
    ttk.Button(row, text="New", width=5, command=panel.new_conversation,
               name="new").pack(side="right", padx=(3, 0))
    ttk.Label(row, text="Conversation:").pack(side="left")
    panel.chooser = ttk.Combobox(row, state="readonly", width=24, name="conversations")
    panel.chooser.pack(side="left", fill="x", expand=True, padx=(3, 0))
    panel.chooser.bind("<<ComboboxSelected>>", lambda e: panel.chosen())
    # The ACP agent's own mode and model pickers, shown where it offers them
    # (ui/tk/agent_pickers.py); packed under the conversation row by agent_pickers.sync.
    panel.conv_row = row
    panel.agent_row = ttk.Frame(body, padding=(2, 0, 2, 3), name="agent_pickers")
    panel._pickers_key = None
    # The input is packed before the conversation so a short panel shrinks the history.
    bottom = ttk.Frame(body, padding=(0, 3, 0, 0))
    bottom.pack(side="bottom", fill="x")
    ticks = ttk.Frame(body, padding=(2, 2, 0, 0))
    ticks.pack(side="bottom", fill="x")
    panel.name_active = tk.BooleanVar(frame, panel.prefs.name_active)
    ttk.Checkbutton(ticks, text="Name the active file in the message",
                    variable=panel.name_active, name="name_active",
                    command=lambda: panel.set_prefs(name_active=panel.name_active.get())
                    ).pack(side="left")
    # Send first, from the right: the box takes what is left and never hides it.
    panel.send_button = ttk.Button(bottom, text="Send", width=6, command=panel.send_input,
                                   name="send")
    panel.send_button.pack(side="right", anchor="s", padx=(3, 0))
    box = ttk.Frame(bottom, style="Sunken.TFrame")
    box.pack(side="left", fill="both", expand=True)
    panel.input = tk.Text(box, height=3, wrap="word", undo=True, font=(app.ui_font_family(), 9),
                          bg=t.field_bg, fg=t.field_fg, insertbackground=t.cursor,
                          borderwidth=0, padx=3, pady=2, name="input")
    panel.input.pack(fill="both", expand=True)
    panel.input.bind("<Return>", panel.on_enter)
    panel.input.bind("<KP_Enter>", panel.on_enter)
    panel.input.bind("<Shift-Return>", lambda e: None)   # the class binding: a new line
    from ui.tk.agent_complete import PathCompleter
    panel.completer = PathCompleter(panel, panel.input)
    panel.view = ConversationView(panel, body)
    panel.view.show(panel.model.shown)
    _build_strip(panel)
    if panel.prefs.minimised:
        panel.strip.pack(side="top", fill="y", expand=True)
    else:
        body.pack(side="top", fill="both", expand=True)


def _build_strip(panel: Any) -> None:
    app = panel.app
    strip = ttk.Frame(panel.frame, name="strip")
    panel.strip = strip
    restore = ttk.Button(strip, image=icon("agent", app.theme.name, app.root),
                         style="Toolbutton", takefocus=False, command=panel.restore,
                         name="restore")
    restore.pack(side="top", pady=(2, 4))
    dot = tk.Canvas(strip, width=14, height=14, highlightthickness=0, background=app.theme.face,
                    name="dot")
    dot.create_oval(2, 2, 12, 12, fill=DOT["idle"], outline="#000000", tags=("dot",))
    dot.pack(side="top")
    panel.strip_count = ttk.Label(strip, text="", anchor="center", width=3, name="count")
    panel.strip_count.pack(side="top", pady=(2, 0))
    for w in (strip, dot, panel.strip_count):
        w.bind("<Button-1>", lambda e: panel.restore(), add="+")


def refresh_strip(panel: Any) -> None:
    if getattr(panel, "strip", None) is None or panel.frame is None:
        return
    state = panel.model.state
    try:
        panel.strip.children["dot"].itemconfigure("dot", fill=DOT.get(state, DOT["idle"]))
        n = panel.model.waiting_count()
        panel.strip_count.configure(text=str(n) if n else "")
    except tk.TclError:
        return


def width_now(panel: Any) -> int:
    return STRIP_PX if panel.prefs.minimised else panel.prefs.width


def dock(panel: Any) -> None:
    """Add the built frame to the window's panes, on its side, at its width."""
    app = panel.app
    pane = app.hpane
    kw = {"after": app.vpane} if panel.prefs.side == "right" else {"before": app.vpane}
    try:
        tree_w = pane.sash_coord(0)[0]
    except tk.TclError:
        tree_w = None
    minimised = panel.prefs.minimised
    pane.add(panel.frame, minsize=STRIP_PX if minimised else MIN_PX, width=width_now(panel),
             stretch="never", **kw)
    place_sashes(panel, tree_w)


def place_sashes(panel: Any, tree_w: int | None) -> None:
    """The panel takes its width from the editor, never from the project tree."""
    pane = panel.app.hpane
    try:
        pane.update_idletasks()
        total = pane.winfo_width()
        if tree_w is None or total <= 1:
            return
        width = width_now(panel)
        if not panel.prefs.minimised:
            width = min(width, max(MIN_PX, total - tree_w - 260))
        sash = int(pane.cget("sashwidth"))
        pane.sash_place(0, tree_w, 0)
        if panel.prefs.side == "right":
            pane.sash_place(1, total - width - sash, 0)
        else:
            pane.sash_place(1, tree_w + sash + width, 0)
    except tk.TclError:
        return


def fold(panel: Any, minimised: bool) -> None:
    """Minimise to the strip, or restore the whole panel, in place."""
    if panel.frame is None or panel.prefs.minimised == minimised:
        return
    pane = panel.app.hpane
    try:
        tree_w = pane.sash_coord(0)[0]
    except tk.TclError:
        tree_w = None
    if minimised:
        width = panel.frame.winfo_width()
        panel.set_prefs(minimised=True, width=width if width > MIN_PX else panel.prefs.width)
        panel.body.pack_forget()
        panel.strip.pack(side="top", fill="y", expand=True)
        pane.paneconfigure(panel.frame, minsize=STRIP_PX, width=STRIP_PX)
    else:
        panel.set_prefs(minimised=False)
        panel.strip.pack_forget()
        panel.body.pack(side="top", fill="both", expand=True)
        pane.paneconfigure(panel.frame, minsize=MIN_PX, width=panel.prefs.width)
    place_sashes(panel, tree_w)
    refresh_strip(panel)


def drop_side(x_root: int, window_x: int, window_width: int, side: str) -> str:
    """Where a caption let go at ``x_root`` docks the panel: the half of the window it is in."""
    if window_width <= 0:
        return side
    return "left" if x_root - window_x < window_width / 2 else "right"


def _dropped(panel: Any, x_root: int) -> None:
    root = panel.app.root
    side = drop_side(x_root, root.winfo_rootx(), root.winfo_width(), panel.prefs.side)
    if side != panel.prefs.side:
        root.after_idle(lambda: panel.open(side=side))
