"""Sign-in: an agent's ``authMethods`` turned into what the user can do, with no key field.

An agent that is not signed in answers ``-32000 Authentication required`` — on
``session/new`` (codex-acp) or on the first ``session/prompt`` (claude-agent-acp). The client
then reports *sign-in needed* with the agent's own methods:

* ``terminal`` — the exact command to run in a terminal: the agent's own program with the
  method's arguments (``claude-agent-acp --cli auth login``), plus its variables;
* ``agent`` (no type) — an action: Rio calls ``authenticate`` and the agent does the rest
  (Codex's ChatGPT login opens the browser itself);
* ``env_var`` — the variables to set in the user's environment (names only).

Older adapters describe a terminal login in an agent method's ``_meta["terminal-auth"]``
(``{command, args, label}``); that is read as a terminal method too.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

AUTH_REQUIRED = -32000


@dataclass(frozen=True)
class SignInMethod:
    id: str
    name: str
    type: str                               # "terminal", "agent" or "env_var"
    description: str = ""
    command: tuple[str, ...] = ()           # terminal: the argv to run
    env: dict[str, str] = field(default_factory=dict)   # terminal: extra variables
    vars: tuple[str, ...] = ()              # env_var: the variable names
    link: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "name": self.name, "type": self.type,
                               "description": self.description}
        if self.type == "terminal":
            out["command"] = list(self.command)
            out["shell"] = " ".join(
                [*(f"{k}={shlex.quote(v)}" for k, v in self.env.items()),
                 *(shlex.quote(a) for a in self.command)])
            out["env"] = dict(self.env)
        elif self.type == "env_var":
            out["vars"] = list(self.vars)
            if self.link:
                out["link"] = self.link
        return out


class _Named(TypedDict):
    """The fields every :class:`SignInMethod` takes from the SDK's model."""

    id: str
    name: str
    description: str


def sign_in_methods(methods: Sequence[Any], agent_argv: Sequence[str]) -> list[SignInMethod]:
    """The SDK's auth method models (``InitializeResponse.auth_methods``) for the user."""
    out: list[SignInMethod] = []
    for m in methods or ():
        kind = getattr(m, "type", None)
        meta = getattr(m, "field_meta", None) or {}
        base = _Named(id=str(m.id), name=str(m.name or m.id),
                      description=str(getattr(m, "description", "") or ""))
        if kind == "terminal":
            out.append(SignInMethod(**base, type="terminal",
                                    command=(*agent_argv, *(m.args or ())),
                                    env=dict(m.env or {})))
        elif kind == "env_var":
            out.append(SignInMethod(**base, type="env_var",
                                    vars=tuple(v.name for v in m.vars or ()),
                                    link=str(getattr(m, "link", "") or "")))
        elif isinstance(meta.get("terminal-auth"), dict):
            legacy = meta["terminal-auth"]
            # no command of its own: the agent's whole program (``npx pkg``, not ``npx``)
            command = [*([str(legacy["command"])] if legacy.get("command") else agent_argv),
                       *(str(a) for a in legacy.get("args") or ())]
            out.append(SignInMethod(**base, type="terminal", command=tuple(command),
                                    env={str(k): str(v) for k, v in
                                         (legacy.get("env") or {}).items()}))
        else:
            out.append(SignInMethod(**base, type="agent"))
    return out
