"""Every `rio` error is one line with a kind and a next action, never a traceback, and exits with
the documented code (0 ok, 1 error answered, 2 unreachable, 3 bad usage)."""

import json
import os
import subprocess
import sys

import pytest

from rio.cli import main as cli
from tests.support import REPO, RioServer

ONE_LINE = "rio: "


def lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def test_bad_json_is_one_usage_line(capsys):
    assert cli.main(["call", "fs.list", '{"path": 1']) == cli.EXIT_USAGE
    err = lines(capsys.readouterr().err)
    assert len(err) == 1 and err[0].startswith("rio: usage: ") and " — " in err[0]


def test_an_argparse_error_is_one_line_and_exit_3(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["call", "fs.list", "--timeout", "soon"])
    assert info.value.code == cli.EXIT_USAGE
    err = lines(capsys.readouterr().err)
    assert len(err) == 1 and err[0].startswith("rio: usage: ") and "--help" in err[0]


def test_an_unreachable_instance_is_one_line_exit_2(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("RIO_RUNTIME_DIR", str(tmp_path / "run"))
    assert cli.main(["call", "system.ping", "--instance", "nobody"]) == cli.EXIT_UNREACHABLE
    err = lines(capsys.readouterr().err)
    assert len(err) == 1 and err[0].startswith("rio: bus.unreachable: ") and " — " in err[0]


def test_an_unexpected_exception_is_one_line_not_a_traceback(capsys, monkeypatch):
    def broken(*_a, **_k):
        raise ValueError("something deep broke")
    monkeypatch.setattr(cli, "_connect", broken)
    monkeypatch.delenv("RIO_DEBUG", raising=False)
    assert cli.main(["call", "system.ping"]) == cli.EXIT_ERROR
    err = lines(capsys.readouterr().err)
    assert err == [err[0]] and "Traceback" not in err[0]
    assert err[0].startswith("rio: internal.unexpected: ValueError: something deep broke — ")


def test_error_line_folds_newlines():
    assert cli.error_line("file.conflict", "a\n  b.", "Reload it.") == \
        "rio: file.conflict: a b — Reload it"


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_rio_call_on_a_folder_with_a_non_utf8_name(tmp_path):
    root = tmp_path / "proj"
    (root / "d").mkdir(parents=True)
    (root / "d" / "ok.txt").write_text("x")
    with open(os.path.join(os.fsencode(root), b"d", b"bad\xff.txt"), "wb") as f:
        f.write(b"y")
    srv = RioServer(root, tmp_path / "base").start()
    try:
        base = [sys.executable.encode(), b"-m", b"rio.cli.main", b"call"]
        tail = [b"--instance", srv.name.encode()]
        listed = subprocess.run(base + [b"fs.list", b'{"path": "d"}'] + tail, env=srv.env,
                                capture_output=True, cwd=str(REPO), timeout=30)
        assert listed.returncode == 0, listed.stderr   # internal.unexpected before the fix
        entries = {e["name"]: e for e in json.loads(listed.stdout)["entries"]}
        assert entries["bad\ufffd.txt"]["undecodable"] is True and "ok.txt" in entries
        # The undecodable name typed back on the command line: one line, not a traceback.
        read = subprocess.run(base + [b"fs.read", b'{"path": "d/bad\xff.txt"}'] + tail,
                              env=srv.env, capture_output=True, cwd=str(REPO), timeout=30)
        err = lines(read.stderr.decode("utf-8", "replace"))
        assert read.returncode == cli.EXIT_USAGE, err
        assert len(err) == 1 and err[0].startswith(ONE_LINE) and "Traceback" not in err[0]
        # An error answered by the instance: the reply on stdout, one line on stderr, exit 1.
        missing = subprocess.run(base + [b"fs.read", b'{"path": "nope.txt"}'] + tail,
                                 env=srv.env, capture_output=True, cwd=str(REPO), timeout=30)
        assert missing.returncode == cli.EXIT_ERROR
        assert json.loads(missing.stdout)["error"]["kind"] == "path.not_found"
        err = lines(missing.stderr.decode())
        assert len(err) == 1 and err[0].startswith("rio: path.not_found: ")
    finally:
        srv.stop()


def test_main_called_in_process_keeps_pythons_sigpipe_handling(tmp_path, monkeypatch, capsys):
    """Only the `rio` program restores SIGPIPE's default: a test (or any host) calling main()
    in-process once had it set for the whole process, and a later write to a closed socket
    killed pytest with no report (exit 141)."""
    import signal

    from rio.cli.main import main
    monkeypatch.setenv("RIO_RUNTIME_DIR", str(tmp_path / "run"))
    before = signal.getsignal(signal.SIGPIPE)
    code = main(["status", "--instance", "nosuchinstance"])
    capsys.readouterr()
    assert code != 0
    assert signal.getsignal(signal.SIGPIPE) == before
