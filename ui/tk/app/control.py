"""The ``ui.*`` ops: the desktop serves them on the bus so tests and scripts drive the REAL window.

The UI registers the ``ui`` prefix with the hub (``bus.register``); requests arrive inside
``conn.drain()`` on Tk's thread, so handlers touch widgets directly. Each op does what a user
would: ``ui.type`` goes through the same typing path as keys, ``ui.menu`` invokes the same
command a click would, ``ui.dialog_answer`` presses a real button. Ops that finish later (open a
file, take a screenshot) answer when done. The catalogue is in rio/protocol/ops.py; docs/protocol.md
describes it.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from rio.protocol import ops
from rio.protocol.errors import DocumentError, FileError, ProtocolError, RioError
from rio.protocol.frames import Reply, Request
from rio.protocol.op_table import OpTable

if TYPE_CHECKING:
    from ui.tk.app.main_window import App
    from ui.tk.editor.tab import EditorTab

log = logging.getLogger("rio.ui.control")

Respond = Callable[[Any], None]
DEFER = object()

#: ui.state reports the active widget's text up to this many characters (else null).
WIDGET_TEXT_LIMIT = 64 * 1024
#: Ops that may name a command a plug-in module registers (see App._install_plugins).
NEED_PLUGINS = frozenset({"ui.dialog", "ui.menu", "ui.agent"})
#: ui.dialog names → the command that opens that dialog.
DIALOG_COMMANDS = {
    "open": "file.open", "open_folder": "file.open_folder", "save_as": "file.save_as",
    "preferences": "edit.preferences", "about": "help.about", "shortcuts": "help.shortcuts",
    "find": "search.find", "replace": "search.replace", "goto": "search.goto_line",
    "find_in_files": "search.find_in_files", "run_commands": "project.set_commands",
}


class ControlServer:
    def __init__(self, app: "App"):
        self.app = app
        self.conn = app.conn
        self.conn.on_request = self.on_request

    #: ui.* op → the method that serves it (the one dispatch style, rio/protocol/op_table.py);
    #: a method takes the checked arguments and ``respond``, and returns the result or DEFER
    handles: OpTable[ControlServer] = OpTable()

    def register(self) -> None:
        self.conn.call("bus.register", {"prefixes": ["ui"], "name": "ui", "pid": os.getpid()})

    def on_request(self, client: bytes, req: Request) -> None:
        if req.op in NEED_PLUGINS and not self.app.plugins_ready:
            # The plug-in panes (find, output, run commands, agent) are installed just after
            # the first draw; a request for one of their dialogs or menu items waits for them
            # instead of failing for a command that is about to exist.
            self.app.when_plugins_ready(lambda: self.on_request(client, req))
            return
        answered = False

        def respond(result: Any) -> None:
            nonlocal answered
            if answered:
                return
            answered = True
            if isinstance(result, RioError):
                self.conn.reply(client, Reply.failure(req.id, result))
            else:
                self.conn.reply(client, Reply.success(req.id, result))

        try:
            args = ops.validate(req)
            result = self.handles.call(self, req.op, args, respond)   # unknown_op if none
        except RioError as err:
            respond(err)
            return
        except Exception as exc:  # every request gets an answer
            log.exception("ui op %s", req.op)
            respond(RioError("internal.unexpected", f"{req.op} failed: {type(exc).__name__}: {exc}"))
            return
        if result is not DEFER:
            respond(result)

    # --- helpers ------------------------------------------------------------------------------
    def _editor(self, need_ready: bool = True) -> "EditorTab":
        ed = self.app.active_editor()
        if ed is None:
            raise DocumentError("no_editor", "No document is open in the desktop.",
                              "Open one first (ui.open or File → Open).")
        if need_ready and not ed.ready:
            raise DocumentError("loading", f"{ed.summary.get('name')} is still loading.",
                              "Wait until ui.state shows it ready, then try again.")
        return ed

    # --- ops --------------------------------------------------------------------------------------
    @handles("ui.state")
    def state(self, args: dict[str, Any], respond: Respond) -> Any:
        app = self.app
        active = app.active_editor()
        tabs = [{"buffer": ed.buffer_id, "name": ed.summary.get("name"),
                 "path": ed.summary.get("path"), "dirty": bool(ed.summary.get("dirty")),
                 "active": ed is active, "ready": ed.ready, "big": ed.window is not None,
                 "loading": round(ed.loading_fraction, 3)} for ed in app.tabs()]
        cursor = selection = view = None
        if active is not None and active.ready:
            line, col = active.cursor()
            cursor = {"line": line, "col": col}
            view = _view(active)
            sel = active.selection()
            if sel is not None:
                selection = {"start": sel[0], "end": sel[1], "size": sel[1] - sel[0]}
        status: dict[str, object] = {k: v.get() for k, v in app.status_vars.items()}
        status["message"] = app.message.get()
        status["cut"] = app.status_cells_cut()
        status["unprotected"] = sorted(app.unprotected.values())
        widget_text = None   # what the active widget shows, for checks against the core
        if active is not None and active.ready and active.window is None:
            shown = str(active.orig("get", "1.0", "end-1c"))
            widget_text = shown if len(shown) <= WIDGET_TEXT_LIMIT else None
        return {"tabs": tabs, "active": active.buffer_id if active else None,
                "widget_text": widget_text,
                "cursor": cursor, "view": view, "selection": selection, "status": status,
                "dialogs_open": [d.describe() for d in app.dialogs.values()],
                "theme": app.theme.name, "settings": dict(app.settings),
                "bookmarks": active.bookmark_lines() if active and active.ready else [],
                "agent": app.agent_panel.describe() if app.agent_panel is not None else None,
                "tree_selection": _tree_selection(app),
                "menu_marks": _menu_marks(app),
                # as a restart restores it (ui/tk/app/main_window.py window_geometry)
                "window": {"geometry": str(app.root.wm_geometry()),
                           "title": app.root.title()}}

    @handles("ui.type")
    def type(self, args: dict[str, Any], respond: Respond) -> Any:
        ed = self._editor()
        ed.text.focus_set()
        ed.type_text(args["text"])
        ed.schedule_ui()
        line, col = ed.cursor()
        return {"buffer": ed.buffer_id, "cursor": {"line": line, "col": col}}

    @handles("ui.key")
    def key(self, args: dict[str, Any], respond: Respond) -> Any:
        keysym = args["keysym"]
        state = args.get("state") or ""
        ed = self.app.active_editor()
        target = ed.text if ed is not None else self.app.root
        pattern = f"<{state}-KeyPress-{keysym}>" if state else f"<KeyPress-{keysym}>"
        tries = [0]

        def focused() -> bool:
            return str(self.app.root.tk.call("focus")) == str(target)

        def send() -> None:
            # Tk hands key events to the focus window, and X grants focus asynchronously:
            # wait (briefly) until the target really has it, as a user's click would ensure.
            if not focused() and tries[0] < 20:
                tries[0] += 1
                target.focus_force()
                self.app.root.after(10, send)
                return
            try:
                target.event_generate(pattern, when="now")
            except Exception as exc:  # noqa: BLE001 -- a TclError names the bad keysym
                respond(ProtocolError("bad_args", f"ui.key: {exc}",
                                      "Use an X keysym (Return, BackSpace, a, F3…) and "
                                      "modifiers like Control or Control-Shift."))
                return
            respond({"sent": pattern})
        # Only when needed: a needless `focus -force` after a dialog closed crashed Tk 8.6.13
        # in TkSetFocusWin (core dump, GUI tests under Xvfb).
        if not focused():
            target.focus_force()
        send()
        return DEFER

    @handles("ui.menu")
    def menu(self, args: dict[str, Any], respond: Respond) -> Any:
        try:
            cmd = self.app.commands.by_path(args["path"])
        except KeyError:
            raise ProtocolError("bad_args", f"There is no menu item {args['path']!r}.",
                                "Use Menu/Item as the menu shows it, e.g. File/Save.") from None
        if cmd.name == "file.quit":
            respond({"invoked": cmd.name})
            self.app.root.after_idle(lambda: self.app.invoke(cmd.name))
            return DEFER
        self.app.invoke(cmd.name)
        return {"invoked": cmd.name}

    @handles("ui.open")
    def open(self, args: dict[str, Any], respond: Respond) -> Any:
        def ready(ed: "EditorTab") -> None:
            line, col = ed.cursor()
            respond({"buffer": ed.buffer_id, "name": ed.summary.get("name"),
                     "cursor": {"line": line, "col": col}})
        self.app.raise_window()
        self.app.open_path(args["path"], args.get("line"), args.get("col"), then=ready,
                           fail=respond)
        return DEFER

    @handles("ui.dialog")
    def dialog(self, args: dict[str, Any], respond: Respond) -> Any:
        name = args["name"]
        if name == "conflict":
            self.app.conflict_prompt(self._editor())
        elif name == "unsaved":
            self.app.close_editor(self._editor())
        elif name == "find_in_files" and args.get("fields") and \
                self.app.output_pane is not None:
            pane = self.app.output_pane
            pane.show_find(str(args["fields"].get("pattern", "")))
            pane.find.start()
        elif name in DIALOG_COMMANDS:
            self.app.invoke(DIALOG_COMMANDS[name])
        else:
            raise ProtocolError("bad_args", f"No dialog named {name!r}.",
                                f"Known: {', '.join(sorted([*DIALOG_COMMANDS, 'conflict', 'unsaved']))}.")
        return {"opened": name, "dialogs_open": sorted(self.app.dialogs)}

    @handles("ui.dialog_answer")
    def dialog_answer(self, args: dict[str, Any], respond: Respond) -> Any:
        name = args["name"]
        d = self.app.dialogs.get(name)
        if d is None:
            raise ProtocolError("bad_args", f"No dialog {name!r} is open.",
                                f"Open dialogs: {', '.join(sorted(self.app.dialogs)) or 'none'}.")
        try:
            if args.get("fields"):
                d.set_fields(args["fields"])
            d.answer(args["button"])
        except KeyError as exc:
            raise ProtocolError("bad_args", str(exc.args[0])) from None
        return {"answered": name, "button": args["button"]}

    @handles("ui.screenshot")
    def screenshot(self, args: dict[str, Any], respond: Respond) -> Any:
        path = Path(args["path"])
        tool = shutil.which("import")
        if tool is None:
            raise FileError("save_failed", "Taking a screenshot needs ImageMagick's `import`.",
                            "Install imagemagick (Debian: apt-get install imagemagick).")
        root = self.app.root
        root.update_idletasks()

        def shoot() -> None:
            root.update_idletasks()
            # The toplevel's wrapper includes the menu bar; the screen crop includes dialogs
            # that sit over the window (they are separate X windows).
            wx, wy, ww, wh = _wrapper_geometry(root.title()) or (
                root.winfo_rootx(), root.winfo_rooty(), root.winfo_width(), root.winfo_height())
            path.parent.mkdir(parents=True, exist_ok=True)
            cmd = [tool, "-silent", "-window", "root", "-crop", f"{ww}x{wh}+{wx}+{wy}",
                   "+repage", str(path)]
            try:
                done = subprocess.run(cmd, capture_output=True, timeout=30)
            except (OSError, subprocess.TimeoutExpired) as exc:
                respond(FileError("save_failed", f"Screenshot failed: {exc}"))
                return
            if done.returncode != 0 or not path.exists():
                respond(FileError("save_failed", "Screenshot failed: "
                                  + done.stderr.decode(errors="replace")[-300:]))
                return
            respond({"path": str(path), "width": ww, "height": wh})
        root.after(int(args.get("delay_ms") or 150), shoot)
        return DEFER

    @handles("ui.raise")
    def raise_window(self, args: dict[str, Any], respond: Respond) -> Any:
        """Bring the window to the front: a second ``rio`` on this instance's folder lands
        here instead of opening a second window (one window per instance, as '90s editors
        did)."""
        self.app.raise_window()
        return {"raised": True, "pid": os.getpid()}

    @handles("ui.agent")
    def agent(self, args: dict[str, Any], respond: Respond) -> Any:
        """The agent panel (ui/tk/agent/panel.py): open, close, send, approve … as a user would."""
        panel = self.app.agent_panel
        if panel is None:
            raise ProtocolError("bad_args", "The agent panel is not available in this window.",
                                "Wait until ui.state shows an agent part, then try again.")
        result = panel.control(args, respond)   # None: it answers later, through respond
        return DEFER if result is None else result

    @handles("ui.quit")
    def quit(self, args: dict[str, Any], respond: Respond) -> Any:
        respond({"quitting": True})
        if args.get("force"):
            self.app.root.after_idle(self.app._finish_quit)
        else:
            self.app.root.after_idle(self.app.quit)
        return DEFER


def _wrapper_geometry(title: str) -> tuple[int, int, int, int] | None:
    """(x, y, w, h) of the toplevel's wrapper window (menu bar included), via xwininfo.

    Tk's own geometry leaves the menu bar out (it lives in the wrapper, above the toplevel's
    client window); the wrapper is the window that carries the title."""
    if shutil.which("xwininfo") is None:
        return None
    try:
        out = subprocess.run(["xwininfo", "-name", title], capture_output=True, text=True,
                             timeout=5).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    vals: dict[str, int] = {}
    for line in out.splitlines():
        line = line.strip()
        for key, name in (("Absolute upper-left X:", "x"), ("Absolute upper-left Y:", "y"),
                          ("Width:", "w"), ("Height:", "h")):
            if line.startswith(key):
                vals[name] = int(line.split(":", 1)[1])
    if len(vals) == 4:
        return vals["x"], vals["y"], vals["w"], vals["h"]
    return None


def _view(ed: "EditorTab") -> dict[str, int]:
    """What the active editor shows: its first line (1-based) and how many columns it is
    scrolled to the right (0 when the left edge of the text is in view)."""
    text = ed.text
    first, last = (float(f) for f in text.xview())
    left = 0
    if first > 0 and last > first:
        inner = text.winfo_width() - 2 * (int(text.cget("padx")) + int(text.cget("bd")) +
                                          int(text.cget("highlightthickness")))
        column = max(1, int(ed.app.editor_font.measure("0")))
        left = round(first * max(inner, 1) / (last - first) / column)
    return {"top": ed.top_line(), "left": left}


def _tree_selection(app: "App") -> str | None:
    tree = app.project_tree
    return tree.selected() if tree is not None else None


def _menu_marks(app: "App") -> list[str]:
    """``Menu/Item`` of every check or radio item the menus show marked, read from the Tk
    menus themselves."""
    out = []
    bar = app.menubar
    for i in range(int(bar.index("end") or -1) + 1):
        if bar.type(i) != "cascade":
            continue
        menu = app.root.nametowidget(bar.entrycget(i, "menu"))
        for j in range(int(menu.index("end") or -1) + 1):
            kind = menu.type(j)
            if kind not in ("checkbutton", "radiobutton"):
                continue
            value = menu.getvar(menu.entrycget(j, "variable"))
            on = menu.entrycget(j, "onvalue" if kind == "checkbutton" else "value")
            if str(value) == str(on) or (kind == "checkbutton" and value in (True, 1)
                                         and str(on) == "1"):
                out.append(f"{bar.entrycget(i, 'label')}/{menu.entrycget(j, 'label')}")
    return out
