"""The public ACP agent registry, as an extension of the known agents (never required).

The registry (https://agentclientprotocol.com/get-started/registry) is one JSON document::

    {"version": "1.0.0", "agents": [{"id", "name", "version", "description", "repository"?,
      "website"?, "distribution": {"npx"?: {"package", "cmd"?, "args"?},
                                   "uvx"?: {"package", "cmd"?, "args"?},
                                   "binary"?: {"linux-x86_64": {"archive", "cmd", "args"?}, …}}}]}

Each agent Rio does not know already (by name, or by its command) becomes a
:class:`~rio.acp.discovery.KnownAgent` of source ``registry``: looked up on ``PATH`` and the
usual prefixes by its command (``cmd``, else the npm/PyPI package's name), started with the
registry's ``args``, and an install hint (``npm i -g …``, ``uv tool install …``, or the
archive). Nothing is downloaded or installed, and the registry's ``env`` is ignored (a
document from the network sets no variable of the user's).

The document is **cached on disk** (``<cache>/acp-registry.json``, the platform's cache folder
or ``RIO_CACHE_DIR``) for :data:`TTL_S`; it is fetched again only when older, with a short
timeout. Offline or on any error the cached copy serves, however old, else the built-in list
alone — silently: the one-line :attr:`RegistryView.note` says what happened, for
``rio agents --verbose`` and the ``agents.list`` op. ``RIO_AGENT_REGISTRY_URL`` points
discovery at another document (a mirror, a test's loopback server) or turns it ``off``.
"""

from __future__ import annotations

import json
import os
import platform
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from rio.acp.discovery import KNOWN_AGENTS, KnownAgent

DEFAULT_URL = "https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json"
URL_ENV = "RIO_AGENT_REGISTRY_URL"
CACHE_ENV = "RIO_CACHE_DIR"
CACHE_FILE = "acp-registry.json"
#: A cached document younger than this is used without asking the network.
TTL_S = 24 * 3600.0
#: After a failed fetch the network is not asked again for this long (offline, ``rio agents``
#: must not wait for the timeout every time).
RETRY_S = 600.0
FETCH_TIMEOUT_S = 3.0
MAX_BYTES = 4 << 20
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_COMMAND = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,127}$")

#: fetch(url, timeout) -> the document's bytes; raises OSError/ValueError on failure.
Fetch = Callable[[str, float], bytes]


@dataclass(frozen=True)
class RegistryView:
    """The registry's agents and one line on where they came from."""

    agents: tuple[KnownAgent, ...] = ()
    #: off, fetched, cached (fresh copy), stale (old copy: the fetch failed), unavailable
    state: str = "off"
    note: str = ""
    url: str | None = None
    fetched_at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"state": self.state, "note": self.note, "url": self.url,
                "fetched_at": self.fetched_at, "agents": [a.name for a in self.agents]}


def registry_url(env: Mapping[str, str]) -> str | None:
    value = env.get(URL_ENV, "").strip()
    if value.lower() in ("off", "none", "0", "false"):
        return None
    return value or DEFAULT_URL


def cache_path(env: Mapping[str, str]) -> Path:
    override = env.get(CACHE_ENV)
    if override:
        return Path(override) / CACHE_FILE
    import platformdirs
    return Path(platformdirs.user_cache_dir("rio")) / CACHE_FILE


def fetch_url(url: str, timeout: float) -> bytes:
    """GET ``url`` (https, or http to a loopback address only), at most :data:`MAX_BYTES`."""
    parts = urlsplit(url)
    loopback = parts.hostname in ("127.0.0.1", "::1", "localhost")
    if parts.scheme != "https" and not (parts.scheme == "http" and loopback):
        raise ValueError(f"not an https URL: {url}")
    import urllib.request
    request = urllib.request.Request(url, headers={"User-Agent": "rio-editor",
                                                   "Accept": "application/json"})
    with urllib.request.urlopen(request, timeout=timeout) as answer:  # the scheme is checked
        data: bytes = answer.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ValueError(f"the registry is larger than {MAX_BYTES} bytes")
    return data


def load(env: Mapping[str, str], *, network: bool = True, fetch: Fetch = fetch_url,
         now: float | None = None) -> RegistryView:
    """The registry's agents: the cached copy while fresh, else fetched (``network``), else
    the cached copy however old, else none. Never raises."""
    url = registry_url(env)
    if url is None:
        return RegistryView(note=f"the ACP agent registry is off ({URL_ENV}=off)")
    now = time.time() if now is None else now
    path = cache_path(env)
    cached = _read_cache(path, url)
    if cached is not None and now - cached[0] < TTL_S:
        return _view(cached[1], "cached", url, cached[0],
                     f"registry: {url}, cached {_age(now - cached[0])} ago")
    why = "not fetched (no network use here)"
    failed_at = _failed_at(path, url)
    if network and failed_at is not None and 0 <= now - failed_at < RETRY_S:
        # said of the future: the next `rio agents` after the pause asks the network again
        why = (f"it failed {_age(now - failed_at)} ago; it will be tried again in "
               f"{_age(RETRY_S - (now - failed_at))}")
    elif network:
        try:
            document = json.loads(fetch(url, FETCH_TIMEOUT_S).decode("utf-8"))
            agents = parse(document)
            _write_cache(path, url, now, document)
            return RegistryView(agents, "fetched", f"registry: {url}, fetched now "
                                f"({len(agents)} agents beyond the built-in list)", url, now)
        except Exception as exc:  # noqa: BLE001 -- never required: any failure → fallback
            why = f"{type(exc).__name__}: {str(exc)[:160]}"
            _write_failure(path, url, now)
    if cached is not None:
        return _view(cached[1], "stale", url, cached[0],
                     f"registry: {url} not reachable ({why}); using the copy from "
                     f"{_age(now - cached[0])} ago")
    return RegistryView((), "unavailable", f"registry: {url} not reachable ({why}); the "
                        "built-in list serves", url, None)


def _view(document: Any, state: str, url: str, fetched_at: float, note: str) -> RegistryView:
    try:
        agents = parse(document)
    except ValueError as exc:
        return RegistryView((), "unavailable", f"registry: the cached copy is unusable "
                            f"({exc}); the built-in list serves", url, fetched_at)
    return RegistryView(agents, state, note, url, fetched_at)


def _age(seconds: float) -> str:
    seconds = max(0.0, seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.0f} h" if seconds < 172800 else f"{seconds / 86400:.0f} days"


def _read_cache(path: Path, url: str) -> tuple[float, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("url") != url or \
            not isinstance(data.get("fetched_at"), (int, float)):
        return None
    return float(data["fetched_at"]), data.get("document")


def _failed_at(path: Path, url: str) -> float | None:
    try:
        data = json.loads(path.with_name(path.name + ".failed").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    at = data.get("failed_at") if isinstance(data, dict) and data.get("url") == url else None
    return float(at) if isinstance(at, (int, float)) else None


def _write_failure(path: Path, url: str, now: float) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.with_name(path.name + ".failed").write_text(
            json.dumps({"url": url, "failed_at": now}), encoding="utf-8")
    except OSError:
        pass


def _write_cache(path: Path, url: str, now: float, document: Any) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"url": url, "fetched_at": now, "document": document}),
                       encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass   # a cache that cannot be written only means fetching again next time


def platform_key() -> str:
    system = {"Darwin": "darwin", "Windows": "windows"}.get(platform.system(), "linux")
    machine = platform.machine().lower()
    arch = "aarch64" if machine in ("arm64", "aarch64") else "x86_64"
    return f"{system}-{arch}"


def parse(document: Any) -> tuple[KnownAgent, ...]:
    """The registry's agents Rio does not know already; malformed entries are skipped, a
    document without an ``agents`` list is a ValueError."""
    agents = document.get("agents") if isinstance(document, dict) else None
    if not isinstance(agents, list):
        raise ValueError("no agents list")
    known_names = {a.name for a in KNOWN_AGENTS}
    known_commands = {c for a in KNOWN_AGENTS for c in a.commands}
    out: dict[str, KnownAgent] = {}
    for entry in agents:
        agent = _agent(entry)
        if agent is None or agent.name in known_names or agent.name in out \
                or agent.commands[0] in known_commands:
            continue
        out[agent.name] = agent
    return tuple(out.values())


def _agent(entry: Any) -> KnownAgent | None:
    if not isinstance(entry, dict):
        return None
    ident, name = entry.get("id"), entry.get("name")
    dist = entry.get("distribution")
    if not isinstance(ident, str) or not _ID.match(ident) or not isinstance(dist, dict):
        return None
    how = _how(dist)
    if how is None:
        return None
    command, args, install = how
    title = name if isinstance(name, str) and name.strip() else ident
    return KnownAgent(ident, title[:80], (command,), args, install=install, source="registry")


def _how(dist: Mapping[str, Any]) -> tuple[str, tuple[str, ...], str] | None:
    """(command, args, install hint) from the first usable distribution."""
    for kind in ("npx", "uvx"):
        d = dist.get(kind)
        if isinstance(d, dict) and isinstance(d.get("package"), str):
            package = d["package"]
            command = d.get("cmd") if isinstance(d.get("cmd"), str) else _bin_of(package)
            args = _args(d.get("args"))
            if command and _COMMAND.match(command) and args is not None:
                install = f"npm i -g {package}" if kind == "npx" else \
                    f"uv tool install {re.split(r'[=<>@ ]', package)[0]}"
                return command, args, install
    binary = dist.get("binary")
    if isinstance(binary, dict):
        target = binary.get(platform_key())
        if isinstance(target, dict) and isinstance(target.get("cmd"), str):
            command = os.path.basename(target["cmd"])
            args = _args(target.get("args"))
            if _COMMAND.match(command) and args is not None:
                archive = target.get("archive") if isinstance(target.get("archive"), str) \
                    else ""
                return command, args, f"download {archive}" if archive else ""
    return None


def _bin_of(package: str) -> str:
    """``@scope/name@1.2`` → ``name`` (npm's default bin name); ``name==1.2`` → ``name``."""
    base = package.rsplit("/", 1)[-1]
    return re.split(r"[@=<>~ \[]", base)[0] if not base.startswith("@") else ""


def _args(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return ()
    if isinstance(value, list) and all(isinstance(a, str) for a in value) and len(value) < 32:
        return tuple(value)
    return None
