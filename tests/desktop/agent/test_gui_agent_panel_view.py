"""The agent panel's conversation view on a real Tk display, without a Rio instance: streaming
appends at the end (the history is never redrawn), cards follow their block's state, and the
numbers of issue 12 (2,000 deltas; a 200-message history drawn in ≤ 300 ms)."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

from ui.tk.agent.model import Block, Conversation

pytestmark = pytest.mark.gui

C = "3f9a0c12b7de"
DIFF = "--- a/notes.txt\n+++ b/notes.txt\n@@ -1,2 +1,2 @@\n alpha\n-beta\n+gamma\n"


@pytest.fixture
def view(tk_root):
    from ui.tk.agent.view import ConversationView
    from ui.tk.widgets.theme import apply_theme
    theme = apply_theme(tk_root, "classic")
    answered: list = []
    app = SimpleNamespace(theme=theme, root=tk_root, ui_font_family=lambda: "DejaVu Sans",
                          editor_font_tuple=lambda: ("DejaVu Sans Mono", 10))
    panel = SimpleNamespace(app=app, answered=answered,
                            answer=lambda pid, what: answered.append((pid, what)),
                            open_file=lambda p: answered.append(("open", p)),
                            save_turn=lambda b: answered.append(("save", b)),
                            undo_turn=lambda b: answered.append(("undo", b)))
    tk_root.geometry("420x600")
    v = ConversationView(panel, tk_root)
    tk_root.update()
    return v


def history(n: int) -> Conversation:
    conv = Conversation(C)
    for i in range(n // 2):
        turn = f"{C}.{i + 1}"
        conv.blocks.append(Block("user", turn, f"question {i}"))
        conv.blocks.append(Block("assistant", turn, f"## Answer {i}\nSome `code` and **bold**.\n"
                                 "- a point\n- another\n```\nx = 1\n```\nDone."))
    return conv


@pytest.mark.slow
def test_streamed_deltas_only_touch_the_line_being_written(view):
    conv = history(20)
    view.show(conv)
    start = view.text.index("end-1c")
    deletes: list[str] = []
    real_delete = view.text.delete

    def spy(a, b=None):
        deletes.append(view.text.index(a))
        return real_delete(a, b)
    view.text.delete = spy
    turn = f"{C}.99"
    changes = conv.apply("agent.turn", {"conversation": C, "turn": turn, "state": "started",
                                        "text": "stream please"})
    view.apply(changes)
    pieces = [f"word{i} " + ("\n" if i % 17 == 0 else "") for i in range(2000)]
    began = time.perf_counter()
    for piece in pieces:
        view.apply(conv.apply("agent.delta", {"conversation": C, "turn": turn,
                                              "text": piece}))
    per_delta_ms = (time.perf_counter() - began) * 1000 / len(pieces)
    view.text.update_idletasks()
    assert deletes and all(view.text.compare(d, ">=", start) for d in deletes)
    shown = view.text.get(start, "end")
    assert "word0" in shown and "word1999" in shown
    print(f"\n2000 deltas: {per_delta_ms:.3f} ms per delta")
    assert per_delta_ms < 5


def test_a_200_message_history_draws_quickly(view):
    conv = history(200)
    began = time.perf_counter()
    view.show(conv)
    view.text.update_idletasks()
    took_ms = (time.perf_counter() - began) * 1000
    print(f"\n200-message history: {took_ms:.0f} ms")
    assert "question 99" in view.text.get("1.0", "end")
    assert took_ms < 1000     # goal 300 ms (measured in docs/agent-chat.md); slack for load


def test_a_proposal_card_answers_then_shows_the_outcome(view):
    conv = Conversation(C)
    turn = f"{C}.1"
    for topic, data in (("agent.turn", {"state": "started", "text": "x"}),
                        ("agent.propose", {"proposal": "p1", "call": "c1", "path": "notes.txt",
                                           "kind": "edit", "diff": DIFF})):
        conv.apply(topic, {"conversation": C, "turn": turn, **data})
    view.show(conv)
    card = view.cards[1]
    diff_text = card.diff.get("1.0", "end-1c")
    assert diff_text == DIFF.rstrip("\n")
    assert "diff_del" in card.diff.tag_names("5.0") and "diff_add" in card.diff.tag_names("6.0")
    card.buttons.children["btn_approve"].invoke()
    assert view.panel.answered == [("p1", "approve")]
    view.apply(conv.decided("p1", "applied"))
    assert "btn_approve" not in card.buttons.children
    labels = [w.cget("text") for w in card.buttons.winfo_children()]
    assert labels == ["Approved: applied."]


def test_a_tool_card_is_redrawn_in_place_with_its_result(view):
    conv = Conversation(C)
    view.show(conv)
    turn = f"{C}.1"
    for topic, data in (("agent.turn", {"state": "started", "text": "x"}),
                        ("agent.tool", {"call": "c1", "name": "run_command",
                                        "input": {"command": "make"}}),
                        ("agent.delta", {"text": "after the tool"})):
        view.apply(conv.apply(topic, {"conversation": C, "turn": turn, **data}))
    out = "exit code 2\n" + "\n".join(f"line {i}" for i in range(10))
    view.apply(conv.apply("agent.tool_result", {
        "conversation": C, "turn": turn, "call": "c1", "name": "run_command", "ok": False,
        "summary": "exit code 2", "truncated": False, "output": out}))
    text = view.text.get("1.0", "end")
    assert text.index("run_command") < text.index("✗ exit code 2") < \
        text.index("line 9") < text.index("after the tool")
    assert "earlier lines folded" in text and "line 3" not in text


def test_a_retryable_error_is_one_line_with_a_retry_button(view):
    conv = Conversation(C)
    view.show(conv)
    turn = f"{C}.1"
    retried: list = []
    view.panel.retry = retried.append
    err = {"kind": "agent.session_died", "message": "The agent process stopped.",
           "next": "Send your message again."}
    for topic, data in (("agent.turn", {"state": "started", "text": "x"}),
                        ("agent.error", {**err, "partial": False}),
                        ("agent.turn", {"state": "error", "error": err})):
        view.apply(conv.apply(topic, {"conversation": C, "turn": turn, **data}))
    lines = [line for line in view.text.get("1.0", "end").splitlines() if "✗" in line]
    assert lines == ["✗ The agent process stopped. — Send your message again. "
                     "(agent.session_died)"]
    assert len(view.extras) == 1
    view.extras[0].invoke()
    assert retried == [conv.blocks[-1]]


def test_a_thought_is_folded_and_a_plan_is_redrawn_in_place(view):
    conv = Conversation(C)
    view.show(conv)
    turn = f"{C}.1"
    plan = [{"content": "read", "status": "completed"}, {"content": "edit", "status": "pending"}]
    for topic, data in (("agent.turn", {"state": "started", "text": "x"}),
                        ("agent.thought", {"text": "secret "}),
                        ("agent.thought", {"text": "reasoning"}),
                        ("agent.plan", {"entries": plan}),
                        ("agent.delta", {"text": "Answer."})):
        view.apply(conv.apply(topic, {"conversation": C, "turn": turn, **data}))
    body = view.text.tag_ranges("b1_body")
    assert view.text.get(body[0], body[-1]) == "secret reasoning"
    assert str(view.text.tag_cget("b1_body", "elide")) in ("1", "true")
    plan[1]["status"] = "completed"
    view.apply(conv.apply("agent.plan", {"conversation": C, "turn": turn, "entries": plan}))
    text = view.text.get("1.0", "end")
    assert "☑ edit" in text and "☐ edit" not in text
    assert text.index("☑ edit") < text.index("Answer.")


def test_the_sign_in_card_shows_the_agents_own_ways_and_copies_the_command(view):
    conv = Conversation(C)
    view.show(conv)
    turn = f"{C}.1"
    methods = [{"id": "login", "name": "Log in", "type": "terminal",
                "command": "claude-agent-acp --cli"},
               {"id": "key", "name": "API key", "type": "env_var", "vars": ["CODEX_API_KEY"]},
               {"id": "chatgpt", "name": "Login with ChatGPT", "type": "agent",
                "description": "opens your browser"}]
    for topic, data in (("agent.turn", {"state": "started", "text": "x"}),
                        ("agent.sign_in", {"state": "needed", "agent": "codex",
                                           "methods": methods})):
        view.apply(conv.apply(topic, {"conversation": C, "turn": turn, **data}))
    card = view.cards[1]

    def texts(w):
        out = []
        for child in w.winfo_children():
            if child.winfo_class() in ("TLabel", "TButton"):
                out.append(child.cget("text"))
            elif child.winfo_class() == "Text":       # the command, whole and wrapped
                out.append(child.get("1.0", "end-1c"))
            out += texts(child)
        return out
    shown = texts(card.frame)
    assert "Sign-in needed: codex" in shown and "claude-agent-acp --cli" in shown
    assert any("set CODEX_API_KEY" in t for t in shown)
    assert any("opens your browser" in t for t in shown)
    assert not any("key" in t.lower() and "entry" in t.lower() for t in shown)
    copy = next(b for b in card.body.winfo_children()[2].winfo_children()
                if b.winfo_class() == "TButton")
    copy.invoke()
    assert view.text.clipboard_get() == "claude-agent-acp --cli"
    # The agent's own method is a button: the panel asks the agent (agent.authenticate).
    signed: list = []
    view.panel.sign_in = signed.append
    def buttons(w):
        for child in w.winfo_children():
            if child.winfo_class() == "TButton":
                yield child
            yield from buttons(child)
    next(b for b in buttons(card.body) if b.cget("text") == "Sign in").invoke()
    assert signed == ["chatgpt"]
    view.apply(conv.apply("agent.sign_in", {"conversation": C, "turn": turn,
                                            "state": "signed_in", "method": "login"}))
    assert texts(card.frame) == ["Signed in to codex."]


def test_letting_go_of_the_caption_on_a_half_of_the_window_docks_there():
    from ui.tk.agent.layout import drop_side
    assert drop_side(100, 0, 1000, "right") == "left"
    assert drop_side(900, 0, 1000, "left") == "right"
    assert drop_side(1400, 1000, 1000, "left") == "left"     # a window not at the origin
    assert drop_side(50, 0, 0, "right") == "right"           # not mapped yet: stays


class CoreFiles:
    """A bus connection whose fs.* requests the core's own FsOps answers when told to."""

    def __init__(self, root):
        from rio.files.fs_ops import FsOps
        self.ops = FsOps(root)
        self.asked: list = []
        self.waiting: list = []

    def request(self, op, args=None, callback=None, *, timeout=10.0):
        self.asked.append((op, dict(args or {})))
        self.waiting.append((op, dict(args or {}), callback))
        return str(len(self.asked))

    def answer(self) -> None:
        from rio.protocol.frames import Reply
        op, args, callback = self.waiting.pop(0)
        callback(Reply.success("1", self.ops.handle(op, args)))


def test_at_file_completion_picks_a_project_file(tk_root, tmp_path):
    import tkinter as tk

    from ui.tk.agent.complete import PathCompleter
    from ui.tk.widgets.theme import apply_theme
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "forecast.py").write_text("x = 1\n")
    (tmp_path / "report.py").write_text("y = 2\n")
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "forecast.js").write_text("z\n")
    theme = apply_theme(tk_root, "classic")
    conn = CoreFiles(tmp_path)
    app = SimpleNamespace(theme=theme, root=tk_root, project_root="/not/on/this/machine",
                          ui_font_family=lambda: "DejaVu Sans", conn=conn)
    box = tk.Text(tk_root, height=3)
    box.pack()
    tk_root.update()
    completer = PathCompleter(SimpleNamespace(app=app, model=SimpleNamespace(shown=None)), box)
    box.insert("end", "please read @fore")
    assert completer.update() == []           # asked the core (fs.walk); nothing known yet
    assert conn.asked == [("fs.walk", {"path": ".", "max_files": 5000})]
    conn.answer()
    assert completer.update() == ["src/forecast.py"]       # ignored folders are left out
    assert len(conn.asked) == 1                            # asked once, not per key
    assert completer.popup is not None
    assert completer.pick() is True
    assert box.get("1.0", "end-1c") == "please read @src/forecast.py "
    assert completer.popup is None
    box.insert("end", "and mail@x")
    assert completer.update() == [] and completer.popup is None


def option_buttons(card) -> list:
    """The card's option buttons, in order (they sit in one frame per row)."""
    return sorted((w for w in card.buttons.winfo_children() if w.winfo_class() == "TButton"),
                  key=lambda b: int(str(b).rsplit("_", 1)[1]))


def settled(card) -> list[str]:
    return [w.cget("text") for w in card.buttons.winfo_children() if w.winfo_class() == "TLabel"]


def test_a_permission_card_offers_the_agents_own_options(view):
    conv = Conversation(C)
    view.show(conv)
    turn = f"{C}.1"
    asked: list = []
    view.panel.answer_permission = lambda key, kind: asked.append((key, kind))
    options = [{"id": "a", "name": "Allow once", "kind": "allow_once"},
               {"id": "al", "name": "Always allow", "kind": "allow_always"},
               {"id": "r", "name": "Reject", "kind": "reject_once"}]
    for topic, data in (("agent.turn", {"state": "started", "text": "x"}),
                        ("agent.permission", {"request": "7", "call": "c1", "title": "Run make",
                                              "tool_kind": "execute", "input": {"command": "make"},
                                              "options": options})):
        view.apply(conv.apply(topic, {"conversation": C, "turn": turn, **data}))
    card = view.cards[1]
    buttons = option_buttons(card)
    assert [b.cget("text") for b in buttons] == ["Allow once", "Always allow", "Reject"]
    assert card.input.cget("text") == "command: make"
    buttons[1].invoke()
    assert asked == [("perm:7", "allow_always")]
    view.apply(conv.decided("perm:7", "allow_always"))
    assert settled(card) == ["Allowed always: Always allow."]


CODEX_OPTIONS = [
    {"id": "approved", "name": "Yes", "kind": "allow_once"},
    {"id": "approved-for-session", "name": "Yes, and don't ask again this session",
     "kind": "allow_always"},
    {"id": "approved-always", "name": "Always", "kind": "allow_always"},
    {"id": "cancel", "name": "No, and tell Codex what to do differently", "kind": "reject_once"}]


def _screenshot(root, out):
    """The window as it is, for a person to look at (not compared): ImageMagick's import."""
    import shutil
    import subprocess
    if shutil.which("import") is None:
        return None
    root.update()
    subprocess.run(["import", "-window", "root", "-crop",
                    f"{root.winfo_width()}x{root.winfo_height()}+{root.winfo_rootx()}+"
                    f"{root.winfo_rooty()}", "+repage", str(out)], check=True, timeout=30,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return out


@pytest.mark.timeout(60)
def test_every_option_of_a_four_option_card_is_visible_in_a_narrow_panel(view, tmp_path):
    """codex-acp asks about an MCP tool with four options and bookkeeping input: at 220 px
    (the panel's least width) the card shows a readable summary and input, and every button
    whole inside the conversation; a click answers, and the closing event settles it."""
    root = view.text.winfo_toplevel()
    root.geometry("220x560")
    root.update()
    conv = Conversation(C)
    view.show(conv)
    asked: list = []
    view.panel.answer_permission = lambda key, kind: (
        asked.append((key, kind)), view.apply(conv.decided(key, "answering")))
    turn = f"{C}.1"
    for topic, data in (("agent.turn", {"state": "started", "text": "edit notes"}),
                        ("agent.permission", {
                            "request": "7", "call": "c1", "title": "Approve rio.propose_edit?",
                            "tool_kind": "other", "options": CODEX_OPTIONS,
                            "input": {"turn_id": "019a6c2e-77f1", "server_name": "rio",
                                      "tool_name": "propose_edit",
                                      "arguments": {"path": "notes.txt", "old_text": "beta",
                                                    "new_text": "gamma"}}})):
        view.apply(conv.apply(topic, {"conversation": C, "turn": turn, **data}))
    root.update()
    card = view.cards[1]
    shown = card.input.cget("text")
    assert shown.splitlines() == ["server_name: rio", "tool_name: propose_edit",
                                  "path: notes.txt", "old_text: beta", "new_text: gamma"]
    assert "turn_id" not in shown and "019a6c2e" not in shown
    left = view.text.winfo_rootx()
    right = left + view.text.winfo_width()
    buttons = option_buttons(card)
    assert [b.cget("text") for b in buttons] == [o["name"] for o in CODEX_OPTIONS]
    for b in buttons:
        assert b.winfo_ismapped(), b.cget("text")
        assert left <= b.winfo_rootx() and b.winfo_rootx() + b.winfo_width() <= right, \
            (b.cget("text"), b.winfo_rootx(), b.winfo_width(), right)
    rows = {b.winfo_rooty() for b in buttons}
    assert len(rows) > 1                          # wrapped onto more rows, not cut off
    shot = _screenshot(root, tmp_path / "agent-permission-card-220px.png")
    if shot is not None:
        print(f"\nscreenshot: {shot}")
        assert shot.stat().st_size > 1000
    buttons[0].invoke()
    assert asked == [("perm:7", "allow_once")] and settled(card) == ["Answering…"]
    view.apply(conv.apply("agent.permission_closed", {"conversation": C, "turn": turn,
                                                      "request": "7", "kind": "allow_once",
                                                      "how": "answered"}))
    assert settled(card) == ["Allowed once: Yes."]


def test_the_buttons_reflow_when_the_panel_is_widened(view):
    root = view.text.winfo_toplevel()
    root.geometry("230x500")
    root.update()
    conv = Conversation(C)
    view.show(conv)
    view.panel.answer_permission = lambda key, kind: None
    view.apply(conv.apply("agent.permission", {"conversation": C, "turn": f"{C}.1",
                                               "request": "7", "call": "c1", "title": "x",
                                               "options": CODEX_OPTIONS, "input": {}}))
    root.update()
    narrow = len({b.winfo_rooty() for b in option_buttons(view.cards[0])})
    root.geometry("900x500")
    root.update()
    wide = len({b.winfo_rooty() for b in option_buttons(view.cards[0])})
    assert wide < narrow
    right = view.text.winfo_rootx() + view.text.winfo_width()
    assert all(b.winfo_rootx() + b.winfo_width() <= right for b in option_buttons(view.cards[0]))


def test_an_acp_agents_error_shows_its_own_words_and_details(view):
    """codex-acp's answer to a model HTTP 400: the error line, then the agent's words whole
    and its error's details, selectable text in the conversation; a refused request gets no
    Retry, and an ACP agent's sign-in trouble no "Set API key…" (Rio holds no key for it)."""
    conv = Conversation(C)
    view.show(conv)
    view.panel.retry = lambda b: None
    view.panel.set_key = lambda: None
    said = "Invalid value for 'reasoning.effort': 'max' is not supported.\n" + "x" * 300
    err = {"kind": "agent.request_rejected",
           "message": "The agent 'codex' failed session/prompt: its model server refused the "
                      "request as invalid (HTTP 400). It said: Invalid value…",
           "next": "Change codex's model or request settings; sending the message again "
                   "fails the same way.",
           "details": {"agent": "codex", "code": -32603, "said": said,
                       "details": '{"param": "reasoning.effort"}', "status": 400}}
    turn = f"{C}.1"
    for topic, data in (("agent.turn", {"state": "started", "text": "x"}),
                        ("agent.error", {**err, "partial": False})):
        view.apply(conv.apply(topic, {"conversation": C, "turn": turn, **data}))
    text = view.text.get("1.0", "end")
    assert "(agent.request_rejected)" in text
    assert "The agent said:\n" + said in text
    assert 'Details:\n{"param": "reasoning.effort"}' in text
    assert view.extras == []                           # no Retry: it fails the same way
    ranges = view.text.tag_ranges("error_detail")
    assert ranges and "x" * 300 in view.text.get(ranges[0], ranges[-1])
    auth = {**err, "kind": "agent.auth_rejected", "details": {"agent": "codex", "code": -32603}}
    view.apply(conv.apply("agent.error", {"conversation": C, "turn": f"{C}.2", **auth}))
    assert view.extras == []


def test_slash_commands_complete_from_the_agents_list(tk_root, tmp_path):
    import tkinter as tk

    from ui.tk.agent.complete import PathCompleter
    from ui.tk.widgets.theme import apply_theme
    theme = apply_theme(tk_root, "classic")
    app = SimpleNamespace(theme=theme, root=tk_root, project_root=str(tmp_path),
                          ui_font_family=lambda: "DejaVu Sans")
    conv = Conversation(C)
    conv.commands = [{"name": "review"}, {"name": "init"}]
    box = tk.Text(tk_root, height=3)
    box.pack()
    tk_root.update()
    completer = PathCompleter(SimpleNamespace(app=app, model=SimpleNamespace(shown=conv)), box)
    box.insert("end", "/re")
    assert completer.update() == ["/review"]
    assert completer.pick() is True
    assert box.get("1.0", "end-1c") == "/review "


def test_a_key_error_offers_set_api_key(view):
    conv = Conversation(C)
    view.show(conv)
    opened: list = []
    view.panel.set_key = lambda: opened.append(True)
    err = {"kind": "agent.not_configured", "message": "No API key for anthropic.",
           "next": "Set one."}
    for topic, data in (("agent.turn", {"state": "started", "text": "x"}),
                        ("agent.turn", {"state": "error", "error": err})):
        view.apply(conv.apply(topic, {"conversation": C, "turn": f"{C}.1", **data}))
    assert [b.cget("text") for b in view.extras] == ["Set API key…"]
    view.extras[0].invoke()
    assert opened == [True]


def test_a_key_typed_in_the_dialog_is_stored_and_never_shown(tk_root, tmp_path):
    import json
    import tkinter as tk

    from rio.agent.secrets import SecretStore
    from ui.tk.prefs.api_keys import KeyDialog
    from ui.tk.widgets.theme import apply_theme
    theme = apply_theme(tk_root, "classic")
    messages: list = []
    app = SimpleNamespace(theme=theme, root=tk_root, dialogs={}, set_message=messages.append)
    panel = SimpleNamespace(app=app, providers=["anthropic", "openai", "claude (ACP)"])
    store = SecretStore(config_dir=tmp_path, keyring_backend=False, env={})
    top = tk.Toplevel(tk_root)
    dialog = KeyDialog(panel, top, "openai", store)
    assert app.dialogs["api_key"].describe()["fields"]["state"] == "openai: not set"
    secret = "sk-typed-0123456789"
    dialog.entry.insert(0, secret)                     # typed, as a person does
    assert app.dialogs["api_key"].describe()["fields"]["key"] == ""
    dialog.save()
    assert dialog.entry.get() == ""                    # out of the widget once stored
    stored = json.loads((tmp_path / "credentials.json").read_text())
    assert stored["keys"]["openai"] == secret
    described = json.dumps(app.dialogs["api_key"].describe())
    assert secret not in described and "openai: set (from the private file" in described
    assert secret not in " ".join(messages)
    dialog.close()


# --- issue 18: what the panel says ------------------------------------------------------------

def feed(view, conv, *events, turn=f"{C}.1"):
    for topic, data in events:
        view.apply(conv.apply(topic, {"conversation": C, "turn": turn, **data}))


def tagged(view, tag: str) -> list[str]:
    ranges = view.text.tag_ranges(tag)
    return [view.text.get(ranges[i], ranges[i + 1]) for i in range(0, len(ranges), 2)]


def test_the_last_line_of_a_finished_turn_is_markdown_and_bold_code_has_no_backticks(view):
    conv = Conversation(C)
    view.show(conv)
    feed(view, conv, ("agent.turn", {"state": "started", "text": "x"}),
         ("agent.delta", {"text": "First line.\nRun **`make`** then **done**"}))
    assert "**done**" in view.text.get("1.0", "end")        # still being written
    feed(view, conv, ("agent.turn", {"state": "done"}))
    text = view.text.get("1.0", "end")
    assert "Run make then done" in text and "*" not in text and "`" not in text
    assert tagged(view, "md_bold") == ["done"] and tagged(view, "md_bold_code") == ["make"]


def test_an_mcp_call_is_one_line_and_its_raw_json_is_not_shown(view):
    conv = Conversation(C)
    view.show(conv)
    feed(view, conv, ("agent.turn", {"state": "started", "text": "x"}),
         ("agent.tool", {"call": "a1", "name": "other", "input": {}, "title": "",
                         "status": "pending"}),
         ("agent.tool", {"call": "m1", "name": "propose_edit", "input": {"path": "a.py"},
                         "source": "mcp"}),
         ("agent.tool_update", {"call": "a1", "title": "Tool: rio/propose_edit"}),
         ("agent.tool_result", {"call": "m1", "name": "propose_edit", "ok": True,
                                "summary": "a.py: edited", "truncated": False}),
         ("agent.tool_result", {"call": "a1", "name": "other", "ok": True, "summary": "done",
                                "truncated": False, "output": '{"applied":true}'}))
    text = view.text.get("1.0", "end")
    assert text.count("⚙") == 1 and "⚙ propose_edit path=a.py" in text
    assert "rio/propose_edit" not in text and "applied" not in text


def test_text_an_agent_sends_late_is_drawn_before_the_card_it_preceded(view):
    conv = Conversation(C)
    view.show(conv)
    feed(view, conv, ("agent.turn", {"state": "started", "text": "x"}),
         ("agent.tool", {"call": "a1", "name": "other", "input": {},
                         "title": "rio_propose_edit"}),
         ("agent.tool", {"call": "m1", "name": "propose_edit", "input": {"path": "a.py"},
                         "source": "mcp"}),
         ("agent.propose", {"proposal": "p1", "call": "m1", "path": "a.py", "kind": "edit",
                            "diff": DIFF}),
         ("agent.delta", {"text": "I will rename "}), ("agent.delta", {"text": "beta."}))
    text = view.text.get("1.0", "end")
    assert text.index("I will rename beta.") < text.index("⚙ propose_edit")
    card = next(iter(view.cards.values()))
    assert card.block.kind == "proposal" and "btn_approve" in card.buttons.children


def test_a_rejected_card_says_it_once_and_the_end_card_follows_undo(view):
    conv = Conversation(C)
    view.show(conv)
    feed(view, conv, ("agent.turn", {"state": "started", "text": "x"}),
         ("agent.propose", {"proposal": "p1", "call": "c1", "path": "a.py", "kind": "edit",
                            "diff": DIFF}))
    view.apply(conv.decided("p1", "rejected", "rejected"))    # agent.approve's answer
    card = view.cards[1]
    assert [w.cget("text") for w in card.buttons.winfo_children()] == ["Rejected."]
    feed(view, conv, ("agent.turn", {"state": "done", "buffers": ["b1"]}))
    end = view.cards[2]
    conv.blocks[2].data["names"]["b1"] = "notes.txt"
    view.apply(conv.buffer_changed("b1", "ui:1", "undo", "Agent: x"))
    assert end.label.cget("text") == "Undone: notes.txt"
    assert str(end.undo.cget("state")) == "disabled" and str(end.save.cget("state")) == \
        "disabled"
