"""rio/runs/runner.py: run plans, environment scrubbing, output batching and capping, project
commands -- all without a process."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rio.protocol.errors import ConfigError, ProtocolError
from rio.runs.runner import (
    OutputBatcher,
    OutputChunk,
    ProjectCommands,
    RunRecord,
    exit_code,
    is_secret_name,
    load_project_commands,
    plan_run,
    save_project_commands,
    scrub_environment,
    strip_ansi,
)

# --- plans ------------------------------------------------------------------------------------

def test_shell_string_runs_through_sh_explicitly():
    plan = plan_run("make test 2>&1 | tee log", "/p")
    assert plan.argv == ("/bin/sh", "-c", "make test 2>&1 | tee log")
    assert plan.shell and plan.command == "make test 2>&1 | tee log" and plan.cwd == "/p"


def test_argv_list_runs_as_is_without_a_shell():
    plan = plan_run(["python", "-c", "print('a b')"], "/p", timeout_s=5)
    assert plan.argv == ("python", "-c", "print('a b')")
    assert not plan.shell and plan.timeout_s == 5
    assert plan.command == "python -c 'print('\"'\"'a b'\"'\"')'"


@pytest.mark.parametrize("command", ["", "   ", [], [""], ["ok", 3], "a\0b", ["a\0"]])
def test_bad_commands_are_bad_args(command):
    with pytest.raises(ProtocolError) as info:
        plan_run(command, "/p")
    assert info.value.kind == "protocol.bad_args"


@pytest.mark.parametrize("timeout", [0, -1, 10 ** 9])
def test_bad_timeouts_are_bad_args(timeout):
    with pytest.raises(ProtocolError):
        plan_run("true", "/p", timeout_s=timeout)


# --- environment ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "API_KEY", "GITHUB_TOKEN",
                                  "ANTHROPIC_AUTH_TOKEN", "AWS_SECRET_ACCESS_KEY", "MY_SECRET",
                                  "client_secret", "DB_PASSWORD", "openai_apikey"])
def test_secret_names(name):
    assert is_secret_name(name)


@pytest.mark.parametrize("name", ["PATH", "HOME", "LANG", "TOKENIZERS_PARALLELISM", "KEYBOARD",
                                  "PYTHONPATH", "DISPLAY", "SSH_AUTH_SOCK"])
def test_ordinary_names_are_kept(name):
    assert not is_secret_name(name)


def test_scrub_environment_drops_secrets_and_rio_internals():
    env = {"PATH": "/bin", "OPENAI_API_KEY": "sk-1", "GH_TOKEN": "t", "X_SECRET_Y": "s",
           "RIO_SPAWN_COOKIE": "c", "RIO_LIFELINE_FD": "1:2", "RIO_STATE_DIR": "/s"}
    assert scrub_environment(env) == {"PATH": "/bin", "RIO_STATE_DIR": "/s"}
    assert "OPENAI_API_KEY" in env  # the input is not modified


# --- records ----------------------------------------------------------------------------------

def test_exit_code_uses_the_shell_convention_for_signals():
    assert exit_code(0) == 0 and exit_code(2) == 2 and exit_code(-9) == 137
    assert exit_code(None) is None


def test_run_record_wire_form():
    rec = RunRecord("r1", "make", ("/bin/sh", "-c", "make"), "/p", 42, 1.0)
    done = rec.finished(2, "exited", 10, 0)
    assert rec.state == "running" and done.state == "exited"
    wire = done.to_wire()
    assert wire["code"] == 2 and wire["how"] == "exited" and wire["argv"] == ["/bin/sh", "-c",
                                                                                "make"]


# --- output -----------------------------------------------------------------------------------

def _text(chunks: list[OutputChunk], stream: str | None = None) -> str:
    return "".join(c.text for c in chunks if stream is None or c.stream == stream)


def test_small_writes_are_batched_until_the_interval_passes():
    b = OutputBatcher(interval=0.05)
    assert b.feed("stdout", b"a", 0.0) == []
    assert b.feed("stdout", b"b", 0.01) == []
    assert b.due(0.02) == []
    assert b.due(0.06) == [OutputChunk("stdout", "ab")]
    assert b.due(1.0) == []


def test_stream_switch_keeps_order():
    b = OutputBatcher()
    out = b.feed("stdout", b"one\n", 0.0) + b.feed("stderr", b"two\n", 0.0)
    out += b.feed("stdout", b"three\n", 0.0) + b.close()
    assert out == [OutputChunk("stdout", "one\n"), OutputChunk("stderr", "two\n"),
                   OutputChunk("stdout", "three\n")]


def test_a_big_write_is_split_into_bounded_batches():
    b = OutputBatcher(max_batch=10)
    out = b.feed("stdout", b"x" * 35, 0.0) + b.close()
    assert [len(c.text) for c in out] == [10, 10, 10, 5]


def test_utf8_split_across_reads_stays_whole():
    data = "héllo ✓".encode()
    b = OutputBatcher()
    out = []
    for i in range(len(data)):
        out += b.feed("stdout", data[i:i + 1], 0.0)
    out += b.close()
    assert _text(out) == "héllo ✓"


def test_invalid_utf8_is_replaced_not_fatal():
    b = OutputBatcher()
    assert _text(b.feed("stdout", b"a\xffb", 0.0) + b.close()) == "a\ufffdb"


def test_output_is_capped_and_the_cap_announced_once():
    b = OutputBatcher(cap=10)
    out = b.feed("stdout", b"0123456789abc", 0.0) + b.feed("stdout", b"defg", 0.1) + b.close()
    assert _text(out, "stdout") == "0123456789"
    assert b.published == 10 and b.dropped == 7
    notices = [c for c in out if "output capped" in c.text]
    assert len(notices) == 1 and "7 more characters" in notices[0].text


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["stdout", "stderr"]), st.binary(max_size=40)),
                max_size=30), st.integers(1, 16))
def test_batching_never_loses_or_reorders_text(writes, max_batch):
    b = OutputBatcher(max_batch=max_batch, cap=10 ** 9)
    out: list[OutputChunk] = []
    for i, (stream, data) in enumerate(writes):
        out += b.feed(stream, data, i * 0.01)  # type: ignore[arg-type]
    out += b.close()
    for stream in ("stdout", "stderr"):
        expected = b"".join(d for s, d in writes if s == stream).decode("utf-8", "replace")
        assert _text(out, stream) == expected
    assert all(0 < len(c.text) <= max_batch for c in out)


def test_strip_ansi():
    assert strip_ansi("\x1b[1;31merror\x1b[0m: x\x1b]0;title\x07") == "error: x"


# --- project commands -------------------------------------------------------------------------

def test_project_commands_round_trip(tmp_path):
    assert load_project_commands(tmp_path) == ProjectCommands()
    save_project_commands(tmp_path, ProjectCommands(run="python app.py", build="make"))
    loaded = load_project_commands(tmp_path)
    assert loaded.run == "python app.py" and loaded.build == "make" and loaded.cwd == "."
    assert loaded.command("build") == "make"


def test_saving_keeps_other_keys(tmp_path):
    (tmp_path / "project.json").write_text(json.dumps({"other": 1, "run": "old"}))
    save_project_commands(tmp_path, ProjectCommands(run="new"))
    assert json.loads((tmp_path / "project.json").read_text()) == {
        "other": 1, "run": "new", "build": "", "cwd": "."}


@pytest.mark.parametrize("content", ["{not json", "[1, 2]", '{"run": 3}'])
def test_damaged_project_file_is_config_invalid(tmp_path, content):
    (tmp_path / "project.json").write_text(content)
    with pytest.raises(ConfigError) as info:
        load_project_commands(tmp_path)
    assert info.value.kind == "config.invalid" and "project.json" in info.value.message
