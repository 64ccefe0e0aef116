"""rio/acp/discovery.py: finding ACP agents without starting them (but for --version)."""

from __future__ import annotations

import json
import os
import stat
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rio.acp import discovery
from rio.acp.discovery import (
    AgentInfo,
    Probe,
    RealHost,
    discover,
    parse_agents_config,
    parse_version,
    run_version_probes,
    search_dirs,
    spec_for,
)
from rio.protocol.errors import AgentError, ConfigError


class FakeHost:
    """Executables and files by path; nothing on the real disk."""

    def __init__(self, executables=(), files=(), packages=None):
        self.executables = set(executables)
        self.files = set(files)
        self.packages = packages or {}
        self.looked: list[str] = []

    def is_executable(self, path):
        self.looked.append(path)
        return path in self.executables

    def exists(self, path):
        return path in self.files

    def package_version(self, path):
        return self.packages.get(path)


class RecordingRunner:
    def __init__(self, probes=None):
        self.calls = []
        self.probes = probes

    def __call__(self, argvs, timeout, env):
        self.calls.append(([list(a) for a in argvs], timeout))
        if self.probes is not None:
            return list(self.probes)
        return [Probe(0, f"{os.path.basename(a[0])} 1.2.3\n") for a in argvs]


ENV = {"HOME": "/home/u", "PATH": "/usr/bin:/bin"}


def by_name(infos):
    return {i.name: i for i in infos}


def test_known_agents_are_found_on_path_with_their_acp_arguments():
    host = FakeHost({"/usr/bin/codex-acp", "/bin/opencode", "/usr/bin/gemini"})
    runner = RecordingRunner()
    infos = by_name(discover(ENV, host, runner))
    assert set(discovery.KNOWN_NAMES) <= set(infos)
    assert {"claude", "codex", "opencode", "gemini", "grok", "copilot", "qwen", "goose",
            "cline", "kimi"} == set(discovery.KNOWN_NAMES)
    assert infos["codex"].found and infos["codex"].argv == ("/usr/bin/codex-acp",)
    assert infos["opencode"].argv == ("/bin/opencode", "acp")
    assert infos["gemini"].argv == ("/usr/bin/gemini", "--experimental-acp")
    assert infos["codex"].where == "PATH"
    assert not infos["claude"].found and infos["claude"].path is None
    # only the found agents were asked their version, all in one batch
    assert len(runner.calls) == 1
    asked = sorted(a[0] for a in runner.calls[0][0])
    assert asked == ["/bin/opencode", "/usr/bin/codex-acp", "/usr/bin/gemini"]
    assert infos["opencode"].version == "1.2.3"


def test_the_older_claude_adapter_is_found_when_the_new_one_is_not():
    host = FakeHost({"/usr/bin/claude-code-acp"})
    info = by_name(discover(ENV, host, None))["claude"]
    assert info.found and info.path == "/usr/bin/claude-code-acp"
    host = FakeHost({"/usr/bin/claude-code-acp", "/bin/claude-agent-acp"})
    assert by_name(discover(ENV, host, None))["claude"].path == "/bin/claude-agent-acp"


def test_global_prefixes_are_searched_after_path():
    env = {**ENV, "BUN_INSTALL": "/opt/bun", "PNPM_HOME": "/home/u/.pnpm"}
    dirs = [d for d, _ in search_dirs(env)]
    assert dirs[:2] == ["/usr/bin", "/bin"]
    for expected in ("/opt/bun/bin", "/home/u/.pnpm", "/home/u/.npm-global/bin",
                     "/home/u/.bun/bin", "/home/u/.local/bin", "/usr/local/bin"):
        assert expected in dirs
    host = FakeHost({"/home/u/.npm-global/bin/claude-agent-acp"})
    info = by_name(discover(env, host, None))["claude"]
    assert info.path == "/home/u/.npm-global/bin/claude-agent-acp"
    assert info.where == "~/.npm-global/bin"


def test_signed_in_hint_respects_the_agents_own_folders_and_never_reads_a_file():
    files = {"/cfg/claude/.credentials.json", "/home/u/.codex/auth.json",
             "/data/opencode/auth.json"}
    env = {**ENV, "CLAUDE_CONFIG_DIR": "/cfg/claude", "XDG_DATA_HOME": "/data"}
    infos = by_name(discover(env, FakeHost(files=files), None))
    assert infos["claude"].signed_in == "yes"
    assert infos["claude"].credential == "/cfg/claude/.credentials.json"
    assert infos["codex"].signed_in == "yes"
    assert infos["opencode"].signed_in == "yes"
    assert infos["gemini"].signed_in == "no"
    # CODEX_HOME moves Codex's login: the default folder no longer counts
    env2 = {**env, "CODEX_HOME": "/elsewhere"}
    assert by_name(discover(env2, FakeHost(files=files), None))["codex"].signed_in == "no"


def test_keys_set_names_variables_and_never_carries_a_value():
    env = {**ENV, "ANTHROPIC_API_KEY": "sk-secret-value", "OPENAI_API_KEY": ""}
    infos = by_name(discover(env, FakeHost(), None))
    assert infos["claude"].keys_set == ("ANTHROPIC_API_KEY",)
    assert infos["codex"].keys_set == ()          # empty counts as not set
    assert "sk-secret-value" not in json.dumps([i.to_dict() for i in infos.values()])


def test_version_probe_failures_are_reported_per_agent():
    host = FakeHost({"/usr/bin/codex-acp", "/bin/opencode", "/usr/bin/gemini"},
                    packages={"/usr/bin/codex-acp": "0.16.0"})
    runner = RecordingRunner([Probe(None, timed_out=True), Probe(2, "", "bad flag"),
                              Probe(0, "")])
    infos = by_name(discover(ENV, host, runner))
    # order of the batch is the order of the known agents: codex, opencode, gemini
    assert infos["codex"].version is None and "in time" in infos["codex"].version_error
    assert infos["opencode"].version_error == "--version exited with 2"
    assert infos["gemini"].version_error == "no version in its answer"
    # a probe that ran but said nothing falls back to the npm package's version
    runner = RecordingRunner([Probe(2, "", "error: unexpected argument"), Probe(0, "1.0"),
                              Probe(0, "0.9")])
    assert by_name(discover(ENV, host, runner))["codex"].version == "0.16.0"


@pytest.mark.parametrize("out,expected", [
    ("opencode 1.18.33\n", "1.18.33"), ("grok 1.0.58 (abc) [alpha]", "1.0.58"),
    ("v0.64.0-nightly.2\nmore", "0.64.0-nightly.2"), ("2.1\n", "2.1")])
def test_parse_version(out, expected):
    assert parse_version(Probe(0, out)) == (expected, None)


@given(st.text(max_size=200))
@settings(max_examples=200, deadline=None)
def test_parse_version_never_fails(text):
    version, why = parse_version(Probe(0, text))
    assert (version is None) != (why is None)
    if version is not None:
        assert version[0].isdigit() and version in text


def test_config_adds_an_agent_that_then_behaves_like_a_known_one(tmp_path):
    text = """
[agent]
provider = "anthropic"

[agents.mine]
command = "mine-agent"
args = ["acp", "--fast"]
env = { MINE_MODEL = "quick" }
title = "My agent"

[agents.claude]
command = "/opt/claude/bin/claude-agent-acp"
"""
    config = parse_agents_config(text)
    host = FakeHost({"/usr/bin/mine-agent", "/opt/claude/bin/claude-agent-acp"})
    infos = by_name(discover(ENV, host, RecordingRunner(), config))
    mine = infos["mine"]
    assert mine.found and mine.configured and mine.title == "My agent"
    assert mine.argv == ("/usr/bin/mine-agent", "acp", "--fast")
    assert mine.env_names == ("MINE_MODEL",) and mine.version == "1.2.3"
    claude = infos["claude"]
    assert claude.path == "/opt/claude/bin/claude-agent-acp" and claude.where == "config"
    assert spec_for("mine", config).env == {"MINE_MODEL": "quick"}


@pytest.mark.parametrize("text,words", [
    ("[agents.x]\ncommand = 3\n", "command must be a str"),
    ("[agents.x]\ncommand = 'a'\nflavour = 'b'\n", "unknown key 'flavour'"),
    ("[agents.x]\nargs = ['a']\n", "needs a command"),
    ("[agents.x]\ncommand = 'a'\nargs = [1]\n", "args must be strings"),
    ("agents = 3\n", "must hold tables"),
    ("[agents.x\n", "config.toml"),
])
def test_config_mistakes_are_config_errors_naming_the_section(text, words):
    with pytest.raises(ConfigError) as err:
        parse_agents_config(text)
    assert words in err.value.message
    assert err.value.kind == "config.invalid"


def test_an_unknown_name_and_a_missing_agent_say_what_to_do():
    with pytest.raises(AgentError) as err:
        spec_for("nosuch")
    assert err.value.kind == "agent.not_configured" and "claude" in err.value.next
    info = by_name(discover(ENV, FakeHost(), None))["codex"]
    with pytest.raises(AgentError) as err:
        _ = info.argv
    assert err.value.kind == "agent.agent_not_found"
    assert "@zed-industries/codex-acp" in err.value.next


def test_nothing_but_version_probes_are_started(tmp_path):
    """The real runner on a real folder: a script that records every start."""
    log = tmp_path / "started.log"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in ("codex-acp", "opencode"):
        script = bindir / name
        script.write_text(f"#!{sys.executable}\nimport sys\n"
                          f"open({str(log)!r}, 'a').write(' '.join(sys.argv[1:]) + '\\n')\n"
                          f"print('{name} 4.5.6')\n")
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
    env = {"HOME": str(tmp_path), "PATH": str(bindir)}
    infos = by_name(discover(env, RealHost(), run_version_probes))
    assert infos["codex"].version == "4.5.6" and infos["opencode"].version == "4.5.6"
    assert sorted(log.read_text().splitlines()) == ["--version", "--version"]


@pytest.mark.timeout(30)
def test_a_probe_that_hangs_is_killed_at_the_timeout(tmp_path):
    import time
    script = tmp_path / "slow"
    script.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(60)\n")
    script.chmod(0o755)
    fast = tmp_path / "fast"
    fast.write_text(f"#!{sys.executable}\nprint('fast 1.0.0')\n")
    fast.chmod(0o755)
    t0 = time.monotonic()
    probes = run_version_probes([[str(script)], [str(fast)], [str(tmp_path / "absent")]], 1.5,
                                dict(os.environ))
    assert time.monotonic() - t0 < 10
    assert probes[0].timed_out
    assert parse_version(probes[1]) == ("1.0.0", None)
    assert probes[2].returncode is None and "could not be started" in probes[2].error


def test_agent_info_round_trips_to_json():
    info = AgentInfo("x", "X", True, "/bin/x", ("acp",), "PATH", "1.0", None, "yes",
                     "/h/.x", ("X_KEY",))
    data = json.loads(json.dumps(info.to_dict()))
    assert data["args"] == ["acp"] and data["keys_set"] == ["X_KEY"]


def test_agents_config_timing_keys_tune_the_silence_watchdog():
    from pathlib import Path

    from rio.acp.client import settings_for
    spec = parse_agents_config('[agents.x]\ncommand = "/bin/x"\nsilent_after_s = 5\n'
                               'give_up_after_s = 20.5\n')["x"]
    assert spec.timing == {"silent_after_s": 5.0, "give_up_after_s": 20.5}
    info = AgentInfo("x", "x", True, "/bin/x")
    settings = settings_for(info, spec, Path("/tmp"), {})
    assert (settings.silent_after_s, settings.give_up_after_s) == (5.0, 20.5)
    for bad in ("0", "-1", "true", '"5"'):
        with pytest.raises(ConfigError) as err:
            parse_agents_config(f'[agents.x]\ncommand = "/bin/x"\nsilent_after_s = {bad}\n')
        assert err.value.kind == "config.invalid"
