"""The public ACP agent registry extends the known agents (rio/acp/registry.py): served here
from a loopback HTTP server — tests never reach the internet (conftest turns the registry off
for everything else) — cached on disk with a TTL, and never required."""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from rio.acp import discovery, registry
from rio.cli import main as cli

pytestmark = pytest.mark.timeout(60)

DOCUMENT = {"version": "1.0.0", "agents": [
    {"id": "auggie", "name": "Auggie CLI", "version": "0.9.0", "description": "…",
     "distribution": {"npx": {"package": "@augmentcode/auggie@0.9.0", "args": ["--acp"],
                              "env": {"AUGMENT_SECRET": "from-the-network"}}}},
    {"id": "fast-agent", "name": "fast-agent", "version": "1", "description": "…",
     "distribution": {"uvx": {"package": "fast-agent-acp==0.3", "cmd": "fast-agent-acp",
                              "args": ["-x"]}}},
    {"id": "droid", "name": "Factory Droid", "version": "1", "description": "…",
     "distribution": {"binary": {registry.platform_key(): {
         "archive": "https://example.invalid/droid.tar.gz", "cmd": "./droid",
         "args": ["exec", "--output-format", "acp"]}}}},
    # already known (by name, and by command): the built-in entry wins
    {"id": "claude-code-acp", "name": "Claude Code", "version": "1", "description": "…",
     "distribution": {"npx": {"package": "@zed-industries/claude-code-acp"}}},
    {"id": "codex", "name": "Codex (registry)", "version": "1", "description": "…",
     "distribution": {"npx": {"package": "whatever"}}},
    # malformed: skipped, not fatal
    {"id": "../escape", "distribution": {"npx": {"package": "x"}}},
    {"id": "no-dist", "name": "x"},
    {"id": "bad-args", "distribution": {"npx": {"package": "y", "args": "--acp"}}},
    "not an object"]}


class Registry:
    """A loopback HTTP server serving ``body`` at /registry.json and counting requests."""

    def __init__(self) -> None:
        self.body = json.dumps(DOCUMENT).encode()
        self.hits = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:   # http.server's name
                outer.hits += 1
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(outer.body)))
                self.end_headers()
                self.wfile.write(outer.body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/registry.json"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


@pytest.fixture
def served():
    server = Registry()
    yield server
    server.stop()


def env_for(tmp_path: Path, url: str) -> dict[str, str]:
    return {"RIO_AGENT_REGISTRY_URL": url, "RIO_CACHE_DIR": str(tmp_path / "cache"),
            "PATH": str(tmp_path / "bin"), "HOME": str(tmp_path)}


def test_the_registry_extends_the_known_agents_and_is_cached(tmp_path, served):
    env = env_for(tmp_path, served.url)
    view = registry.load(env, now=1000.0)
    assert view.state == "fetched" and served.hits == 1
    by_name = {a.name: a for a in view.agents}
    assert sorted(by_name) == ["auggie", "droid", "fast-agent"]
    assert by_name["auggie"].commands == ("auggie",) and by_name["auggie"].args == ("--acp",)
    assert by_name["auggie"].install == "npm i -g @augmentcode/auggie@0.9.0"
    assert by_name["fast-agent"].commands == ("fast-agent-acp",)
    assert by_name["fast-agent"].install == "uv tool install fast-agent-acp"
    assert by_name["droid"].commands == ("droid",)
    assert by_name["droid"].args == ("exec", "--output-format", "acp")
    assert all(a.source == "registry" for a in view.agents)
    cached = json.loads((tmp_path / "cache" / "acp-registry.json").read_text())
    assert cached["url"] == served.url and cached["fetched_at"] == 1000.0
    # within the TTL: the disk copy, no request
    again = registry.load(env, now=1000.0 + registry.TTL_S - 1)
    assert again.state == "cached" and served.hits == 1 and again.agents == view.agents
    # past it: fetched again
    assert registry.load(env, now=1000.0 + registry.TTL_S + 1).state == "fetched"
    assert served.hits == 2


def test_offline_the_old_copy_or_the_builtin_list_serves_silently(tmp_path, served):
    env = env_for(tmp_path, served.url)
    registry.load(env, now=1000.0)
    served.stop()
    stale = registry.load(env, now=1000.0 + 3 * registry.TTL_S)
    assert stale.state == "stale" and {a.name for a in stale.agents} >= {"auggie"}
    assert "not reachable" in stale.note and "using the copy from 3 days ago" in stale.note
    # offline, the network is not asked again for a while (no timeout on every rio agents)
    calls: list[str] = []

    def fetch(url: str, timeout: float) -> bytes:
        calls.append(url)
        raise OSError("offline")
    soon = registry.load(env, now=1000.0 + 3 * registry.TTL_S + 60, fetch=fetch)
    assert soon.state == "stale" and calls == [] and "it failed 60 s ago" in soon.note
    # what is still to come is said as such, with the time left (not "tried again after")
    assert "it will be tried again in 9 min" in soon.note and "tried again after" not in soon.note
    later = registry.load(env, now=1000.0 + 3 * registry.TTL_S + registry.RETRY_S + 1,
                          fetch=fetch)
    assert later.state == "stale" and calls == [served.url]
    # no copy at all (another URL): nothing but the built-in list, and no exception
    other = env_for(tmp_path, served.url.replace("registry.json", "other.json"))
    none = registry.load(other)
    assert none.state == "unavailable" and none.agents == ()
    assert "the built-in list serves" in none.note
    # starting an agent never uses the network: the cached copy only
    assert registry.load(env, network=False, now=1000.0 + 3 * registry.TTL_S).state == "stale"


def test_a_broken_document_or_a_plain_http_url_elsewhere_is_not_used(tmp_path, served):
    served.body = b'{"version": "1", "agents": "nope"}'
    view = registry.load(env_for(tmp_path, served.url))
    assert view.state == "unavailable" and view.agents == ()
    served.body = b"<html>not json</html>"
    assert registry.load(env_for(tmp_path, served.url)).state == "unavailable"
    remote = registry.load(env_for(tmp_path, "http://example.invalid/registry.json"))
    assert remote.state == "unavailable" and "not an https URL" in remote.note
    off = registry.load({"RIO_AGENT_REGISTRY_URL": "off"})
    assert off.state == "off" and off.agents == ()
    assert registry.registry_url({}) == registry.DEFAULT_URL


def test_a_registry_agent_is_found_started_like_a_known_one(tmp_path, served, monkeypatch,
                                                             capsys):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    agent = bindir / "auggie"
    agent.write_text(f"#!{sys.executable}\nprint('auggie 0.9.0')\n")
    agent.chmod(0o755)
    env = env_for(tmp_path, served.url)
    extra = registry.load(env).agents
    rows = {i.name: i for i in discovery.discover(env, discovery.RealHost(), None,
                                                  extra=extra)}
    assert rows["auggie"].found and rows["auggie"].path == str(agent)
    assert rows["auggie"].args == ("--acp",) and rows["auggie"].source == "registry"
    assert rows["claude"].source == "builtin" and rows["codex"].title == "Codex"
    spec = discovery.spec_for("auggie", {}, extra)
    assert spec.command == "auggie" and spec.env == {}   # the registry's env is not used
    # rio agents: the rows; --verbose adds the registry's one line (JSON: {agents, registry})
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("RIO_CONFIG_DIR", str(tmp_path / "config"))
    assert cli.main(["agents", "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert isinstance(plain, list) and "auggie" in {r["name"] for r in plain}
    assert cli.main(["agents", "--json", "--verbose"]) == 0
    verbose = json.loads(capsys.readouterr().out)
    assert verbose["registry"]["state"] == "cached" and verbose["registry"]["url"] == served.url
    assert {r["name"]: r["source"] for r in verbose["agents"]}["auggie"] == "registry"
    assert cli.main(["agents", "--verbose"]) == 0
    table = capsys.readouterr().out
    assert "auggie" in table and table.rstrip().splitlines()[-1].startswith("registry: ")
