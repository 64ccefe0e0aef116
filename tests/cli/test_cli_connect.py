"""`--connect` / `--server-key` on the command line (rio/cli/main.py)."""

from __future__ import annotations

import pytest

from rio.cli.main import glue_server_key, main

#: A server key as `rio keys` may print it: Z85, and 1 key in 85 starts with "-".
DASH_KEY = "-" + "rQ1x" * 9 + "abc"


def test_a_server_key_that_starts_with_a_dash_is_taken_as_the_value(monkeypatch, capsys,
                                                                     tmp_path):
    monkeypatch.setenv("RIO_CLIENT_KEY_DIR", str(tmp_path / "no-keys"))
    code = main(["status", "--connect", "tcp://127.0.0.1:9", "--server-key", DASH_KEY,
                 "--timeout", "0.2"])
    err = capsys.readouterr().err
    assert "expected one argument" not in err and code != 3
    assert "bus.no_client_key" in err          # it got past parsing, to the client's key


@pytest.mark.parametrize("argv, glued", [
    (["--connect", "tcp://h:1", "--server-key", "-k"], ["--connect", "tcp://h:1",
                                                         "--server-key=-k"]),
    (["status", "--server-key=-k"], ["status", "--server-key=-k"]),
    (["--server-key"], ["--server-key"]),
])
def test_glue_server_key(argv, glued):
    assert glue_server_key(argv) == glued
