"""The project tree on the left: a ttk.Treeview filled lazily by ``fs.list`` over the bus.

The core applies the ignores (.git, node_modules, virtualenvs, .gitignore) and the workspace's
confinement, so the tree shows exactly what the project serves. A folder is listed when it is
first opened (a placeholder child gives it its expand arrow); Refresh lists every open folder
again and keeps what was open and selected. Double-click or Enter on a file opens it through
``app.open_path``. Item ids are the project-relative paths ``fs.list`` returns.

The core watches the project (actors/core/fs_watcher.py): ``fs.changed`` names the folders whose
entries changed on disk, and the tree lists those it shows again — a file an agent's shell
made appears without Refresh; ``more`` (a storm, new ignore rules) lists every open folder.
"""

from __future__ import annotations

import tkinter as tk
from tkinter import ttk
from typing import Any, Callable

from rio.protocol.errors import error_from_wire
from rio.protocol.frames import Event, Reply, thaw
from ui.tk.app.seams import TreeHost

_PLACEHOLDER = "<loading>/"
_NOTE = "<note>/"


def _icons(app: TreeHost, root: tk.Misc) -> dict[str, tk.PhotoImage]:
    try:
        from ui.tk.widgets.icons import icon
        theme = str(app.settings.get("theme", "classic"))
        return {"dir": icon("open", theme, root), "file": icon("new", theme, root)}
    except Exception:  # noqa: BLE001 -- icons are decoration; the tree works without them
        return {}


class ProjectTree:
    def __init__(self, app: TreeHost, parent: tk.Misc | None = None):
        self.app = app
        slot = parent if parent is not None else app.tree_slot
        self.frame = ttk.Frame(slot)
        self.frame.pack(fill="both", expand=True)
        head = ttk.Frame(self.frame)
        head.pack(side="top", fill="x")
        self.title = ttk.Label(head, text="Project", anchor="w", padding=(4, 1))
        self.title.pack(side="left", fill="x", expand=True)
        self.refresh_button = ttk.Button(head, text="⟳", width=3, command=self.refresh)
        self.refresh_button.pack(side="right")
        body = ttk.Frame(self.frame)
        body.pack(side="top", fill="both", expand=True)
        self.tree = ttk.Treeview(body, show="tree", selectmode="browse")
        scroll = ttk.Scrollbar(body, orient="vertical", command=self.tree.yview)
        self.tree.configure(yscrollcommand=scroll.set)
        scroll.pack(side="right", fill="y")
        self.tree.pack(side="left", fill="both", expand=True)
        self.tree.column("#0", width=220, stretch=True)
        self.images = _icons(app, self.tree)
        self.kinds: dict[str, str] = {}
        self.loaded: set[str] = set()
        self.pending: dict[str, int] = {}
        #: folders that changed on disk while their listing was on its way: listed again then
        self.stale: set[str] = set()
        self.error = ""
        self.tree.bind("<<TreeviewOpen>>", self._on_open)
        self.tree.bind("<Double-Button-1>", self._on_double)
        self.tree.bind("<Return>", self._on_enter)
        self.tree.bind("<KP_Enter>", self._on_enter)
        self.tree.bind("<F5>", self._on_f5)
        self.tree.bind("<Button-3>", self._context_menu)
        self.tree.bind("<Shift-F10>", self._context_menu)
        self.tree.bind("<Menu>", self._context_menu)
        # A file saved under a new name (Save As, an agent's new file) appears without a
        # manual refresh when its folder is showing.
        app.conn.subscribe("buffer.saved", self._on_saved)
        app.conn.subscribe("fs.changed", self._on_disk_changed)
        self.list_folder(".")

    # --- listing -------------------------------------------------------------------------------
    def list_folder(self, path: str, then: Callable[[], None] | None = None) -> None:
        """Ask the core for one folder; its entries replace the folder's children."""
        self.pending[path] = self.pending.get(path, 0) + 1

        def reply(rep: Reply) -> None:
            self.pending[path] -= 1
            if not self.pending[path]:
                del self.pending[path]
                if path in self.stale:       # changed on disk after this listing was made
                    self.stale.discard(path)
                    self.list_folder(path)
            if rep.ok:
                self._fill(path, thaw(rep.result))
            else:
                err = error_from_wire(thaw(rep.error))
                self.error = err.message
                self._note(path, f"(cannot list: {err.message})")
            if then is not None:
                then()

        self.app.conn.request("fs.list", {"path": path}, reply)

    def _parent_iid(self, path: str) -> str:
        return "" if path in (".", "") else path

    def _fill(self, path: str, listing: dict[str, Any]) -> None:
        parent = self._parent_iid(path)
        if parent and not self.tree.exists(parent):
            return  # the folder vanished from the tree meanwhile
        wanted = [e for e in listing.get("entries", []) if e.get("kind") in ("dir", "file")]
        keep = {e["path"] for e in wanted}
        for child in self.tree.get_children(parent):
            if child not in keep:
                self._forget(child)
                self.tree.delete(child)
        for index, entry in enumerate(wanted):
            iid, kind = entry["path"], entry["kind"]
            if self.tree.exists(iid):
                self.tree.move(iid, parent, index)
            else:
                self.tree.insert(parent, index, iid=iid, text=entry["name"],
                                 image=self.images.get(kind, ""), open=False)
                if kind == "dir":
                    self.tree.insert(iid, "end", iid=_PLACEHOLDER + iid, text="…")
            self.kinds[iid] = kind
        if listing.get("truncated"):
            self._note(path, "(more entries not shown)", append=True)
        self.loaded.add(path)

    def _note(self, path: str, text: str, append: bool = False) -> None:
        parent = self._parent_iid(path)
        iid = _NOTE + path
        if self.tree.exists(iid):
            self.tree.delete(iid)
        if not append:
            for child in self.tree.get_children(parent):
                if child.startswith(_PLACEHOLDER):
                    self.tree.delete(child)
        self.tree.insert(parent, "end", iid=iid, text=text)

    def _forget(self, iid: str) -> None:
        for child in self.tree.get_children(iid):
            self._forget(child)
        self.kinds.pop(iid, None)
        self.loaded.discard(iid)

    # --- events --------------------------------------------------------------------------------
    def _on_open(self, _event: tk.Event | None = None) -> None:
        iid = self.tree.focus()
        if iid and self.kinds.get(iid) == "dir" and iid not in self.loaded:
            self.list_folder(iid)

    def expand(self, path: str, then: Callable[[], None] | None = None) -> None:
        """Open a folder (listing it when needed)."""
        self.tree.item(path, open=True)
        if path not in self.loaded:
            self.list_folder(path, then)
        elif then is not None:
            then()

    def _on_double(self, event: tk.Event) -> str | None:
        iid = self.tree.identify_row(event.y)
        if iid and self.kinds.get(iid) == "file":
            self.open(iid)
            return "break"
        return None

    def _on_enter(self, _event: tk.Event | None = None) -> str:
        iid = self.tree.focus()
        if self.kinds.get(iid) == "file":
            self.open(iid)
        elif self.kinds.get(iid) == "dir":
            if self.tree.item(iid, "open"):
                self.tree.item(iid, open=False)
            else:
                self.expand(iid)
        return "break"

    def open(self, path: str) -> None:
        self.app.open_path(path)

    def _on_f5(self, _event: tk.Event) -> str:
        self.refresh()
        return "break"

    def refresh(self) -> None:
        """List the root and every open folder again; what was open stays open."""
        open_dirs = [p for p in sorted(self.loaded) if p == "." or (
            self.tree.exists(p) and self.tree.item(p, "open"))]
        self.loaded = {p for p in self.loaded if p in open_dirs}
        for path in open_dirs:
            self.list_folder(path)

    def _context_menu(self, event: tk.Event) -> str:
        iid = self.tree.identify_row(event.y) if event.y else self.tree.focus()
        if iid and iid in self.kinds:
            self.select(iid)
        iid = self.tree.focus()
        kind = self.kinds.get(iid)
        menu = tk.Menu(self.tree, tearoff=False)
        if kind == "file":
            menu.add_command(label="Open", underline=0, command=lambda: self.open(iid))
        folder = iid if kind == "dir" else (iid.rsplit("/", 1)[0] if "/" in iid else ".")
        pane = self.app.output_pane
        if pane is not None:
            menu.add_command(label="Find in Folder…", underline=0,
                             command=lambda: self.find_in_folder(folder))
        menu.add_separator()
        menu.add_command(label="Refresh", underline=0, accelerator="F5", command=self.refresh)
        self.menu = menu
        x = event.x_root or self.tree.winfo_rootx() + 20
        y = event.y_root or self.tree.winfo_rooty() + 20
        try:
            menu.tk_popup(x, y)
        finally:
            menu.grab_release()
        return "break"

    def find_in_folder(self, folder: str) -> None:
        pane = self.app.output_pane
        if pane is not None:
            pane.find.folder.set(folder or ".")
            pane.show_find()

    def _on_saved(self, event: Event) -> None:
        path = thaw(event.data).get("path")
        if not isinstance(path, str) or self.tree.exists(path):
            return
        folder = path.rsplit("/", 1)[0] if "/" in path else "."
        if folder in self.loaded and folder not in self.pending:
            self.list_folder(folder)

    def _on_disk_changed(self, event: Event) -> None:
        """``fs.changed``: list again the named folders the tree has listed (a folder not
        listed yet is listed when opened, as it is then)."""
        data = thaw(event.data)
        if data.get("more"):
            self.refresh()
            return
        for folder in data.get("folders") or ():
            if not isinstance(folder, str):
                continue
            if folder in self.pending:      # its listing may predate the change
                self.stale.add(folder)
            elif folder not in self.loaded:
                continue
            elif folder == "." or (self.tree.exists(folder) and self.tree.item(folder, "open")):
                self.list_folder(folder)
            else:
                self.loaded.discard(folder)   # closed: listed again when it is opened

    def select(self, path: str) -> None:
        if self.tree.exists(path):
            self.tree.selection_set(path)
            self.tree.focus(path)
            self.tree.see(path)

    def reveal(self, path: str) -> None:
        """Select ``path`` (project-relative), listing and opening its folders first: the
        tree follows the active tab."""
        parts = path.split("/")
        folders = ["/".join(parts[:i]) for i in range(1, len(parts))]

        def step(i: int, relisted: bool = False) -> None:
            # A folder or file made since its parent was listed (by another program, or an
            # agent) is not in the tree yet: list the parent again, once, then go on.
            target = folders[i] if i < len(folders) else path
            if not self.tree.exists(target):
                if not relisted:
                    self.list_folder(folders[i - 1] if i else ".", lambda: step(i, True))
                return
            if i == len(folders):
                self.select(path)
            else:
                self.expand(folders[i], lambda: step(i + 1))
        if self.pending:            # the root listing is still on its way: try again then
            self.tree.after(50, lambda: self.reveal(path))
            return
        step(0)

    def selected(self) -> str | None:
        sel = self.tree.selection()
        return str(sel[0]) if sel else None

    def focus(self) -> None:
        """Keyboard focus into the tree, on the selected item (or the first)."""
        self.tree.focus_set()
        if not self.tree.focus():
            first = next(iter(self.tree.get_children("")), "")
            if first:
                self.select(first)

    @property
    def busy(self) -> bool:
        return bool(self.pending)


def install(app: TreeHost) -> ProjectTree:
    """Fill ``app.tree_slot`` and register the tree's commands; the caller keeps the tree as
    ``app.project_tree`` (ui/tk/app/plugins.py)."""
    tree = ProjectTree(app)
    app.register_command("project.refresh_tree", "Refresh &Tree", "", tree.refresh,
                         menu="Project")
    app.register_command("view.focus_tree", "Project &Tree", "Alt+1", tree.focus, menu="View")
    return tree
