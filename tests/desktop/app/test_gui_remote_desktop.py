"""The desktop on a remote headless instance (`rio --connect tcp://HOST:PORT`), over CURVE on
loopback: a real `rio serve --listen` on a temp project, the desktop a remote client with an
owner key of its own. Tree, open, type, save, Find in Files and Run work as on a local
instance, and the desktop reads nothing of the project from its own disk (it could not: the
project is another machine's)."""

from __future__ import annotations

import builtins
import io
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from actors.bus import curve_keys
from rio.config.instance import project_state_dir
from rio.runs.runner import ProjectCommands, save_project_commands
from tests.bus.test_remote import free_port_pair
from tests.support import REPO, RioServer, rio_env, wait_for

pytestmark = [pytest.mark.gui, pytest.mark.slow, pytest.mark.timeout(180)]

HELLO = "def hello():\n    return 1\n"
_REAL_OPEN = io.open


def disk_text(path: Path) -> str:
    """The file as the server's disk has it (read past the desktop's guard)."""
    with _REAL_OPEN(path, encoding="utf-8") as f:
        return f.read()


@pytest.fixture(scope="module")
def remote(tmp_path_factory):
    """A `rio serve --listen tcp://127.0.0.1:PORT` with server keys, and a client key folder
    (role owner) as `rio keys --client desk --role owner` and a copy would make it."""
    base = tmp_path_factory.mktemp("remote")
    root = base / "proj"
    (root / "docs").mkdir(parents=True)
    (root / "hello.py").write_text(HELLO)
    (root / "docs" / "notes.txt").write_text("nothing here\nthe remote needle is here\n")
    env = rio_env(base)
    curve = Path(env["RIO_CONFIG_DIR"]) / "curve"
    server_keys, _ = curve_keys.create_server_keys(curve)
    _keys, secret = curve_keys.create_client_keys("desk", curve, role="owner")
    client_dir = base / "client-keys"
    client_dir.mkdir(mode=0o700)
    shutil.copy(secret, client_dir / "desk.key_secret")
    (client_dir / "desk.key_secret").chmod(0o600)
    address = f"tcp://127.0.0.1:{free_port_pair()}"
    srv = RioServer(root.resolve(), base, env=env, extra_args=["--listen", address]).start()
    try:
        yield srv, address, server_keys.public.decode(), client_dir
    finally:
        srv.stop()


@pytest.fixture
def desk(remote, tk_root, monkeypatch, tmp_path):
    """The real App in this process as `python -m ui.tk --connect` builds it: a remote client
    over CURVE (actors.bus.client.connect_remote), the project root the instance reports."""
    from actors.bus.client import connect_remote
    from tests.desktop_support import InProcessApp
    srv, address, server_key, client_dir = remote
    monkeypatch.setenv("RIO_CLIENT_KEY_DIR", str(client_dir))
    # The desktop's own state (project commands) lives on its machine: here, tmp_path.
    monkeypatch.setenv("RIO_STATE_DIR", str(tmp_path / "client-state"))
    monkeypatch.setenv("RIO_CONFIG_DIR", str(tmp_path / "client-config"))
    conn = connect_remote(address, server_key, name="ui", timeout=10)
    assert conn.call("system.status", {}, timeout=10)["root"] == str(srv.root)
    app = InProcessApp(tk_root, srv, conn=conn, remote=address)
    try:
        yield app
    finally:
        app.close()
        with _REAL_OPEN(srv.root / "hello.py", "w", encoding="utf-8") as f:
            f.write(HELLO)


@pytest.fixture
def no_local_project(remote, monkeypatch):
    """The desktop in this process may not touch the project on this disk (on a real remote
    window it is another machine's): every stat, listing or open of a path under it is
    refused and recorded. The server's processes are others, and unaffected."""
    root = str(remote[0].root)
    touched: list[tuple[str, str]] = []

    def guard(fn):
        def guarded(path, *args, **kwargs):
            name = os.fspath(path) if isinstance(path, (str, os.PathLike)) else None
            if isinstance(name, str) and (name == root or name.startswith(root + os.sep)):
                touched.append((fn.__name__, name))
                raise PermissionError(f"the desktop touched {name} on its own disk")
            return fn(path, *args, **kwargs)
        return guarded
    for name in ("stat", "lstat", "scandir", "listdir", "open"):
        monkeypatch.setattr(os, name, guard(getattr(os, name)))
    monkeypatch.setattr(builtins, "open", guard(builtins.open))
    monkeypatch.setattr(io, "open", guard(io.open))
    return touched


def test_tree_open_type_save_find_and_run_on_a_remote_instance(desk, remote, no_local_project):
    srv, address, _key, _dir = remote
    app = desk.app
    tree = app.project_tree
    assert desk.pump(lambda: "." in tree.loaded and not tree.busy, 20)
    assert [tree.tree.item(c, "text") for c in tree.tree.get_children("")] == \
        ["docs", "hello.py"]
    tree.tree.focus_force()
    tree.select("hello.py")
    desk.root.update()
    tree.tree.event_generate("<Return>")       # Enter on a file opens it
    assert desk.pump(lambda: (ed := app.active_editor()) is not None and ed.ready, 20)
    ed = app.active_editor()
    assert ed.text.get("1.0", "end-1c") == HELLO
    ed.text.insert("end-1c", "x = 2\n")        # typed: the editor sends it to the core
    bid = ed.buffer_id
    assert desk.pump(lambda: desk.core_text(bid) == HELLO + "x = 2\n", 15)
    app.invoke("file.save")
    assert desk.pump(lambda: disk_text(srv.root / "hello.py") == HELLO + "x = 2\n", 15)

    # Find in Files: the core searches (the unsaved text of an open buffer included).
    ed.text.insert("1.0", "# needle, unsaved\n")
    pane = app.output_pane
    assert pane.find.start("needle")
    assert desk.pump(lambda: not pane.find.running, 20)
    assert pane.find.text.get("1.0", "end-1c").splitlines() == [
        "docs/notes.txt:2:12: the remote needle is here", "hello.py:1:3: # needle, unsaved"]
    assert "2 matches in 2 files" in pane.find.status.cget("text")

    # Run: the command runs on the server; its output comes back over the bus.
    save_project_commands(project_state_dir(pane.root_path),
                          ProjectCommands(run="echo ran in $(basename $PWD); echo hello.py:2: x"))
    app.invoke("project.run")
    assert desk.pump(lambda: "Finished" in pane.output.text.get("1.0", "end"), 30)
    shown = pane.output.text.get("1.0", "end-1c").splitlines()
    assert f"ran in {srv.root.name}" in shown
    # A reference to a file of the remote project is a link (known from fs.walk, not the disk).
    row = shown.index("hello.py:2: x") + 1
    assert desk.pump(lambda: pane.output.link_at(f"{row}.2") == ("hello.py", 2, None), 10)
    assert no_local_project == []


def test_open_folder_on_a_remote_window_says_why_and_starts_nothing(desk):
    app = desk.app
    shown = []
    app.show_error = shown.append            # the window's error dialog, recorded
    app.invoke("file.open_folder")
    assert len(shown) == 1 and shown[0].kind == "bus.remote_not_allowed"
    assert "remote" in shown[0].message or "tcp://" in shown[0].message
    assert "rio --connect" in shown[0].next and "open_folder" not in app.dialogs


def test_a_remote_windows_title_names_the_server_it_is_connected_to(desk, remote):
    """`rio --connect` (ADR-0028): the title says which server the window shows, with or
    without a document in front; a local window's title stays as it was."""
    address = remote[1].removeprefix("tcp://")
    assert desk.root.title() == f"Rio — proj — on {address}"
    assert desk.app.window_title("hello.py") == f"hello.py — Rio — proj — on {address}"
    desk.app.remote = None
    try:
        assert desk.app.window_title("hello.py") == "hello.py — Rio — proj"
    finally:
        desk.app.remote = remote[1]


@pytest.mark.skipif(shutil.which("xdotool") is None, reason="xdotool is not installed")
def test_rio_connect_opens_the_desktop_on_the_remote_project(remote, display, tmp_path):
    """The command itself: `rio --connect ADDRESS --server-key KEY` opens the window on the
    remote project; keys typed into it (xdotool) open a file from the tree, edit and save it
    on the server's disk, and Find in Files + F4 open the file where the string is."""
    srv, address, server_key, client_dir = remote
    env = {**os.environ, "DISPLAY": display, "RIO_CLIENT_KEY_DIR": str(client_dir),
           "RIO_STATE_DIR": str(tmp_path / "state"), "RIO_CONFIG_DIR": str(tmp_path / "config"),
           "PYTHONPATH": str(REPO)}
    for key in ("RIO_RUNTIME_DIR", "RIO_INSTANCE", "RIO_SERVER_KEY"):
        env.pop(key, None)
    proc = subprocess.Popen([sys.executable, "-m", "rio.cli", "--connect", address,
                             "--server-key", server_key], env=env, stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(tmp_path))
    try:
        found: list[str] = []

        def window() -> bool:     # the title is "Rio — proj — on HOST:PORT"
            out = subprocess.run(["xdotool", "search", "--onlyvisible", "--name",
                                  f"^Rio .* {srv.root.name} .*on "],
                                 env=env, capture_output=True, text=True, timeout=10)
            found[:] = out.stdout.split()
            return bool(found) or proc.poll() is not None
        assert wait_for(window, 40, 0.2) and proc.poll() is None, proc.stderr.read().decode() \
            if proc.poll() is not None else "no window"

        def keys(*words: str) -> None:
            subprocess.run(["xdotool", "windowfocus", "--sync", found[0], "key", "--delay", "30",
                            *words], env=env, check=True, timeout=10)

        def open_paths() -> set[str]:
            return {b.get("path") for b in srv.call("buffer.list")}

        # Alt+1 puts the focus on the tree's first item (docs/), Down then Enter opens
        # hello.py. Repeated until the core has it open: the window fills in after it maps.
        assert wait_for(lambda: keys("alt+1", "Down", "Return") or "hello.py" in open_paths(),
                        40, 1.0)
        bid = next(b["buffer"] for b in srv.call("buffer.list") if b.get("path") == "hello.py")
        assert wait_for(lambda: keys("ctrl+End", "Z") or
                        srv.call("buffer.text", {"buffer": bid})["text"].startswith(HELLO + "Z"),
                        30, 1.0)
        typed = srv.call("buffer.text", {"buffer": bid})["text"]
        keys("ctrl+s")
        assert wait_for(lambda: (srv.root / "hello.py").read_text() == typed, 15)

        # Find in Files (Ctrl+Shift+F), then F4 opens the first result.
        keys("ctrl+shift+f")
        subprocess.run(["xdotool", "type", "--delay", "30", "remote needle"], env=env,
                       check=True, timeout=10)
        keys("Return")
        assert wait_for(lambda: keys("F4") or "docs/notes.txt" in open_paths(), 30, 1.0)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        for bid in [b["buffer"] for b in srv.call("buffer.list")]:
            srv.call("buffer.close", {"buffer": bid, "discard": True})
        (srv.root / "hello.py").write_text(HELLO)
