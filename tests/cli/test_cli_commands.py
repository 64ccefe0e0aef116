"""The `rio` command line as a user types it (issue 9): every command's usage errors, the exit
code table of docs/deploy.md, mistyped commands and missing folders, options before files,
what `rio call` says when nothing serves an op, and the `rio status` table."""

from __future__ import annotations

import argparse
import re

import pytest

from rio.cli import main as cli
from rio.protocol.errors import BusError, ProtocolError
from tests.support import REPO


def every_command(parser: argparse.ArgumentParser, words: tuple[str, ...] = ()):
    """(words, parser) for every command and sub-command, e.g. ("key", "set")."""
    if parser._subparsers is None:
        return
    for action in parser._subparsers._group_actions:
        for name, sub in action.choices.items():
            yield (*words, name), sub
            yield from every_command(sub, (*words, name))


COMMANDS = [words for words, _ in every_command(cli.build_parser())]


def test_the_walk_finds_the_commands():
    assert {("serve",), ("call",), ("chat",), ("key", "set"), ("faults",), ("keys",),
            ("status",)} <= set(COMMANDS)


@pytest.mark.parametrize("words", COMMANDS, ids=" ".join)
def test_an_unknown_option_exits_3_with_that_commands_usage(words, capsys):
    parser = dict(every_command(cli.build_parser()))[words]
    required = [a for a in parser._actions if not a.option_strings and a.required
                and not isinstance(a, argparse._SubParsersAction)]
    with pytest.raises(SystemExit) as info:
        cli.main([*words, *(["x"] * len(required)), "--no-such-option"])
    assert info.value.code == cli.EXIT_USAGE
    err = capsys.readouterr().err
    assert f"usage: rio {' '.join(words)} " in err or err.rstrip().endswith(
        f"usage: rio {' '.join(words)}; see `rio {' '.join(words)} --help`"), err
    assert "--no-such-option" in err


def documented_codes() -> dict[int, str]:
    text = (REPO / "docs" / "deploy.md").read_text()
    table = text[text.index("Exit codes of every `rio` command"):]
    return {int(m.group(1)): m.group(2) for m in re.finditer(r"^\| (\d+) \| (.+) \|$", table,
                                                               re.M)}


def test_one_exit_code_table_holds_every_module():
    from rio.cli import agent as cli_agent
    from ui.term import chat
    codes = documented_codes()
    assert set(codes) == {0, 1, 2, 3, 4, 5, 130}
    for module in (cli, cli_agent):
        assert (module.EXIT_OK, module.EXIT_ERROR, module.EXIT_UNREACHABLE,
                module.EXIT_USAGE) == (0, 1, 2, 3)
    assert "unreachable" in codes[2] and "usage" in codes[3]
    assert chat.EXIT_STOPPED == 4 and "stopped" in codes[4]
    assert chat.EXIT_REJECTED == 5 and "rejected" in codes[5]
    for doc in ("agent.md", "faults.md"):
        assert "docs/deploy.md" in (REPO / "docs" / doc).read_text()


def test_a_start_that_fails_is_documented_as_it_exits():
    """`rio serve` on a running instance exits 1 with two lines (tests/runtime/test_serve.py holds the
    code to it; actors/runtime/supervisor.py run_supervisor): the table and the error format say so
    (issue 18, point 21)."""
    codes = documented_codes()
    assert "bus.instance_exists" in codes[1] and "bus.instance_exists" not in codes[2]
    text = (REPO / "docs" / "deploy.md").read_text()
    assert "Every error is one line" not in text
    assert "  (bus.instance_exists) Use it" in text


# --- `rio PATH...` ---------------------------------------------------------------------------

@pytest.fixture
def desktop(monkeypatch):
    """cmd_desktop replaced by a recorder: no window, no supervisor."""
    seen: list[argparse.Namespace] = []
    monkeypatch.setattr(cli, "cmd_desktop", lambda args: seen.append(args) or 0)
    return seen


def test_a_mistyped_command_is_not_opened_as_a_file(desktop, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(["sevre"]) == cli.EXIT_USAGE
    assert "unknown command 'sevre', did you mean serve?" in capsys.readouterr().err
    assert not desktop
    assert cli.main(["./sevre"]) == 0 and desktop[-1].paths == ["./sevre"]   # a new file
    (tmp_path / "stauts").write_text("x")
    assert cli.main(["stauts"]) == 0                       # an existing file is opened


def test_a_missing_folder_is_an_error_not_the_current_folder(desktop, capsys, tmp_path):
    assert cli.main([str(tmp_path / "no" / "such" / "dir") + "/"]) == cli.EXIT_USAGE
    assert "there is no folder" in capsys.readouterr().err
    assert cli.main([str(tmp_path / "no" / "such" / "file.txt")]) == cli.EXIT_USAGE
    assert not desktop


@pytest.mark.parametrize("argv", [["--instance", "X", "notes.txt"],
                                  ["notes.txt", "--instance", "X"],
                                  ["--instance=X", "notes.txt"]])
def test_options_may_come_before_or_after_the_files(desktop, argv, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert cli.main(argv) == 0
    assert desktop[-1].paths == ["notes.txt"] and desktop[-1].instance == "X"


def test_rio_alone_and_with_only_an_instance_opens_the_desktop(desktop):
    assert cli.main([]) == 0 and cli.main(["--instance", "X"]) == 0
    assert desktop[-1].paths == [] and desktop[-1].instance == "X"


# --- rio call ------------------------------------------------------------------------------

def test_an_op_that_does_not_exist_is_unknown_not_restarting():
    no_route = BusError("no_route", "Nothing serves nosuch.* ops right now.", "Check…")
    err = cli.explain_call_error("nosuch.op", no_route)
    assert err.kind == "protocol.unknown_op" and "rio call system.ops" in err.next
    assert cli.explain_call_error("buffer.nosuch", ProtocolError("unknown_op", "x")).kind == \
        "protocol.unknown_op"


def test_ui_ops_on_an_instance_without_a_window_say_so():
    no_route = BusError("no_route", "Nothing serves ui.* ops right now.", "Check…")
    err = cli.explain_call_error("ui.state", no_route)
    assert err.kind == "bus.no_window" and "window" in err.message and "`rio`" in err.next
    # An op that exists, whose process is down: the hub's own words stay.
    assert cli.explain_call_error("buffer.list", no_route) is no_route


def test_a_remote_connection_without_a_key_names_both_ways(capsys, monkeypatch):
    monkeypatch.delenv("RIO_SERVER_KEY", raising=False)
    assert cli.main(["status", "--connect", "tcp://127.0.0.1:9"]) == cli.EXIT_ERROR
    err = capsys.readouterr().err
    assert "bus.no_server_key" in err and "RIO_SERVER_KEY" in err and "--server-key" in err


# --- rio status ----------------------------------------------------------------------------

def test_the_status_table_stays_aligned_with_long_names_and_says_where_logs_are():
    status = {"instance": "proj", "root": "/p", "pid": 10, "uptime_s": 3.0, "processes": [
        {"name": "core", "pid": 11, "state": "running", "restarts": 0, "rss": 50 * 2**20,
         "actors": ["workspace", "documents"], "last_exit": None,
         "log": "/state/logs/proj.core.log"},
        {"name": "agent:3f9a0c12b7de4455", "pid": 12345678, "state": "idle-stopped",
         "restarts": 12, "rss": None, "actors": ["session"], "last_exit": "exit 0",
         "log": "/state/logs/proj.agent:3f9a0c12b7de4455.log"}]}
    lines = cli.render_status(status)
    header, core, agent = lines[1], lines[2], lines[3]
    # Left-aligned columns start together, right-aligned (numbers) end together.
    assert header.index("STATE") == core.index("running") == agent.index("idle-stopped")
    assert header.index("ACTORS") == core.index("workspace") == agent.index("session")
    assert header.index("LAST EXIT") == core.index("-", header.index("LAST EXIT")) == \
        agent.index("exit 0")
    assert header.index("PID") + 3 == core.index("11 ") + 2 == agent.index("12345678") + 8
    assert header.index("RESTARTS") + 8 == agent.index("12 ") + 2
    assert lines[-1].startswith("logs: /state/logs")


# --- rio keys --------------------------------------------------------------------------------

def test_client_keys_make_every_folder_they_create_private(tmp_path):
    import os
    import stat

    from actors.bus import curve_keys
    base = tmp_path / "config" / "rio" / "curve"          # none of it exists yet
    os.umask(old := os.umask(0o022))
    try:
        os.umask(0o022)
        curve_keys.create_client_keys("laptop", base, authorise=False)
    finally:
        os.umask(old)
    for folder in (base, base / "clients"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder


def test_keys_client_on_a_machine_without_a_server_says_how_to_authorise(tmp_path, capsys,
                                                                         monkeypatch):
    import stat

    from actors.bus import curve_keys
    monkeypatch.setenv("RIO_CONFIG_DIR", str(tmp_path / "config"))
    assert cli.main(["keys", "--client", "laptop"]) == 0
    out = capsys.readouterr().out
    assert "this machine's server" not in out and "no server accepts this key yet" in out
    assert "rio keys --authorize laptop " in out
    curve = curve_keys.curve_dir()
    assert stat.S_IMODE(curve.stat().st_mode) == 0o700
    # On the server (its keys exist) the same command authorises the key there.
    curve_keys.create_server_keys()
    assert cli.main(["keys", "--client", "phone"]) == 0
    assert "authorised it on this machine's server" in capsys.readouterr().out
    assert "phone" in curve_keys.authorized()
