"""Which ACP agents are installed, their versions, and whether they look signed in.

Pure logic behind three small ports, so every rule is tested without touching the machine:

* :class:`HostPort` — is there an executable file here, does this file exist;
* the environment — a plain mapping (``PATH``, ``HOME``, ``XDG_*``, ``CLAUDE_CONFIG_DIR`` …);
* a :data:`VersionRunner` — runs ``<agent> --version`` for every agent found, all at once,
  under one timeout. **Nothing else is started**: no ``npm prefix -g``, no agent.

An agent is found on ``PATH`` first, then in the usual global prefixes of npm, pnpm, bun,
volta and ``~/.local/bin`` (a desktop started from a menu often has a shorter ``PATH`` than
the user's shell). "Looks signed in" is only a hint: the agent's own credential file
*exists* (it is never opened, let alone read), respecting ``CLAUDE_CONFIG_DIR``,
``CODEX_HOME`` and the XDG folders; "key set" lists the usual variables that are set
(names only, never a value). The agent itself is the judge: a wrong or expired login still
answers "Authentication required" at the first session, and the client shows sign-in then.

Agents beyond the known ones — or a known one at another path — come from the user's
``config.toml``::

    [agents.mine]                     # the discovery name, e.g. `rio chat --agent mine`
    command = "/opt/mine/bin/mine"    # a path, or a name looked up like the known agents
    args = ["acp"]
    env = { MINE_MODEL = "fast" }     # added to the user's environment for this agent
    title = "My agent"

An ``[agents.claude]`` table overrides the known agent's command/args/env. Where the public
ACP agent registry can be read, its agents extend the known ones (``extra``: rio/acp/registry.py).
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from rio.config.toml_file import parse_toml, read_config_text
from rio.protocol.errors import AgentError, ConfigError

#: The version probe's timeout (seconds). Agents that are node scripts start in ~0.3–1 s.
VERSION_TIMEOUT_S = 3.0
_VERSION_RE = re.compile(r"\d+\.\d+(?:\.\d+)?(?:[-+.][0-9A-Za-z.+-]+)?")


@dataclass(frozen=True)
class KnownAgent:
    """An agent Rio knows how to start. ``commands`` are tried in order (the first found
    wins); ``credentials`` are paths relative to a base folder: ``("CLAUDE_CONFIG_DIR",
    "~/.claude", ".credentials.json")`` means ``$CLAUDE_CONFIG_DIR/.credentials.json`` when
    the variable is set, else ``~/.claude/.credentials.json``. Base ``"XDG_DATA_HOME"`` and
    ``"XDG_CONFIG_HOME"`` fall back to ``~/.local/share`` and ``~/.config``."""

    name: str
    title: str
    commands: tuple[str, ...]
    args: tuple[str, ...] = ()
    credentials: tuple[tuple[str | None, str, str], ...] = ()
    key_vars: tuple[str, ...] = ()
    install: str = ""
    version_args: tuple[str, ...] = ("--version",)
    #: "builtin" (this list), or "registry" (the public ACP registry: rio/acp/registry.py)
    source: str = "builtin"


KNOWN_AGENTS: tuple[KnownAgent, ...] = (
    KnownAgent("claude", "Claude Code", ("claude-agent-acp", "claude-code-acp"),
               credentials=(("CLAUDE_CONFIG_DIR", "~/.claude", ".credentials.json"),),
               key_vars=("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"),
               install="npm i -g @zed-industries/claude-agent-acp"),
    KnownAgent("codex", "Codex", ("codex-acp",),
               credentials=(("CODEX_HOME", "~/.codex", "auth.json"),),
               key_vars=("CODEX_API_KEY", "OPENAI_API_KEY"),
               install="npm i -g @zed-industries/codex-acp"),
    KnownAgent("opencode", "OpenCode", ("opencode",), ("acp",),
               credentials=(("XDG_DATA_HOME", "~/.local/share", "opencode/auth.json"),),
               key_vars=("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY",
                         "GEMINI_API_KEY"),
               install="npm i -g opencode-ai"),
    KnownAgent("gemini", "Gemini CLI", ("gemini",), ("--experimental-acp",),
               credentials=((None, "~/.gemini", "oauth_creds.json"),),
               key_vars=("GEMINI_API_KEY", "GOOGLE_API_KEY"),
               install="npm i -g @google/gemini-cli"),
    KnownAgent("grok", "Grok", ("grok",), ("agent", "stdio"),
               credentials=((None, "~/.grok", "auth.json"),), key_vars=("XAI_API_KEY",)),
    KnownAgent("copilot", "GitHub Copilot", ("copilot",), ("--acp",),
               credentials=(("XDG_CONFIG_HOME", "~/.config", "github-copilot/apps.json"),
                            (None, "~/.copilot", "config.json")),
               key_vars=("COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"),
               install="npm i -g @github/copilot"),
    KnownAgent("qwen", "Qwen Code", ("qwen",), ("--acp",),
               credentials=((None, "~/.qwen", "oauth_creds.json"),),
               key_vars=("DASHSCOPE_API_KEY", "OPENAI_API_KEY"),
               install="npm i -g @qwen-code/qwen-code"),
    KnownAgent("goose", "Goose", ("goose",), ("acp",),
               credentials=(("XDG_CONFIG_HOME", "~/.config", "goose/config.yaml"),),
               key_vars=("GOOSE_PROVIDER", "ANTHROPIC_API_KEY", "OPENAI_API_KEY")),
    KnownAgent("cline", "Cline", ("cline",), ("--acp",),
               credentials=((None, "~/.cline", "data/secrets.json"),),
               key_vars=("ANTHROPIC_API_KEY", "OPENAI_API_KEY"),
               install="npm i -g cline"),
    KnownAgent("kimi", "Kimi CLI", ("kimi",), ("acp",),
               credentials=((None, "~/.kimi", "credentials"),),
               key_vars=("MOONSHOT_API_KEY", "KIMI_API_KEY")),
)
KNOWN_NAMES = tuple(a.name for a in KNOWN_AGENTS)


@dataclass(frozen=True)
class Probe:
    """What a version probe gave: exit code (None: timed out or could not start)."""

    returncode: int | None
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    error: str = ""


#: Runs every argv at once and returns one :class:`Probe` each, within ``timeout`` overall.
VersionRunner = Callable[[Sequence[Sequence[str]], float, Mapping[str, str]], list[Probe]]


class HostPort(Protocol):
    def is_executable(self, path: str) -> bool: ...

    def exists(self, path: str) -> bool: ...

    def package_version(self, path: str) -> str | None:
        """The ``version`` of the npm package an executable belongs to, or None."""
        ...


class RealHost:
    def is_executable(self, path: str) -> bool:
        return os.path.isfile(path) and os.access(path, os.X_OK)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def package_version(self, path: str) -> str | None:
        # Some adapters have no --version (claude-agent-acp 0.23 ignores it, codex-acp 0.16
        # rejects it): the package.json above the resolved script says it without a start.
        folder = os.path.dirname(os.path.realpath(path))
        for _ in range(4):
            candidate = os.path.join(folder, "package.json")
            if os.path.isfile(candidate):
                try:
                    import json
                    with open(candidate, encoding="utf-8") as fh:
                        data = json.load(fh)
                except (OSError, ValueError):
                    return None
                version = data.get("version") if isinstance(data, dict) else None
                return version if isinstance(version, str) else None
            folder = os.path.dirname(folder)
        return None


@dataclass(frozen=True)
class AgentSpec:
    """How to start one agent: the discovery name, argv pieces and extra environment."""

    name: str
    title: str
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    configured: bool = False
    known: KnownAgent | None = None
    #: silent_after_s / give_up_after_s from config.toml (the silence watchdog's thresholds)
    timing: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class AgentInfo:
    """One row of ``rio agents`` / ``agents.list``."""

    name: str
    title: str
    found: bool
    path: str | None = None
    args: tuple[str, ...] = ()
    where: str = ""                  # "PATH", "~/.bun/bin", "config" …
    version: str | None = None
    version_error: str | None = None
    signed_in: str = "unknown"       # "yes" (a credential file exists), "no", "unknown"
    credential: str | None = None    # the file that exists (its path only)
    keys_set: tuple[str, ...] = ()   # variable names that are set, never their values
    configured: bool = False         # from [agents.NAME] in config.toml
    env_names: tuple[str, ...] = ()  # names of the configured extra variables
    install: str = ""
    source: str = "builtin"          # builtin, registry, config

    @property
    def argv(self) -> tuple[str, ...]:
        if self.path is None:
            raise AgentError("agent_not_found", f"The agent {self.name!r} is not installed.",
                             self.install_hint())
        return (self.path, *self.args)

    def install_hint(self) -> str:
        how = f"Install it ({self.install})" if self.install else "Install it"
        return (f"{how}, or set its command in config.toml under [agents.{self.name}]; "
                "`rio agents` lists what is found.")

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "title": self.title, "found": self.found,
                "path": self.path, "args": list(self.args), "where": self.where,
                "version": self.version, "version_error": self.version_error,
                "signed_in": self.signed_in, "credential": self.credential,
                "keys_set": list(self.keys_set), "configured": self.configured,
                "env": list(self.env_names), "install": self.install, "source": self.source}


# --------------------------------------------------------------------------- config.toml

_AGENT_KEYS: dict[str, Any] = {"command": str, "args": list, "env": dict, "title": str,
                               "silent_after_s": (int, float), "give_up_after_s": (int, float)}
#: Keys of [agents.NAME] that tune the client (rio.acp.client.AcpSettings), not the command.
TIMING_KEYS = ("silent_after_s", "give_up_after_s")
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def parse_agents_config(text: str, path: Path | None = None) -> dict[str, AgentSpec]:
    """The ``[agents.NAME]`` tables of config.toml. Other sections are not read here."""
    where = str(path or "config.toml")
    tables = parse_toml(text, path).get("agents", {})
    if not isinstance(tables, dict):
        raise ConfigError("invalid", f"{where}: [agents] must hold tables like [agents.NAME].",
                          f"Fix [agents] in {where}.")
    known = {a.name: a for a in KNOWN_AGENTS}
    out: dict[str, AgentSpec] = {}
    for name, table in tables.items():
        section = f"[agents.{name}]"
        if not _NAME_RE.match(name) or not isinstance(table, dict):
            raise ConfigError("invalid", f"{where}: {section} must be a table with a simple "
                              "name (letters, digits, - _ .).", f"Fix {section} in {where}.")
        for key, value in table.items():
            expected = _AGENT_KEYS.get(key)
            if expected is None:
                raise ConfigError("invalid", f"{where}: {section} has unknown key {key!r} "
                                  f"(known: {', '.join(sorted(_AGENT_KEYS))}).",
                                  f"Fix {section} in {where}.")
            if not isinstance(value, expected) or isinstance(value, bool) or (
                    key in TIMING_KEYS and value <= 0):
                what = "positive number of seconds" if key in TIMING_KEYS else \
                    expected.__name__
                raise ConfigError("invalid", f"{where}: {section} {key} must be a "
                                  f"{what}.", f"Fix {section} in {where}.")
        args = table.get("args", [])
        env = table.get("env", {})
        if not all(isinstance(a, str) for a in args) or \
                not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
            raise ConfigError("invalid", f"{where}: {section} args must be strings and env a "
                              "table of strings.", f"Fix {section} in {where}.")
        base = known.get(name)
        command = table.get("command") or (base.commands[0] if base else "")
        if not command:
            raise ConfigError("invalid", f"{where}: {section} needs a command.",
                              f'Add command = "…" to {section} in {where}.')
        out[name] = AgentSpec(
            name, table.get("title") or (base.title if base else name), command,
            tuple(args) if "args" in table or base is None else base.args, dict(env),
            configured=True, known=base,
            timing={k: float(table[k]) for k in TIMING_KEYS if k in table})
    return out


def load_agents_config(config_directory: Path) -> dict[str, AgentSpec]:
    """``[agents.*]`` from ``config_directory/config.toml``; a missing file means none."""
    path = config_directory / "config.toml"
    return parse_agents_config(read_config_text(path), path)


# ------------------------------------------------------------------------------ lookup

def search_dirs(env: Mapping[str, str]) -> list[tuple[str, str]]:
    """(folder, label) to look in, in order: ``PATH``, then the global prefixes."""
    home = env.get("HOME") or os.path.expanduser("~")
    out: list[tuple[str, str]] = [(d, "PATH") for d in env.get("PATH", "").split(os.pathsep) if d]
    extra = []
    for var, sub in (("NPM_CONFIG_PREFIX", "bin"), ("npm_config_prefix", "bin"),
                     ("PNPM_HOME", ""), ("BUN_INSTALL", "bin"), ("VOLTA_HOME", "bin")):
        if env.get(var):
            extra.append(os.path.join(env[var], sub) if sub else env[var])
    extra += [os.path.join(home, p) for p in (
        ".npm-global/bin", ".local/share/pnpm", ".bun/bin", ".volta/bin", ".local/bin",
        ".opencode/bin", ".npm/bin")]
    extra += ["/usr/local/bin", "/opt/homebrew/bin"]
    seen = {d for d, _ in out}
    for d in extra:
        if d not in seen:
            seen.add(d)
            out.append((d, d.replace(home, "~", 1) if d.startswith(home) else d))
    return out


def find_command(command: str, env: Mapping[str, str], host: HostPort) -> tuple[str, str] | None:
    """(path, where) of an executable ``command`` (a name, or a path), or None."""
    if os.sep in command or command.startswith("~"):
        home = env.get("HOME") or os.path.expanduser("~")
        path = os.path.join(home, command[2:]) if command.startswith("~/") else command
        return (path, "config") if host.is_executable(path) else None
    for folder, label in search_dirs(env):
        candidate = os.path.join(folder, command)
        if host.is_executable(candidate):
            return candidate, label
    return None


def _base(var: str | None, default: str, env: Mapping[str, str]) -> str:
    home = env.get("HOME") or os.path.expanduser("~")
    if var and env.get(var):
        return env[var]
    return os.path.join(home, default[2:]) if default.startswith("~/") else default


def credential_hint(agent: KnownAgent | None, env: Mapping[str, str], host: HostPort
                    ) -> tuple[str, str | None]:
    """("yes", path) when one of the agent's credential files exists, ("no", None) when it
    has some and none exists, ("unknown", None) when Rio knows of none."""
    if agent is None or not agent.credentials:
        return "unknown", None
    for var, default, rel in agent.credentials:
        path = os.path.join(_base(var, default, env), rel)
        if host.exists(path):
            return "yes", path
    return "no", None


def keys_set(agent: KnownAgent | None, env: Mapping[str, str]) -> tuple[str, ...]:
    if agent is None:
        return ()
    return tuple(v for v in agent.key_vars if env.get(v))


def parse_version(probe: Probe) -> tuple[str | None, str | None]:
    """(version, None) or (None, why not)."""
    if probe.timed_out:
        return None, "no answer to --version in time"
    if probe.returncode is None:
        return None, probe.error or "could not be started"
    text = (probe.stdout.strip() or probe.stderr.strip())
    found = _VERSION_RE.search(text.splitlines()[0] if text else "")
    if probe.returncode != 0 and not found:
        return None, f"--version exited with {probe.returncode}"
    if not found:
        return None, "no version in its answer"
    return found.group(0), None


def specs(config: Mapping[str, AgentSpec] | None = None,
          extra: Sequence[KnownAgent] = ()) -> list[AgentSpec]:
    """Every agent to look for: the known ones and ``extra`` (the registry's), overridden by
    config, then the ones config adds."""
    config = dict(config or {})
    out = []
    builtin = {a.name for a in KNOWN_AGENTS}
    for agent in (*KNOWN_AGENTS, *(a for a in extra if a.name not in builtin)):
        spec = config.pop(agent.name, None)
        out.append(spec or AgentSpec(agent.name, agent.title, agent.commands[0], agent.args,
                                     known=agent))
    out += sorted(config.values(), key=lambda s: s.name)
    return out


def locate(spec: AgentSpec, env: Mapping[str, str], host: HostPort) -> AgentInfo:
    """Find one agent without starting anything."""
    known = spec.known
    candidates = [spec.command]
    if known is not None and not spec.configured:
        candidates = list(known.commands)
    hit = None
    for command in candidates:
        hit = find_command(command, env, host)
        if hit:
            break
    signed, credential = credential_hint(known, env, host)
    return AgentInfo(
        spec.name, spec.title, hit is not None, hit[0] if hit else None, spec.args,
        hit[1] if hit else "", signed_in=signed, credential=credential,
        keys_set=keys_set(known, env), configured=spec.configured,
        env_names=tuple(sorted(spec.env)), install=known.install if known else "",
        source="config" if spec.configured or known is None else known.source)


def discover(env: Mapping[str, str], host: HostPort, runner: VersionRunner | None,
             config: Mapping[str, AgentSpec] | None = None, *, names: Sequence[str] = (),
             timeout: float = VERSION_TIMEOUT_S, extra: Sequence[KnownAgent] = ()
             ) -> list[AgentInfo]:
    """Every agent (or only ``names``), found or not; versions asked of the found ones at
    once (``runner`` None: not asked). ``extra``: the registry's agents."""
    wanted = [s for s in specs(config, extra) if not names or s.name in names]
    infos = [locate(s, env, host) for s in wanted]
    found = [i for i, info in enumerate(infos) if info.found]
    if runner is not None and found:
        version_args = {s.name: s.known.version_args if s.known else ("--version",)
                        for s in wanted}
        argvs = [[infos[i].path or "", *version_args[infos[i].name]] for i in found]
        probes = runner(argvs, timeout, env)
        for i, probe in zip(found, probes):
            version, why = parse_version(probe)
            if version is None and probe.returncode is not None:
                version = host.package_version(infos[i].path or "")
                why = None if version else why
            infos[i] = replace(infos[i], version=version, version_error=why)
    return infos


def spec_for(name: str, config: Mapping[str, AgentSpec] | None = None,
             extra: Sequence[KnownAgent] = ()) -> AgentSpec:
    """The spec of discovery name ``name``; ``agent.not_configured`` names the choices."""
    for spec in specs(config, extra):
        if spec.name == name:
            return spec
    choices = ", ".join(s.name for s in specs(config, extra))
    raise AgentError("not_configured", f"There is no agent named {name!r}.",
                     f"Use one of {choices}, or add [agents.{name}] to config.toml.")


# ----------------------------------------------------------------- the real version runner

def run_version_probes(argvs: Sequence[Sequence[str]], timeout: float,
                       env: Mapping[str, str]) -> list[Probe]:
    """Start every probe at once (own process group, no stdin, argv lists) and collect them
    within ``timeout`` overall; a probe still running then is killed with its group."""
    started: list[subprocess.Popen[str] | Probe] = []
    for argv in argvs:
        try:
            started.append(subprocess.Popen(
                list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True, errors="replace", env=dict(env),
                start_new_session=True))
        except OSError as exc:
            started.append(Probe(None, error=f"could not be started ({exc.strerror or exc})"))
    deadline = time.monotonic() + timeout
    out: list[Probe] = []
    for item in started:
        if isinstance(item, Probe):
            out.append(item)
            continue
        try:
            stdout, stderr = item.communicate(timeout=max(0.0, deadline - time.monotonic()))
            out.append(Probe(item.returncode, stdout[:4000], stderr[:4000]))
        except subprocess.TimeoutExpired:
            # The deadline is shared: a probe that finished while an earlier one used the
            # time up still counts (communicate(timeout=0) gives up before reading).
            if item.poll() is not None:
                try:
                    stdout, stderr = item.communicate(timeout=1.0)
                    out.append(Probe(item.returncode, stdout[:4000], stderr[:4000]))
                    continue
                except subprocess.TimeoutExpired:
                    pass
            _kill_group(item)
            out.append(Probe(None, timed_out=True))
    return out


def _kill_group(proc: subprocess.Popen[str]) -> None:
    import signal
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.communicate(timeout=2)
    except (subprocess.TimeoutExpired, OSError, ValueError):
        pass


__all__ = [
    "KNOWN_AGENTS",
    "KNOWN_NAMES",
    "VERSION_TIMEOUT_S",
    "AgentInfo",
    "AgentSpec",
    "HostPort",
    "KnownAgent",
    "Probe",
    "RealHost",
    "discover",
    "find_command",
    "load_agents_config",
    "locate",
    "parse_agents_config",
    "parse_version",
    "run_version_probes",
    "search_dirs",
    "spec_for",
    "specs",
]
