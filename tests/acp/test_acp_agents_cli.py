"""`rio agents` and the core's `agents.list` (actors/agent/discovery_actor.py) on a real folder."""

from __future__ import annotations

import json
import sys

import pytest

from actors.agent.discovery_actor import AgentsActor
from rio.cli import main as cli
from rio.protocol import ops, roles
from rio.protocol.frames import Request


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """A home with one agent installed (codex-acp, which logs every start) and a config."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "starts.log"
    agent = bindir / "codex-acp"
    agent.write_text(f"#!{sys.executable}\nimport sys\n"
                     f"open({str(log)!r}, 'a').write(' '.join(sys.argv[1:]) + '\\n')\n"
                     "print('codex-acp 0.16.0')\n")
    agent.chmod(0o755)
    (tmp_path / ".codex").mkdir()
    (tmp_path / ".codex" / "auth.json").write_text("{}")
    config = tmp_path / "config"
    config.mkdir()
    for var in list(__import__("os").environ):
        if var.endswith(("_API_KEY", "_TOKEN")) or var in ("CODEX_HOME", "CLAUDE_CONFIG_DIR"):
            monkeypatch.delenv(var)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(bindir))
    monkeypatch.setenv("RIO_CONFIG_DIR", str(config))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-shown")
    return tmp_path, log, config


def test_rio_agents_json_lists_every_agent(machine, capsys):
    home, log, _ = machine
    assert cli.main(["agents", "--json"]) == 0
    out = capsys.readouterr().out
    rows = {r["name"]: r for r in json.loads(out)}
    assert rows["codex"]["found"] and rows["codex"]["version"] == "0.16.0"
    assert rows["codex"]["signed_in"] == "yes"
    assert rows["codex"]["keys_set"] == ["OPENAI_API_KEY"]
    assert not rows["claude"]["found"]
    assert "sk-test-not-shown" not in out
    assert log.read_text() == "--version\n"


def test_rio_agents_table_and_a_configured_agent(machine, capsys):
    home, _, config = machine
    (config / "config.toml").write_text(
        f'[agents.mine]\ncommand = "{home}/bin/codex-acp"\nargs = ["--acp"]\ntitle = "Mine"\n')
    assert cli.main(["agents"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "AGENT", "VERSION", "SIGNED", "IN", "KEYS", "WHERE"]
    mine = next(line for line in lines if line.startswith("mine"))
    assert "Mine (config)" in mine and "0.16.0" in mine and "--acp" in mine
    assert "2 of 11 found" in lines[-2]
    # whether agents run in a box here (ADR-0038): the test session turns the box off
    assert lines[-1] == ("Sandbox: off (RIO_AGENT_SANDBOX) — agents run with your own access "
                         "to everything.")


def test_rio_agents_reports_a_config_mistake_in_one_line(machine, capsys):
    _, _, config = machine
    (config / "config.toml").write_text("[agents.mine]\ncommand = 3\n")
    assert cli.main(["agents"]) == cli.EXIT_ERROR
    err = capsys.readouterr().err
    assert err.startswith("rio: config.invalid:") and "[agents.mine]" in err


def test_agents_list_is_in_the_catalogue_for_owners_only():
    assert ops.validate(Request("1", "agents.list", {})) == {"refresh": False}
    assert roles.required("agents.list") == "owner"


def test_the_core_actor_keeps_versions_until_refresh(machine):
    _, log, _ = machine
    actor = AgentsActor()
    rows = {r["name"]: r for r in actor.list(refresh=False)}
    assert rows["codex"]["version"] == "0.16.0"
    actor.list(refresh=False)
    assert log.read_text().count("--version") == 1
    actor.list(refresh=True)
    assert log.read_text().count("--version") == 2
    # an agent added to config.toml shows at once, without waiting for the cache
    _, _, config = machine
    (config / "config.toml").write_text('[agents.mine]\ncommand = "codex-acp"\n')
    rows = {r["name"]: r for r in actor.list(refresh=False)}
    assert rows["mine"]["found"] and rows["mine"]["configured"]


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_agents_list_through_a_running_instance(tmp_path):
    """The core's actor answers agents.list from the instance's own environment."""
    from tests.support import RioServer, rio_env
    root = tmp_path / "proj"
    root.mkdir()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    agent = bindir / "opencode"
    agent.write_text(f"#!{sys.executable}\nprint('opencode 9.8.7')\n")
    agent.chmod(0o755)
    env = rio_env(tmp_path)
    env["PATH"] = f"{bindir}:{env['PATH']}"
    server = RioServer(root, tmp_path, env=env).start()
    try:
        res = server.cli("call", "--instance", server.name, "agents.list")
        assert res.returncode == 0, res.stderr
        rows = {r["name"]: r for r in json.loads(res.stdout)["agents"]}
        assert rows["opencode"]["found"] and rows["opencode"]["version"] == "9.8.7"
        assert rows["opencode"]["path"] == str(agent)
    finally:
        server.stop()


@pytest.mark.timeout(120)
def test_rio_agents_logout_signs_out_where_the_agent_offers_it(machine, capsys):
    """The agent is started on its own, sent ACP logout (it advertised auth.logout) and
    stopped; one that does not advertise it is not sent anything and the error names the
    agent's own way out. The core's agents.logout does the same."""
    from pathlib import Path
    from types import SimpleNamespace

    from rio.protocol.errors import AgentError
    home, _, config = machine
    fake = Path(__file__).parent.parent / "fakes" / "acp_agent.py"
    marker = home / "logged-out"
    offers = home / "offers.json"
    offers.write_text(json.dumps({"logout": str(marker)}))
    silent = home / "silent.json"
    silent.write_text(json.dumps({}))
    (config / "config.toml").write_text(
        f'[agents.fake]\ncommand = "{sys.executable}"\nargs = ["{fake}", "{offers}"]\n'
        f'[agents.plain]\ncommand = "{sys.executable}"\nargs = ["{fake}", "{silent}"]\n')
    assert cli.main(["agents", "logout", "fake", "--root", str(home)]) == 0
    assert "Signed out of fake" in capsys.readouterr().out
    assert marker.read_text() == "logged out\n"
    assert cli.main(["agents", "logout", "plain", "--root", str(home)]) == cli.EXIT_ERROR
    err = capsys.readouterr().err
    assert "agent.logout_not_offered" in err and "own command" in err
    marker.unlink()
    actor = AgentsActor(home)
    ctx = SimpleNamespace(args={"agent": "fake"})
    assert actor.logout_op(ctx) == {"agent": "fake", "signed_out": True}
    assert marker.exists()
    with pytest.raises(AgentError) as caught:
        actor.logout_op(SimpleNamespace(args={"agent": "plain"}))
    assert caught.value.kind == "agent.logout_not_offered"
    assert ops.validate(Request("1", "agents.logout", {"agent": "fake"})) == {"agent": "fake"}
    assert roles.required("agents.logout") == "owner"
