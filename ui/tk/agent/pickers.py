"""An ACP agent's own mode and model pickers in the panel's header, where the agent offers them.

The session publishes what the agent offers — ``agent.modes {current, available}`` and
``agent.config {options}`` (its config options as it sent them: a model picker is a
``select`` option) — from ``session/new``/``session/load`` and each time they change
(rio/acp/updates.py). The panel keeps the latest on the conversation and draws one row under
the conversation picker: *Agent mode* and a picker per ``select`` option (e.g. *Model*). A pick
sends ``agent.set_mode``/``agent.set_config``; the core hands it to the conversation's
session, which asks the agent (``session/set_mode``/``session/set_config_option``) and
publishes its answer, which redraws the row. These are the agent's own settings; the
approval gate's mode (review, auto_buffer, allow_all) is the *Mode* picker above.

Display-free (tests/desktop/agent/test_agent_model_acp.py); the row's widgets are
:class:`ui.tk.agent.picker_row.PickerRow`, which the panel holds as ``agent_pickers``.
"""

from __future__ import annotations

from typing import Any, Mapping

from ui.tk.agent.blocks import Blocks, Change

TOPICS = ("agent.modes", "agent.config")


def apply(conv: Blocks, topic: str, data: Mapping[str, Any]) -> list[Change]:
    """Keep what the agent offers on the conversation; no block (the header shows it)."""
    if topic == "agent.modes":
        available = [{"id": str(m.get("id")), "name": str(m.get("name") or m.get("id"))}
                     for m in data.get("available") or () if isinstance(m, Mapping)
                     and m.get("id")]
        conv.agent_modes = {"current": data.get("current"), "available": available} \
            if available else {}
    else:
        conv.agent_config = [dict(o) for o in data.get("options") or ()
                             if isinstance(o, Mapping) and o.get("id")]
    return []


def select_choices(option: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``[(value, name)]`` of a ``select`` config option, its groups flattened."""
    out: list[tuple[str, str]] = []
    for item in option.get("options") or ():
        if not isinstance(item, Mapping):
            continue
        if "value" in item:
            out.append((str(item["value"]), str(item.get("name") or item["value"])))
        else:   # a group: {group, name, options: [...]}
            out += select_choices(item)
    return out


#: The agent's own mode is named so in the row (the gate's is *Mode* in the header).
AGENT_MODE = "Agent mode"


def _is_mode_option(option: Mapping[str, Any], modes: Mapping[str, Any]) -> bool:
    """A config option that *is* the agent's mode: ACP's ``category: mode`` (claude's
    *Mode*, codex's *Approval Preset*), or one offering exactly the modes' ids."""
    if option.get("category") == "mode":
        return True
    ids = {m["id"] for m in modes.get("available") or ()}
    return bool(ids) and {v for v, _ in select_choices(option)} == ids


def pickers(conv: Blocks | None) -> list[dict[str, Any]]:
    """What the row shows for a conversation: ``[{id, label, current, choices: [(value,
    name)]}]`` — ``id`` is ``mode`` for the agent's mode, else the config option's id.

    An agent that offers its mode both ways — ``session/set_mode``'s modes and a config
    option of category ``mode`` (claude-agent-acp, codex-acp) — gets one picker for it, the
    config option (ACP: a client that reads config options uses them over the modes), named
    by the agent ("Approval Preset"), or *Agent mode* where the agent calls it just "Mode"."""
    if conv is None:
        return []
    out = []
    modes = getattr(conv, "agent_modes", None) or {}
    options = [o for o in getattr(conv, "agent_config", None) or ()
               if o.get("type") == "select" and select_choices(o)]
    mode_option = next((o for o in options if _is_mode_option(o, modes)), None)
    if modes.get("available") and mode_option is None:
        out.append({"id": "mode", "label": AGENT_MODE, "current": modes.get("current"),
                    "choices": [(m["id"], m["name"]) for m in modes["available"]]})
    for option in options:
        label = str(option.get("name") or option["id"])
        if option is mode_option and label.strip().lower() in ("mode", "modes", ""):
            label = AGENT_MODE
        out.append({"id": str(option["id"]), "label": label, "config": True,
                    "current": option.get("currentValue", option.get("current_value")),
                    "choices": select_choices(option)})
    return out


def describe(conv: Blocks | None) -> list[dict[str, Any]]:
    """``ui.state``'s ``agent.pickers``: ``[{id, label, current, values}]``."""
    return [{"id": p["id"], "label": p["label"], "current": p["current"],
             "values": [v for v, _ in p["choices"]]} for p in pickers(conv)]
