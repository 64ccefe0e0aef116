"""ui/tk/prefs/store.py: the one writer of what the desktop keeps (ui.json, the session, the
project's commands, API keys) — its merge under a lock, its formats, and the rule that no
other ui/ module reaches the writers."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rio.protocol.errors import ConfigError
from rio.runs.runner import ProjectCommands, load_project_commands
from ui.tk.agent.settings import PanelPrefs, load_panel_prefs, save_panel_prefs
from ui.tk.app import session as session_mod
from ui.tk.prefs import store
from ui.tk.prefs.model import Preferences, load_preferences, save_preferences

ROOT = Path(__file__).resolve().parents[3]

#: What only the store may use: the atomic writer, the key store, the commands' and providers' writers.
WRITER_MODULES = ("rio.files.atomic", "rio.agent.secrets")
WRITER_NAMES = ("save_project_commands", "save_provider_settings")


# --- ui.json: two owners of keys, one file ------------------------------------------------------

def test_panel_and_editor_prefs_written_in_turn_keep_each_others_keys(tmp_path):
    path = tmp_path / "ui.json"
    path.write_text(json.dumps({"from_a_newer_version": [1, 2]}))
    save_panel_prefs(path, PanelPrefs(side="left", width=500))
    save_preferences(Preferences(theme="dark", tab_width=8), path)
    save_panel_prefs(path, PanelPrefs(side="left", width=600, open=True))
    save_preferences(Preferences(theme="dark", tab_width=2), path)
    assert load_panel_prefs(path) == PanelPrefs(side="left", width=600, open=True)
    assert load_preferences(path)["tab_width"] == 2
    assert load_preferences(path)["theme"] == "dark"
    assert json.loads(path.read_text())["from_a_newer_version"] == [1, 2]


@pytest.mark.timeout(20)
def test_two_writers_interleaved_in_one_process_keep_both(tmp_path, monkeypatch):
    """The editor's prefs writer has read ui.json and not yet written it when the panel's
    writer starts. Without the store's lock the panel would read the same old file and one
    of the two writes would put the other's keys back to what they were (here: gone)."""
    path = tmp_path / "ui.json"
    real_read = store.read_json_object
    editor_has_read = threading.Event()
    panel_has_read = threading.Event()

    def read_then_let_the_other_in(p: Path) -> dict[str, object]:
        data = real_read(p)
        if not editor_has_read.is_set():
            editor_has_read.set()
            # Give the panel's writer every chance to read now: it can only if nothing
            # serialises the two (with the lock this wait runs out and the write goes on).
            panel_has_read.wait(0.3)
        else:
            panel_has_read.set()
        return data

    monkeypatch.setattr(store, "read_json_object", read_then_let_the_other_in)
    errors: list[BaseException] = []

    def run(fn: Callable[[], object]) -> None:
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 -- reported by the assert below
            errors.append(exc)

    editor = threading.Thread(target=run, args=(
        lambda: save_preferences(Preferences(theme="dark", wrap=True), path),))
    panel = threading.Thread(target=run, args=(
        lambda: save_panel_prefs(path, PanelPrefs(side="left", open=True)),))
    editor.start()
    assert editor_has_read.wait(5)
    panel.start()
    editor.join(10)
    panel.join(10)
    assert not editor.is_alive() and not panel.is_alive() and errors == []
    assert panel_has_read.is_set()
    saved = json.loads(path.read_text())
    assert saved["theme"] == "dark" and saved["wrap"] is True
    assert saved["agent_side"] == "left" and saved["agent_open"] is True


OTHER_WINDOW = """
import sys
from pathlib import Path
from ui.tk.prefs import store
path = Path(sys.argv[1])
with store.ui_json_locked(path):
    data = store.read_json_object(path)
    print("read", flush=True)
    sys.stdin.readline()
    data["agent_side"] = "left"
    store.write_json(path, data)
print("wrote", flush=True)
"""


@pytest.fixture
def other_window() -> Iterator[Callable[[Path], subprocess.Popen[str]]]:
    """Another Rio window's process writing ui.json (the store's code, in a child)."""
    started: list[subprocess.Popen[str]] = []

    def start(path: Path) -> subprocess.Popen[str]:
        proc = subprocess.Popen([sys.executable, "-c", OTHER_WINDOW, str(path)], cwd=ROOT,
                                env={**os.environ, "PYTHONPATH": str(ROOT)}, text=True,
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.wait(10)
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()


@pytest.mark.slow
@pytest.mark.timeout(30)
def test_another_windows_process_and_this_one_keep_both_keys(tmp_path, other_window):
    """Each project's window is its own process and they share ui.json: the other window has
    read the file and not yet written it when this one saves. The folder lock makes this one
    wait; without it this write would land first and the other window's would drop it."""
    path = tmp_path / "ui.json"
    child = other_window(path)
    assert child.stdout is not None and child.stdin is not None
    assert child.stdout.readline().strip() == "read"
    saver = threading.Thread(target=store.update_ui, args=({"theme": "dark"}, path))
    saver.start()
    saver.join(0.3)          # long enough to land here if nothing held it back
    child.stdin.write("go\n")
    child.stdin.flush()
    assert child.stdout.readline().strip() == "wrote"
    saver.join(10)
    assert not saver.is_alive() and child.wait(10) == 0
    assert json.loads(path.read_text()) == {"agent_side": "left", "theme": "dark"}


def test_a_damaged_ui_json_is_replaced_by_the_merge_not_a_crash(tmp_path):
    path = tmp_path / "ui.json"
    path.write_text("{not json")
    store.update_ui({"agent_width": 400}, path)
    assert json.loads(path.read_text()) == {"agent_width": 400}
    path.write_text("[1, 2]")
    assert store.read_ui(path) == {}


def test_ui_json_lives_where_it_always_did(tmp_path, monkeypatch):
    monkeypatch.setenv("RIO_CONFIG_DIR", str(tmp_path / "cfg"))
    store.update_ui({"theme": "dark"})
    assert json.loads((tmp_path / "cfg" / "ui.json").read_text()) == {"theme": "dark"}


# --- the session, the project's commands, the keys ----------------------------------------------

def test_the_session_file_keeps_its_name_and_format(tmp_path):
    s = session_mod.Session(recent=("/a.py",), documents=(session_mod.DocState("b1", "/a.py", 3),))
    session_mod.save(tmp_path, s)
    data = json.loads((tmp_path / "ui-session.json").read_text())
    assert data["version"] == 1 and data["recent"] == ["/a.py"]
    assert session_mod.load(tmp_path) == s


def test_the_panels_last_shown_conversation_keeps_its_file(tmp_path):
    from ui.tk.agent.settings import load_last_shown, save_last_shown
    path = tmp_path / "agent-panel.json"
    save_last_shown(path, "c0ffee")
    assert json.loads(path.read_text()) == {"conversation": "c0ffee"}
    assert load_last_shown(path) == "c0ffee"
    path.write_text("[damaged")
    assert load_last_shown(path) is None
    assert load_last_shown(None) is None and load_last_shown(tmp_path / "gone.json") is None


def test_project_commands_go_through_the_store_in_their_old_file(tmp_path):
    (tmp_path / "project.json").write_text(json.dumps({"other": 1}))
    store.save_commands(tmp_path, ProjectCommands(run="make run", build="make", cwd="src"))
    assert load_project_commands(tmp_path) == ProjectCommands(run="make run", build="make",
                                                              cwd="src")
    assert json.loads((tmp_path / "project.json").read_text())["other"] == 1


class _MemoryKeyring:
    priority = 1

    def __init__(self) -> None:
        self.saved: dict[tuple[str, str], str] = {}

    def set_password(self, service: str, name: str, value: str) -> None:
        self.saved[(service, name)] = value

    def get_password(self, service: str, name: str) -> str | None:
        return self.saved.get((service, name))


def test_a_typed_key_is_stored_and_an_empty_one_refused(tmp_path):
    from rio.agent.secrets import SecretStore
    ring = _MemoryKeyring()
    keys = SecretStore(config_dir=tmp_path, keyring_backend=ring, env={})
    assert store.store_key(keys, "openai", "  sk-test-123  ") == "keyring"
    secret, source = keys.get("openai")
    assert secret is not None and secret.reveal() == "sk-test-123" and source == "keyring"
    with pytest.raises(ConfigError, match="empty"):
        store.store_key(keys, "openai", "   ")
    assert not (tmp_path / "credentials.json").exists()


# --- the rule: one writer ----------------------------------------------------------------------

def writer_uses(source: str) -> list[str]:
    """The writers a module's source reaches: imports (lazy ones too) of the writer modules or
    of ``save_project_commands``, and any use of that name."""
    found: list[str] = []
    if not any(word in source for word in ("atomic", "secrets", *WRITER_NAMES)):
        return found          # cannot reach them (and parsing a hundred modules costs time)
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.startswith(WRITER_MODULES)]
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                if node.module.startswith(WRITER_MODULES) or full.startswith(WRITER_MODULES):
                    found.append(full)
                elif alias.name in WRITER_NAMES:
                    found.append(full)
        elif isinstance(node, ast.Attribute) and node.attr in WRITER_NAMES:
            found.append(node.attr)
        elif isinstance(node, ast.Name) and node.id in WRITER_NAMES:
            found.append(node.id)
    return found


def test_the_rule_sees_every_way_in():
    assert writer_uses("from rio.files.atomic import write_json") == ["rio.files.atomic.write_json"]
    assert writer_uses("def f():\n    from rio.files import atomic") == ["rio.files.atomic"]
    assert writer_uses("import rio.agent.secrets as s") == ["rio.agent.secrets"]
    assert writer_uses("from rio.runs import runner\nrunner.save_project_commands(a, b)") == [
        "save_project_commands"]
    assert writer_uses("from rio.runs.runner import load_project_commands") == []


def test_only_the_store_reaches_the_writers():
    modules = sorted((ROOT / "ui").rglob("*.py"))
    assert len(modules) > 50     # the scan sees the desktop
    offenders = {str(p.relative_to(ROOT)): uses for p in modules
                 if p != ROOT / "ui/tk/prefs/store.py"
                 and (uses := writer_uses(p.read_text(encoding="utf-8")))}
    assert offenders == {}
    assert writer_uses((ROOT / "ui/tk/prefs/store.py").read_text(encoding="utf-8"))
