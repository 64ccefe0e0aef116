"""ui/tk/agent/permission_model.py: what the panel's permission card shows, without a display —
the summary, the input as ``key: value`` lines, the option buttons' rows and the line it settles
on — and the panel's answer flow (ui/tk/agent/actions.py) settling the card."""

from __future__ import annotations

from types import SimpleNamespace

from ui.tk.agent import permission_model as perm
from ui.tk.agent.model import Conversation

C = "3f9a0c12b7de"
T1 = f"{C}.1"
#: codex-acp 0.16's four options (as captured from the real agent), with names of its kind.
CODEX_OPTIONS = [
    {"id": "approved", "name": "Yes", "kind": "allow_once"},
    {"id": "approved-for-session", "name": "Yes, and don't ask again this session",
     "kind": "allow_always"},
    {"id": "approved-always", "name": "Always", "kind": "allow_always"},
    {"id": "cancel", "name": "No, and tell Codex what to do differently", "kind": "reject_once"}]
#: The input codex-acp sends when it asks about an MCP tool.
CODEX_INPUT = {"turn_id": "019a6c2e-77f1", "server_name": "rio", "tool_name": "propose_edit",
               "arguments": {"path": "notes.txt", "old_text": "beta\n" * 40,
                             "new_text": "gamma", "call_id": "c-9"}}


def ask(conv: Conversation, request: str = "7", **data) -> None:
    conv.apply("agent.permission", {"conversation": C, "turn": T1, "request": request,
                                    "call": "c1", "title": "Approve rio.propose_edit?",
                                    "tool_kind": "other", "input": CODEX_INPUT,
                                    "options": CODEX_OPTIONS, **data})


def test_codex_input_reads_as_key_value_lines_without_its_ids():
    lines, more = perm.input_lines(CODEX_INPUT)
    keys = [k for k, _ in lines]
    assert keys == ["server_name", "tool_name", "path", "old_text", "new_text"]
    assert "turn_id" not in perm.input_text(CODEX_INPUT) and "c-9" not in perm.input_text(
        CODEX_INPUT)
    shown = dict(lines)
    assert shown["server_name"] == "rio" and shown["path"] == "notes.txt"
    assert shown["old_text"].endswith("…") and len(shown["old_text"]) == perm.VALUE_CHARS
    assert "\n" not in shown["old_text"] and more == 0
    assert perm.input_text(CODEX_INPUT).splitlines()[0] == "server_name: rio"


def test_nested_values_flatten_one_level_and_long_inputs_are_counted():
    lines, more = perm.input_lines({
        "command": ["bash", "-lc", "npm test"], "options": {"force": True, "deep": {"a": 1}},
        "empty": "", "none": None}, limit=8)
    assert lines == [("command", "bash -lc 'npm test'"), ("options.force", "true"),
                     ("options.deep", '{"a": 1}')]
    lines, more = perm.input_lines({f"k{i}": i for i in range(12)})
    assert len(lines) == perm.MAX_LINES and more == 4
    assert perm.input_text({f"k{i}": i for i in range(12)}).endswith("… 4 more")
    assert perm.input_lines({}) == ([], 0) and perm.input_lines(None) == ([], 0)
    assert perm.input_lines("rm -rf build") == ([("input", "rm -rf build")], 0)


def test_the_summary_is_the_title_cut_or_what_the_tool_kind_does():
    assert perm.summary({"title": "Run   make\n now"}) == "Run make now"
    long = perm.summary({"title": "x " * 200})
    assert long.endswith("…") and len(long) <= perm.SUMMARY_CHARS
    assert perm.summary({"tool_kind": "execute"}) == "May it run a command?"
    assert perm.summary({}) == "May it use a tool?"


def test_buttons_wrap_into_rows_that_fit_and_keep_their_order():
    widths = [48, 160, 70, 180]
    assert perm.button_rows(widths, 400) == [[0, 1, 2], [3]]
    assert perm.button_rows(widths, 172) == [[0], [1], [2], [3]]
    assert perm.button_rows([48, 70, 60], 172) == [[0, 1], [2]]
    # A button wider than the row is alone on its own; every button is placed once.
    many = widths + [500, 30, 30]
    for available in (100, 172, 220, 300, 1000):
        rows = perm.button_rows(many, available)
        assert [i for row in rows for i in row] == list(range(len(many)))
        for row in rows:
            assert len(row) == 1 or sum(many[i] for i in row) + 4 * (len(row) - 1) \
                <= available


def test_settled_lines_say_what_happened_in_the_agents_words():
    assert perm.settled_text("allow_once", CODEX_OPTIONS) == "Allowed once: Yes."
    assert perm.settled_text("reject_once", CODEX_OPTIONS) == \
        "Rejected: No, and tell Codex what to do differently."
    assert perm.settled_text("declined") == "Declined."
    assert perm.settled_text("timed_out").startswith("Timed out")
    assert perm.settled_text("answering") == "Answering…"
    assert perm.closed_decision("answered", "allow_once") == "allow_once"
    assert perm.closed_decision("answered", None) == "answered"
    assert perm.closed_decision("declined", None) == "declined"
    assert perm.closed_decision("timed_out", None) == "timed_out"


def test_the_card_settles_when_the_session_closes_the_question_after_a_click():
    conv = Conversation(C)
    conv.apply("agent.turn", {"conversation": C, "turn": T1, "state": "started", "text": "x"})
    ask(conv)
    block = conv.blocks[-1]
    conv.decided("perm:7", "answering")                  # the click
    assert block.data["decision"] == "answering" and conv.state == "thinking"
    changes = conv.apply("agent.permission_closed", {"conversation": C, "turn": T1,
                                                     "request": "7", "kind": "allow_once",
                                                     "how": "answered"})
    assert changes == [("update", 1)] and block.data["decision"] == "allow_once"


def test_a_question_nobody_answered_is_closed_as_timed_out():
    conv = Conversation(C)
    ask(conv)
    conv.apply("agent.permission_closed", {"conversation": C, "turn": T1, "request": "7",
                                           "kind": None, "how": "timed_out"})
    assert conv.blocks[-1].data["decision"] == "timed_out" and not conv.pending


class FakePanel:
    """The controller as PanelActions sees it: a model, requests whose answers the test
    gives, and the changes the view would draw."""

    def __init__(self, conv: Conversation) -> None:
        self.model = SimpleNamespace(shown=conv, conversations={C: conv})
        self.requests: list = []
        self.drawn: list = []

    def find_pending(self, key, permission=False):
        conv = self.model.shown
        for pid, i in conv.pending.items():
            if conv.blocks[i].kind == "permission" and (key is None or pid == key):
                return conv, pid
        return None

    def apply_changes(self, conv, changes):
        self.drawn += changes

    def request(self, op, args, done, failed):
        self.requests.append((op, args, done, failed))


def test_answering_in_the_panel_settles_the_card_with_the_reply():
    from ui.tk.agent.actions import PanelActions
    conv = Conversation(C)
    ask(conv)
    panel = FakePanel(conv)
    PanelActions(panel).answer_permission("perm:7", "allow_once")
    op, args, done, _ = panel.requests[0]
    assert op == "agent.permission_answer" and args["kind"] == "allow_once"
    assert conv.blocks[-1].data["decision"] == "answering"
    done({"answered": True})
    assert conv.blocks[-1].data["decision"] == "allow_once"


def test_a_reply_after_the_closing_event_keeps_the_sessions_word():
    from ui.tk.agent.actions import PanelActions
    conv = Conversation(C)
    ask(conv)
    panel = FakePanel(conv)
    PanelActions(panel).answer_permission("perm:7", "reject_once")
    conv.apply("agent.permission_closed", {"conversation": C, "turn": T1, "request": "7",
                                           "kind": None, "how": "timed_out"})
    panel.requests[0][2]({"answered": False})
    assert conv.blocks[-1].data["decision"] == "timed_out"


def test_an_answer_that_came_too_late_says_the_question_had_closed():
    from ui.tk.agent.actions import PanelActions
    conv = Conversation(C)
    ask(conv)
    panel = FakePanel(conv)
    PanelActions(panel).answer_permission("perm:7", "allow_once")
    panel.requests[0][2]({"answered": False})
    assert conv.blocks[-1].data["decision"] == "gone"
    assert perm.settled_text("gone").startswith("Already closed")


def test_a_card_answered_here_settles_when_the_turn_ends_without_a_closing_event():
    conv = Conversation(C)
    conv.apply("agent.turn", {"conversation": C, "turn": T1, "state": "started", "text": "x"})
    ask(conv)
    conv.decided("perm:7", "answering")
    changes = conv.apply("agent.turn", {"conversation": C, "turn": T1, "state": "stopped"})
    assert ("update", 1) in changes and conv.blocks[1].data["decision"] == "stopped"
    assert perm.settled_text("stopped") == "Closed: the turn was stopped."
