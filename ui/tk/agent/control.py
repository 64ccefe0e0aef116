"""The ``ui.agent`` control op (what a user would do in the panel, for scripts and tests) and the
``agent`` part of ``ui.state`` (what the panel shows, where, and which of its controls are cut
off). Reads the panel through :class:`~ui.tk.agent.seams.PanelHost`; acts through its methods.
"""

from __future__ import annotations

import tkinter as tk
from typing import Any

from rio.protocol.errors import ProtocolError
from ui.tk.agent import pickers as agent_pickers
from ui.tk.agent.actions import turn_end_of
from ui.tk.agent.model import Block, Conversation, turn_end_text
from ui.tk.agent.seams import PanelHost, Respond

#: What :meth:`PanelControl.control` returns when it answers later through ``respond``.
DEFER = None
ACTIONS = ("open", "close", "minimise", "send", "type", "approve", "reject", "always",
           "answer", "stop", "undo", "new", "mode", "tick", "agent_setting",
           "sign_in", "review", "revert", "provider")


def _turn_end_text(end: Block | None) -> str | None:
    """What the last end-of-turn card says ("Changed, not saved yet: …", "Undone: …")."""
    if end is None:
        return None
    return turn_end_text(end.data)


def _tool_lines(conv: Conversation | None) -> list[dict[str, Any]]:
    """The tool lines as drawn: one per call (an agent's own line for a call of Rio's MCP
    tools is Rio's line)."""
    return [{"name": b.data.get("name"), "title": b.data.get("title"),
             "status": b.data.get("status"), "summary": b.data.get("summary"),
             "source": b.data.get("source")}
            for b in (conv.blocks if conv else ()) if b.kind == "tool"
            and not b.data.get("hidden")]


def _sign_in_card(conv: Conversation | None) -> dict[str, Any] | None:
    """The last sign-in card as shown: its state and, per method, what it offers."""
    from ui.tk.agent.extras import sign_in_lines
    block = next((b for b in reversed(conv.blocks if conv else ()) if b.kind == "sign_in"),
                 None)
    if block is None:
        return None
    methods = [{"id": m.get("id"), "type": m.get("type") or "agent",
                "text": sign_in_lines(m)[0], "command": sign_in_lines(m)[1]}
               for m in block.data.get("methods") or ()]
    return {"state": block.data.get("state"), "signing": block.data.get("signing"),
            "methods": methods}


class PanelControl:
    """``ui.agent`` and ``ui.state``'s ``agent`` for one panel."""

    def __init__(self, panel: PanelHost) -> None:
        self.panel = panel

    def describe(self) -> dict[str, Any]:
        """The ``agent`` part of ``ui.state``."""
        panel = self.panel
        conv = panel.model.shown
        end = turn_end_of(conv)
        return {"open": panel.is_open, "side": panel.prefs.side, "shown": panel.prefs.show_ai,
                "minimised": panel.is_open and panel.prefs.minimised,
                "strip": self._strip(),
                "caption": self._caption_centre(),
                "conversation": conv.id if conv else None,
                "provider": conv.provider if conv else None,
                "choices": list(panel.providers),
                "state": conv.state if conv else "idle", "status": panel.model.status_text(),
                "status_tip": panel.status_tip.text,
                "messages": conv.messages() if conv else [],
                "blocks": [b.kind for b in conv.blocks if not b.data.get("hidden")] if conv
                else [],
                "pending": conv.pending_list() if conv else [],
                "waiting": panel.model.waiting_count(),
                "marked": sorted(panel.marks.marked),
                "button": "tb_ai" in panel.app.toolbar.children,
                "input": panel.input.get("1.0", "end-1c") if panel.input is not None else "",
                "mode": panel.mode.get() if panel.is_open else None,
                "pickers": agent_pickers.describe(conv),
                "sign_in": _sign_in_card(conv),
                "changed_files": panel.changed_files(),
                "picker_boxes": sorted(panel.agent_boxes) if panel.is_open else [],
                "name_active": panel.prefs.name_active,
                "undo": end.data["undo"] if end else None,
                "turn_end": _turn_end_text(end),
                "chooser": panel.chooser.get() if panel.is_open and panel.chooser is not None
                else None,
                "tools": _tool_lines(conv),
                **self._geometry()}

    def _geometry(self) -> dict[str, Any]:
        """Where the panel is in the window (``geometry``: x, y, width, height, from the
        window's top left), the window's size, and ``cut``: the panel's controls that are not
        whole inside it — hidden, past its edge, or squeezed narrower than they ask (a Stop that
        reads "Sto")."""
        panel = self.panel
        root = panel.app.root
        window = {"width": root.winfo_width(), "height": root.winfo_height()}
        frame = panel.frame
        if frame is None or not frame.winfo_ismapped():
            return {"geometry": None, "window": window, "cut": []}
        fx, fy = frame.winfo_rootx(), frame.winfo_rooty()
        fw, fh = frame.winfo_width(), frame.winfo_height()
        geometry = {"x": fx - root.winfo_rootx(), "y": fy - root.winfo_rooty(),
                    "width": fw, "height": fh}
        if panel.prefs.minimised:
            return {"geometry": geometry, "window": window, "cut": []}
        widgets: dict[str, tk.Misc | None] = {
            "provider_box": panel.provider_box, "stop_button": panel.stop_button,
            "chooser": panel.chooser, "send_button": panel.send_button, "input": panel.input,
            "caption": panel.caption}
        for name in ("mode", "new", "minimise", "dock", "close", "name_active"):
            widgets[name] = self._child(name)
        for pid, box in panel.agent_boxes.items():
            widgets[f"pick_{pid}"] = box
        cut = []
        for name, w in widgets.items():
            if w is None:
                continue
            try:
                x, y = w.winfo_rootx() - fx, w.winfo_rooty() - fy
                width, height = w.winfo_width(), w.winfo_height()
                # a picker may give up width (it shows less of its entry); a button or a tick
                # squeezed narrower than it asks is cut ("Sto")
                picker = w.winfo_class() == "TCombobox" or name in ("input", "caption")
                squeezed = width < (48 if picker else w.winfo_reqwidth() - 1)
                if not w.winfo_ismapped() or x < 0 or y < 0 or x + width > fw or \
                        y + height > fh or squeezed:
                    cut.append(name)
            except Exception:  # noqa: BLE001 -- a widget destroyed meanwhile: not shown
                cut.append(name)
        return {"geometry": geometry, "window": window, "cut": sorted(cut)}

    def _child(self, name: str) -> tk.Misc | None:
        """A named widget of the panel's body, wherever the layout put it."""
        panel = self.panel
        todo: list[tk.Misc] = [panel.body] if panel.body is not None else []
        while todo:
            w = todo.pop()
            for child in w.winfo_children():
                if child.winfo_name() == name:
                    return child
                todo.append(child)
        return None

    def _caption_centre(self) -> list[int] | None:
        """Where the panel's caption is on the screen (for a test that drags it)."""
        panel = self.panel
        cap = panel.caption if panel.frame is not None else None
        try:
            if cap is None or not cap.winfo_ismapped():
                return None
            return [cap.winfo_rootx() + cap.winfo_width() // 2,
                    cap.winfo_rooty() + cap.winfo_height() // 2]
        except Exception:  # noqa: BLE001 -- a destroyed caption: none to report
            return None

    def _strip(self) -> dict[str, str] | None:
        """What the minimised strip shows: the state dot's colour and the count of questions."""
        panel = self.panel
        strip, count = panel.strip, panel.strip_count
        if not (panel.is_open and panel.prefs.minimised) or strip is None or count is None:
            return None
        dot = strip.children["dot"]
        assert isinstance(dot, tk.Canvas)
        fill = dot.itemcget("dot", "fill")  # type: ignore[no-untyped-call]  # typeshed: unannotated
        return {"dot": str(fill), "count": str(count.cget("text"))}

    def control(self, args: dict[str, Any], respond: Respond) -> dict[str, Any] | None:
        """``ui.agent``: what a user would do in the panel. Returns the result, or DEFER."""
        panel = self.panel
        action = args["action"]
        if action not in ACTIONS:
            raise ProtocolError("bad_args", f"ui.agent: unknown action {action!r}.",
                                f"Use one of {', '.join(ACTIONS)}.")
        if action != "close" and not panel.prefs.show_ai:
            raise ProtocolError("bad_args", "The AI features are turned off.",
                                "Turn them on in Edit → AI Preferences….")
        if action == "open":
            panel.open(side=args.get("side"))
            if args.get("conversation"):
                cid = str(args["conversation"])
                panel.show_conversation(cid, then=lambda: respond(self.describe()),
                                        fail=respond)
                return DEFER
            return self.describe()
        if action == "close":
            panel.close()
            return self.describe()
        if action == "minimise":
            panel.open()
            panel.minimise()
            return self.describe()
        if action == "send":
            text = str(args.get("text") or "")
            if not text.strip():
                raise ProtocolError("bad_args", "ui.agent send needs a non-empty text.",
                                    'Pass {"action": "send", "text": "…"}.')
            if not panel.is_open:
                panel.open()
            panel.send(text, respond)
        elif action == "type":
            # Typed into the panel's input and sent as Enter would (the ticks apply).
            if not panel.is_open:
                panel.open()
            box = panel.input
            if box is not None:
                box.delete("1.0", "end")
                box.insert("1.0", str(args.get("text") or ""))
            panel.send_input()
            return {"typed": True}
        elif action == "answer":
            proposal = args.get("proposal")
            panel.answer_permission(None if proposal is None else str(proposal),
                                    args.get("option"), respond)
        elif action in ("approve", "reject", "always"):
            proposal = args.get("proposal")
            panel.answer(None if proposal is None else str(proposal), action, respond)
        elif action == "stop":
            panel.stop(respond)
        elif action == "undo":
            panel.undo_turn(turn_end_of(panel.model.shown), respond)
        elif action == "mode":
            if not panel.is_open:
                panel.open()
            panel.set_mode(str(args.get("mode") or ""), respond)
        elif action == "agent_setting":
            # A pick in the ACP agent's own row: {picker: "mode" or an option id, value}.
            if not panel.is_open:
                panel.open()
            picker = str(args.get("picker") or "mode")
            picked = panel.agent_boxes.get(picker)
            if picked is None:
                raise ProtocolError("bad_args", f"The agent offers no {picker!r} picker here.",
                                    "Look at ui.state agent.pickers.")
            value = str(args.get("value") or "")
            choices: list[tuple[str, str]] = next(
                (p["choices"] for p in agent_pickers.pickers(panel.model.shown)
                 if p["id"] == picker), [])
            picked.set(dict(choices).get(value, value))
            panel.choose_agent_setting(picker, value, respond)
        elif action == "sign_in":
            # The sign-in card's button: option = the method's id (default: the first).
            panel.sign_in(None if args.get("option") is None else str(args["option"]),
                          respond)
        elif action in ("review", "revert"):
            # The files-changed card's buttons: path = the file's row (default: the first).
            path = None if args.get("path") is None else str(args["path"])
            (panel.review_file if action == "review" else panel.revert_file)(path, respond)
        elif action == "tick":
            # The "Name the active file" tick under the input.
            if not panel.is_open:
                panel.open()
            tick = panel.name_active
            if tick is not None:
                tick.set(bool(args.get("on")))
                panel.set_prefs(name_active=tick.get())
            return self.describe()
        elif action == "new":
            panel.open()
            panel.new_conversation(lambda c: respond({"conversation": c.id}), respond)
        elif action == "provider":
            # A pick in the Provider picker, as a user makes it (value: the entry, e.g.
            # "fake (ACP)"): with a conversation shown, a new one with that agent.
            panel.open()
            value = str(args.get("value") or "")
            if value not in panel.providers:
                raise ProtocolError("bad_args", f"The Provider picker offers no {value!r}.",
                                    f"Pick one of {', '.join(panel.providers)}.")
            panel.provider.set(value)
            panel.provider_chosen(respond)
        return DEFER
