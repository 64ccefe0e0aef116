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

The first half is display-free (tests/test_agent_model.py); Tk is imported by the widgets only.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

TOPICS = ("agent.modes", "agent.config")


def apply(conv: Any, topic: str, data: Mapping[str, Any]) -> list[tuple]:
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


def pickers(conv: Any) -> list[dict[str, Any]]:
    """What the row shows for a conversation: ``[{id, label, current, choices: [(value,
    name)]}]`` — ``id`` is ``mode`` for the agent's mode, else the config option's id."""
    if conv is None:
        return []
    out = []
    modes = getattr(conv, "agent_modes", None) or {}
    if modes.get("available"):
        out.append({"id": "mode", "label": "Agent mode", "current": modes.get("current"),
                    "choices": [(m["id"], m["name"]) for m in modes["available"]]})
    for option in getattr(conv, "agent_config", None) or ():
        if option.get("type") != "select":
            continue
        choices = select_choices(option)
        if choices:
            out.append({"id": str(option["id"]), "label": str(option.get("name") or
                                                                option["id"]),
                        "current": option.get("currentValue", option.get("current_value")),
                        "choices": choices})
    return out


def describe(conv: Any) -> list[dict[str, Any]]:
    """``ui.state``'s ``agent.pickers``: ``[{id, label, current, values}]``."""
    return [{"id": p["id"], "label": p["label"], "current": p["current"],
             "values": [v for v, _ in p["choices"]]} for p in pickers(conv)]


# --- widgets -----------------------------------------------------------------------------------

Respond = Callable[[Any], None]


def sync(panel: Any) -> None:
    """Redraw the row when what the shown conversation offers changed; hide it when nothing."""
    row = getattr(panel, "agent_row", None)
    if row is None:
        return
    shown = pickers(panel.model.shown)
    key = repr(shown)
    if key == getattr(panel, "_pickers_key", None):
        return
    panel._pickers_key = key
    from tkinter import ttk
    for w in row.winfo_children():
        w.destroy()
    panel.agent_boxes = {}
    if not shown:
        row.pack_forget()
        return
    for p in shown:
        names = [name for _, name in p["choices"]]
        ttk.Label(row, text=f"{p['label']}:").pack(side="left")
        box = ttk.Combobox(row, values=names, width=max(6, min(14, max(map(len, names)))),
                           state="readonly", name=f"pick_{p['id']}".lower())
        current = next((name for value, name in p["choices"] if value == str(p["current"])),
                       "")
        box.set(current)
        box.pack(side="left", padx=(3, 6))
        box.bind("<<ComboboxSelected>>", lambda e, p=p, box=box: choose(
            panel, p["id"], dict((n, v) for v, n in p["choices"]).get(box.get(), box.get())))
        panel.agent_boxes[p["id"]] = box
    row.pack(side="top", fill="x", after=panel.conv_row)


def choose(panel: Any, picker: str, value: Any, respond: Respond | None = None) -> None:
    """A pick in the row (or ``ui.agent agent_setting``): the agent's mode or option."""
    conv = panel.model.shown
    if conv is None:
        if respond is not None:
            from rio.protocol.errors import ProtocolError
            respond(ProtocolError("bad_args", "No conversation is shown.",
                                  "Open an ACP agent's conversation first."))
        return
    if picker == "mode":
        op, args = "agent.set_mode", {"conversation": conv.id, "mode": str(value)}
    else:
        op, args = "agent.set_config", {"conversation": conv.id, "option": picker,
                                        "value": value}

    def done(result: Any) -> None:
        if respond is not None:
            respond(result)

    def failed(err: Any) -> None:
        panel._pickers_key = None       # the row goes back to what the agent said last
        sync(panel)
        panel._panel_error(conv, err)
        if respond is not None:
            respond(err)
    panel.request(op, args, done, failed)
