"""File → New/Open/Save/Save As/Close/Exit, the unsaved-changes and conflict prompts.

A mixin of :class:`ui.tk.app.main_window.App`: these methods use the app's ``conn``, ``notebook``,
``dialogs`` and tabs. Every step is a request to the core with a callback — nothing here blocks
Tk's loop — and every write waits until the editor's replica is quiet (``when_quiet``), so what
is saved is everything typed before the click.
"""

from __future__ import annotations

import difflib
import os
import tkinter as tk
import tkinter.font as tkfont
from pathlib import Path
from tkinter import ttk
from typing import TYPE_CHECKING, Any, Callable, Generic, TypeVar

from rio.protocol.errors import RioError, error_from_wire
from rio.protocol.frames import Reply, thaw
from ui.tk.app.seams import SavableEditor
from ui.tk.widgets.dialogs import Dialog, Field, text_window
from ui.tk.widgets.seams import OpenDialog
from ui.tk.widgets.tk_calls import listbox_selection, select_tab

if TYPE_CHECKING:
    from actors.bus.client import BusConnection
    from ui.tk.app.session import Session
    from ui.tk.widgets.theme import Theme

ENCODINGS = ("utf-8", "utf-8-sig", "utf-16-le", "utf-16-be", "latin-1")
NEWLINES = ("lf", "crlf", "cr")


def newline_name(value: object) -> str:
    """The format's newline ("\\r\\n" on the wire) as save's argument names it (crlf)."""
    return {"\r\n": "crlf", "\r": "cr", "\n": "lf"}.get(str(value or "\n"),
                                                      str(value or "lf").lower())



#: The window's editor tab (ui/tk/editor/tab.py's EditorTab): what the file actions use of it
#: is :class:`SavableEditor`; the window's own methods take and give the tab itself.
Ed = TypeVar("Ed", bound=SavableEditor)


class FileActions(Generic[Ed]):
    """File commands and prompts (mixed into App as ``FileActions[EditorTab]``)."""

    if TYPE_CHECKING:
        # What these methods use of the window (App provides each; mypy checks it does).
        root: tk.Tk
        conn: BusConnection
        remote: str | None
        project_root: str
        session: Session
        notebook: ttk.Notebook
        dialogs: dict[str, OpenDialog]
        theme: Theme
        editor_font: tkfont.Font
        quitting: bool
        exit_code: int

        def ui_font_family(self) -> str: ...
        def show_error(self, err: RioError) -> None: ...
        def set_message(self, text: str) -> None: ...
        def active_editor(self) -> Ed | None: ...
        def tabs(self) -> list[Ed]: ...
        def remove_tab(self, ed: Ed) -> None: ...
        def open_path(self, path: str) -> None: ...
        def save_session(self) -> None: ...
        def _fill_recent(self) -> None: ...

    def _request(self, op: str, args: dict[str, Any], ok: Callable[[Any], object],
                 fail: Callable[[RioError], object] | None = None, timeout: float = 30) -> None:
        def done(reply: Reply) -> None:
            if reply.ok:
                ok(thaw(reply.result))
            else:
                err = error_from_wire(thaw(reply.error))
                (fail or self.show_error)(err)
        self.conn.request(op, args, done, timeout=timeout)

    def open_dialog(self) -> None:
        here = self.active_editor()
        start = os.path.dirname(here.summary.get("path") or "") if here else ""
        listing = tk.StringVar(self.root)
        holder: dict[str, tk.Listbox] = {}

        def body(frame: ttk.Frame) -> None:
            lb = tk.Listbox(frame, height=12, width=60, activestyle="dotbox")
            sb = ttk.Scrollbar(frame, orient="vertical", command=lb.yview)
            lb.configure(yscrollcommand=sb.set, listvariable=listing)
            lb.pack(side="left", fill="both", expand=True)
            sb.pack(side="right", fill="y")
            holder["lb"] = lb

        def answer(button: str, values: dict[str, str]) -> None:
            if button == "Open" and values.get("path"):
                self.open_path(values["path"])

        d = Dialog(self, "open", "Open File", "File name (inside the project):",
                   ["Open", "Cancel"], answer, fields=[Field("path", "Path:", start)],
                   body=body, icon="question")

        def fill(folder: str) -> None:
            def got(res: dict[str, Any]) -> None:
                if d.done:
                    return
                entries = [("..", "dir")] if folder not in ("", ".") else []
                entries += [(e["name"] + ("/" if e["kind"] == "dir" else ""), e["kind"])
                            for e in res["entries"]]
                holder["lb"].delete(0, "end")
                for name, _ in entries:
                    holder["lb"].insert("end", name)
                holder["folder"] = res.get("path") or folder  # type: ignore[assignment]
            self._request("fs.list", {"path": folder or "."}, got)

        def pick(_e: tk.Event) -> None:
            sel = listbox_selection(holder["lb"])
            if not sel:
                return
            name = holder["lb"].get(sel[0])
            folder = str(holder.get("folder") or "")
            folder = "" if folder == "." else folder
            if name == "..":
                fill(os.path.dirname(folder.rstrip("/")))
            elif name.endswith("/"):
                fill(os.path.join(folder, name.rstrip("/")))
            else:
                d.set_fields({"path": os.path.join(folder, name)})
                d.answer("Open")

        def select(_e: tk.Event) -> None:
            sel = listbox_selection(holder["lb"])
            if sel and not holder["lb"].get(sel[0]).endswith("/"):
                folder = str(holder.get("folder") or "")
                folder = "" if folder == "." else folder
                d.set_fields({"path": os.path.join(folder, holder["lb"].get(sel[0]))})
        holder["lb"].bind("<Double-Button-1>", pick)
        holder["lb"].bind("<Return>", pick)
        holder["lb"].bind("<<ListboxSelect>>", select)
        fill(start)

    def open_folder_dialog(self) -> None:
        """A folder is a project of its own: its own instance and window, like `rio DIR`,
        started by the supervisor (``system.open_folder``): the window starts no processes.
        A window on a remote instance has no folder of this machine to offer: it says so."""
        if self.remote:
            self.show_error(RioError(
                "bus.remote_not_allowed",
                f"Open Folder opens a folder of this machine in a new window; this window "
                f"shows the Rio instance at {self.remote}.",
                "Run `rio FOLDER` here for a local folder, or `rio --connect tcp://HOST:PORT` "
                "for another server's project."))
            return

        def answer(button: str, values: dict[str, str]) -> None:
            folder = values.get("folder", "").strip()
            if button != "Open" or not folder:
                return
            path = os.path.abspath(os.path.expanduser(folder))
            self._request("system.open_folder",
                          {"path": path, "display": os.environ.get("DISPLAY") or None},
                          lambda _res: self.set_message(f"Opening {folder} in a new window…"))
        Dialog(self, "open_folder", "Open Folder", "Open a folder as a project in a new window:",
               ["Open", "Cancel"], answer,
               fields=[Field("folder", "Folder:", str(Path(self.project_root).parent))],
               icon="question")

    def save_active(self) -> None:
        ed = self.active_editor()
        if ed is not None:
            self.save_editor(ed)

    def save_editor(self, ed: Ed, then: Callable[[bool], None] | None = None,
                    *, force: bool = False, **extra: object) -> None:
        if not ed.summary.get("path") and "path" not in extra:
            self.save_as(ed, then)
            return

        def saved(summary: dict[str, Any]) -> None:
            ed.update_summary(summary)
            self.set_message(f"Saved {summary.get('path') or summary.get('name')}")
            if summary.get("path"):
                self.session = self.session.with_recent(summary["path"])
                self._fill_recent()
            if then:
                then(True)

        def failed(err: RioError) -> None:
            if err.kind == "file.conflict":
                self.conflict_prompt(ed, on_save=True, then=then)
                return
            self.show_error(err)
            if then:
                then(False)
        args = {"buffer": ed.buffer_id, "force": force,
                **{k: v for k, v in extra.items() if v is not None}}
        ed.when_quiet(lambda: self._request("buffer.save", args, saved, failed))

    def save_as_active(self) -> None:
        ed = self.active_editor()
        if ed is not None:
            self.save_as(ed)

    def save_as(self, ed: Ed, then: Callable[[bool], None] | None = None) -> None:
        fmt = ed.summary.get("format") or {}
        current = ed.summary.get("path") or ""
        rel = os.path.relpath(current, self.project_root) if current else "untitled.txt"

        def answer(button: str, values: dict[str, str]) -> None:
            if button != "Save":
                if then:
                    then(False)
                return
            self.save_editor(ed, then, path=values["path"], encoding=values["encoding"],
                             newline=values["newline"])
        Dialog(self, "save_as", "Save As", "Save the document as:", ["Save", "Cancel"], answer,
               fields=[Field("path", "File name:", rel),
                       Field("encoding", "Encoding:", str(fmt.get("encoding") or "utf-8"),
                             ENCODINGS),
                       Field("newline", "Line endings:", newline_name(fmt.get("newline")),
                             NEWLINES)], icon="question")

    def save_all(self, then: Callable[[], None] | None = None) -> None:
        dirty = [e for e in self.tabs() if e.summary.get("dirty") and e.summary.get("path")]
        remaining = [len(dirty)]

        def one_done(_ok: bool) -> None:
            remaining[0] -= 1
            if remaining[0] == 0 and then:
                then()
        for ed in dirty:
            self.save_editor(ed, one_done)
        if not dirty and then:
            then()

    def revert_active(self) -> None:
        ed = self.active_editor()
        if ed is None or not ed.summary.get("path"):
            return
        self._request("buffer.revert", {"buffer": ed.buffer_id}, ed.update_summary)

    def close_active(self) -> None:
        ed = self.active_editor()
        if ed is not None:
            self.close_editor(ed)

    def close_editor(self, ed: Ed, then: Callable[[bool], None] | None = None) -> None:
        """Close a tab, asking first when it has unsaved changes; ``then(closed)``."""
        def close(discard: bool) -> None:
            def closed(_res: object) -> None:
                self.remove_tab(ed)
                if then:
                    then(True)

            def failed(err: RioError) -> None:
                if err.kind == "buffer.unknown_buffer":
                    closed(None)
                    return
                self.show_error(err)
                if then:
                    then(False)
            ed.when_quiet(lambda: self._request(
                "buffer.close", {"buffer": ed.buffer_id, "discard": discard}, closed, failed))

        if not ed.summary.get("dirty"):
            close(False)
            return
        select_tab(self.notebook, str(ed))   # a tab is named by its widget's path

        def answer(button: str, _v: dict[str, str]) -> None:
            if button == "Save":
                self.save_editor(ed, lambda ok: close(False) if ok else (then and then(False)))
            elif button == "Don't Save":
                close(True)
            elif then:
                then(False)
        name = ed.summary.get("name") or "Untitled"
        Dialog(self, "unsaved", "Rio", f"Save changes to {name}?", ["Save", "Don't Save",
                                                                  "Cancel"], answer,
               detail="Your changes will be lost if you don't save them.", icon="warning")

    def quit(self) -> None:
        """Close every tab (prompting for unsaved ones), remember the session, exit 0."""
        if self.quitting:
            return
        self.save_session()
        dirty = [e for e in self.tabs() if e.summary.get("dirty")]

        def next_one(ok: bool = True) -> None:
            if not ok:
                self.set_message("Exit cancelled.")
                return
            if dirty:
                ed = dirty.pop(0)
                self.close_editor_keep_session(ed, next_one)
                return
            self._finish_quit()
        next_one()

    def close_editor_keep_session(self, ed: Ed, then: Callable[[bool], None]) -> None:
        """Quit's prompt: saving or discarding, but the tab stays in the session for next time."""
        def answer(button: str, _v: dict[str, str]) -> None:
            if button == "Save":
                self.save_editor(ed, then)
            elif button == "Don't Save":
                ed.when_quiet(lambda: self._request(
                    "buffer.close", {"buffer": ed.buffer_id, "discard": True},
                    lambda _r: then(True), lambda _e: then(True)))
            else:
                then(False)
        select_tab(self.notebook, str(ed))   # a tab is named by its widget's path
        Dialog(self, "unsaved", "Rio", f"Save changes to {ed.summary.get('name')}?",
               ["Save", "Don't Save", "Cancel"], answer,
               detail="Your changes will be lost if you don't save them.", icon="warning")

    def _finish_quit(self) -> None:
        self.quitting = True
        self.exit_code = 0
        self.root.quit()

    # --- conflicts ---------------------------------------------------------------------------------
    def conflict_prompt(self, ed: Ed, *, on_save: bool = False,
                        then: Callable[[bool], None] | None = None) -> None:
        if "conflict" in self.dialogs:
            return
        name = ed.summary.get("name") or "the file"

        def answer(button: str, _v: dict[str, str]) -> None:
            if button == "Reload":
                self._request("buffer.revert", {"buffer": ed.buffer_id}, ed.update_summary)
                if then:
                    then(False)
            elif button == "Keep Mine":
                if on_save or ed.summary.get("dirty"):
                    self.save_editor(ed, then, force=True)
                elif then:
                    then(False)
            elif button == "Show Difference":
                # The question comes back once the difference is closed: opened together,
                # one window covered the other and the grab of one left the other dead.
                self.show_difference(ed, then=lambda: self.conflict_prompt(
                    ed, on_save=on_save, then=then))
        select_tab(self.notebook, str(ed))   # a tab is named by its widget's path
        Dialog(self, "conflict", "File Changed",
               f"{name} was changed on disk by another program.",
               ["Reload", "Keep Mine", "Show Difference"], answer,
               detail="Reload it (your unsaved changes can be undone back), keep your version "
                      "(it overwrites the file on save), or compare them first.",
               icon="warning")

    def show_difference(self, ed: Ed, then: Callable[[], None] | None = None) -> None:
        """The file on disk against the editor's text, as a coloured unified diff in a modal
        window; ``then()`` once it is closed (or could not be shown)."""
        path = ed.summary.get("path")
        mine = ed.replica.text if ed.replica is not None else ""

        def failed(err: RioError) -> None:
            self.set_message(f"Could not show the difference: {err.message} {err.next}")
            if then:
                then()      # the question again, not an error box under it

        def got(res: dict[str, Any]) -> None:
            disk = res["text"]
            diff = difflib.unified_diff(disk.splitlines(True), mine.splitlines(True),
                                        f"{res['path']} (on disk)", f"{res['path']} (yours)")
            content = "".join(diff) or "The texts are the same.\n"

            def colour(t: tk.Text) -> None:
                t.tag_configure("add", foreground="#008000")
                t.tag_configure("del", foreground="#c00000")
                t.tag_configure("hunk", foreground="#000080" if self.theme.name == "classic"
                                else "#6cb6ff")
                for i, line in enumerate(content.splitlines(), 1):
                    tag = ("add" if line.startswith("+") else "del" if line.startswith("-")
                           else "hunk" if line.startswith("@@") else None)
                    if tag:
                        t.tag_add(tag, f"{i}.0", f"{i}.end")
            text_window(self, "difference", f"Difference — {ed.summary.get('name')}", content,
                        colour, on_close=then, grab=True)
        if path:
            self._request("fs.read", {"path": path, "max_chars": 5_000_000}, got, failed)
        elif then:
            then()
