"""The Project menu: Run (F5), Build, Stop, and Set Run/Build Command….

The commands are the project's settings (:class:`rio.runs.runner.ProjectCommands`, kept in
``project_state_dir(root)/project.json``); starting and stopping are ``run.start`` /
``run.stop`` requests to the core, which owns the processes (actors/core/runner_actor.py). The output
lands in the output pane's Output tab.
"""

from __future__ import annotations

import tkinter as tk
from pathlib import Path
from tkinter import ttk
from typing import Callable, Literal

from rio.config.instance import project_state_dir
from rio.protocol.errors import RioError, error_from_wire
from rio.protocol.frames import Reply, thaw
from rio.runs.runner import ProjectCommands, load_project_commands
from ui.tk.app.seams import RunHost, RunOutput
from ui.tk.prefs.store import save_commands
from ui.tk.widgets.dialog_bridge import bridge, caption, centre_over

Which = Literal["run", "build"]
STOP_TIMEOUT_S = 20.0


class RunController:
    def __init__(self, app: RunHost, pane: RunOutput):
        self.app = app
        self.pane = pane
        self.dialog: CommandsDialog | None = None
        self.last_error = ""

    @property
    def state_dir(self) -> Path:
        return project_state_dir(self.pane.root_path)

    def commands(self) -> ProjectCommands:
        try:
            return load_project_commands(self.state_dir)
        except RioError as err:
            self._error(err)
            return ProjectCommands()

    def save(self, commands: ProjectCommands) -> None:
        save_commands(self.state_dir, commands)

    def _error(self, err: RioError) -> None:
        self.last_error = f"{err.message} {err.next}"
        self.pane.show_output()
        self.pane.output.write(f"> {err.message} {err.next}\n", "stderr")

    # --- run / build / stop ------------------------------------------------------------------
    def start(self, which: Which = "run") -> None:
        commands = self.commands()
        command = commands.command(which)
        if not command.strip():
            self.edit_commands(then=lambda: self._start_if_set(which))
            return
        if self.pane.running():
            self.stop(then=lambda: self._send_start(which, command, commands.cwd))
            return
        self._send_start(which, command, commands.cwd)

    def _start_if_set(self, which: Which) -> None:
        if self.commands().command(which).strip():
            self.start(which)

    def _send_start(self, which: Which, command: str, cwd: str) -> None:
        label = "Build" if which == "build" else "Run"

        def reply(rep: Reply) -> None:
            if rep.ok:
                self.pane.run_started(thaw(rep.result), label)
            else:
                self._error(error_from_wire(thaw(rep.error)))

        def go() -> None:
            self.app.conn.request("run.start", {"command": command, "cwd": cwd or "."}, reply)

        # Like every IDE of the time: save the open files first, so the build sees them.
        if self.app.settings.get("save_before_run", True):
            self.app.save_all(then=go)
            return
        go()

    def stop(self, then: Callable[[], None] | None = None) -> bool:
        run = self.pane.current_run
        if not run or not self.pane.running():
            if then is not None:
                then()
            return False
        self.pane.output.write("> Stopping…\n", "info", run)

        def reply(rep: Reply) -> None:
            if not rep.ok:
                self._error(error_from_wire(thaw(rep.error)))
            if then is not None:
                then()

        self.app.conn.request("run.stop", {"run": run}, reply, timeout=STOP_TIMEOUT_S)
        return True

    # --- settings ----------------------------------------------------------------------------
    def edit_commands(self, then: Callable[[], None] | None = None) -> "CommandsDialog":
        if self.dialog is not None and self.dialog.alive():
            self.dialog.top.lift()
            return self.dialog
        self.dialog = CommandsDialog(self, then)
        return self.dialog


class CommandsDialog:
    """Set Run/Build Command…: two shell commands and the folder they run in."""

    def __init__(self, controller: RunController, then: Callable[[], None] | None):
        self.c = controller
        self.then = then
        root = controller.app.root
        self.top = top = tk.Toplevel(root)
        top.title("Run/Build Commands")
        top.transient(root)
        top.resizable(True, False)
        caption(controller.app, top, "Run/Build Commands", self.cancel)
        body = ttk.Frame(top, padding=10)
        body.pack(fill="both", expand=True)
        body.columnconfigure(1, weight=1)
        current = controller.commands()
        self.run = tk.StringVar(top, value=current.run)
        self.build = tk.StringVar(top, value=current.build)
        self.cwd = tk.StringVar(top, value=current.cwd)
        rows = [("Run command (F5):", self.run, 0), ("Build command:", self.build, 0),
                ("Working folder:", self.cwd, 0)]
        self.entries: list[ttk.Entry] = []
        for i, (label, var, underline) in enumerate(rows):
            ttk.Label(body, text=label, underline=underline).grid(row=i, column=0, sticky="w")
            e = ttk.Entry(body, textvariable=var, width=48)
            e.grid(row=i, column=1, sticky="ew", padx=(6, 0), pady=2)
            self.entries.append(e)
        ttk.Label(body, text="Commands run with /bin/sh in the working folder (relative to the "
                             "project); credentials are removed from their environment.",
                  wraplength=420, foreground="#606060").grid(row=3, column=0, columnspan=2,
                                                             sticky="w", pady=(6, 6))
        buttons = ttk.Frame(body)
        buttons.grid(row=4, column=0, columnspan=2, sticky="e")
        ttk.Button(buttons, text="OK", width=10, command=self.ok, default="active").pack(
            side="left", padx=2)
        ttk.Button(buttons, text="Cancel", width=10, command=self.cancel).pack(side="left",
                                                                               padx=2)
        top.bind("<Return>", lambda e: self.ok())
        top.bind("<Escape>", lambda e: self.cancel())
        top.protocol("WM_DELETE_WINDOW", self.cancel)
        bridge(controller.app, "run_commands", top,
               {"run": self.run, "build": self.build, "cwd": self.cwd},
               {"OK": self.ok, "Cancel": self.cancel})
        centre_over(top, root)
        self.entries[0].focus_set()

    def alive(self) -> bool:
        try:
            return bool(self.top.winfo_exists())
        except tk.TclError:
            return False

    def ok(self) -> None:
        commands = ProjectCommands(run=self.run.get().strip(), build=self.build.get().strip(),
                                   cwd=self.cwd.get().strip() or ".")
        try:
            self.c.save(commands)
        except OSError as exc:
            ttk.Label(self.top, text=f"Cannot save: {exc}", foreground="#c00000").pack()
            return
        self.top.destroy()
        if self.then is not None:
            self.then()

    def cancel(self) -> None:
        self.top.destroy()


def install(app: RunHost, pane: RunOutput) -> RunController:
    """Register the Project menu on the app (names match ui/tk/app/commands.py); the caller
    keeps the controller as ``app.run_controller`` (ui/tk/app/plugins.py)."""
    c = RunController(app, pane)
    app.register_command("project.run", "&Run", "F5", lambda: c.start("run"), menu="Project")
    app.register_command("project.build", "&Build", "Ctrl+B", lambda: c.start("build"),
                         menu="Project")
    app.register_command("project.stop", "&Stop", "Shift+F5", c.stop, menu="Project")
    app.register_command("project.set_commands", "Set Run/Build &Command...", "",
                         c.edit_commands, menu="Project")
    return c
