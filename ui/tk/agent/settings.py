"""The agent panel's settings, display-free: its preferences (the user's, in ``ui.json``), the
conversation it showed last (the project's, in its state folder), and what its picker offers
(the configured providers, installed plug-ins, and the ACP agents found).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any, Iterable, Mapping

from ui.tk.prefs.store import read_json_object, read_ui, update_ui, write_state

log = logging.getLogger("rio.ui.agent")


# --- preferences -------------------------------------------------------------------------------

@dataclass(frozen=True)
class PanelPrefs:
    """The panel's preferences, stored with the others in ``ui.json`` as ``agent_*`` keys."""

    show_ai: bool = True          # off hides every AI element
    show_button: bool = True      # the AI button at the toolbar's right end
    side: str = "right"           # "right" | "left"
    width: int = 380
    open: bool = False            # the panel was open when the window last closed
    minimised: bool = False       # folded to the 30 px strip
    name_active: bool = False     # say which file is active (and the cursor's line) in a message

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "PanelPrefs":
        d = cls()
        out: dict[str, Any] = {}
        for f in fields(cls):
            value = data.get(f"agent_{f.name}", getattr(d, f.name))
            default = getattr(d, f.name)
            if type(value) is not type(default):
                value = default
            out[f.name] = value
        if out["side"] not in ("left", "right"):
            out["side"] = d.side
        out["width"] = max(220, min(1200, out["width"]))
        return cls(**out)

    def to_json(self) -> dict[str, Any]:
        return {f"agent_{k}": v for k, v in asdict(self).items()}


def load_panel_prefs(path: Path) -> PanelPrefs:
    return PanelPrefs.from_json(read_ui(path))


def save_panel_prefs(path: Path, prefs: PanelPrefs) -> None:
    """Merge the ``agent_*`` keys into the preferences file through the UI's one writer
    (ui/tk/prefs/store.py: atomic, one read-merge-write), the editor's keys kept."""
    update_ui(prefs.to_json(), path)


def load_last_shown(path: Path | None) -> str | None:
    """The conversation the panel showed last in this project (its state folder), if any."""
    value = read_json_object(path).get("conversation") if path else None
    return str(value) if value else None


def save_last_shown(path: Path | None, cid: str) -> None:
    if path is None or load_last_shown(path) == cid:
        return
    try:
        write_state(path, {"conversation": cid})
    except OSError as exc:
        log.warning("could not remember the shown conversation: %s", exc)


def provider_names() -> tuple[str, list[str]]:
    """The configured default provider and every provider the picker offers: the configured
    ones and the installed plug-ins (entry point names only; nothing is imported)."""
    import importlib.metadata

    from rio.agent.config import load_agent_config
    from rio.protocol.errors import RioError
    default, names = "anthropic", ["anthropic", "openai"]
    try:
        cfg = load_agent_config()
        default, names = cfg.provider, list(cfg.providers)
    except RioError as err:
        log.warning("agent config: %s", err.message)
    try:
        for ep in importlib.metadata.entry_points(group="rio.providers"):
            if ep.name not in names:
                names.append(ep.name)
    except Exception:  # broken metadata must not cost the panel
        log.exception("provider discovery")
    if default not in names:
        names.insert(0, default)
    return default, names


ACP_SUFFIX = " (ACP)"


def picker_entries(providers: list[str], agents: Iterable[Mapping[str, Any]]) -> list[str]:
    """What the panel's picker offers: the API providers, then the ACP agents found on this
    machine (``agents.list``), marked "(ACP)". A conversation does not care which kind."""
    found = [str(a.get("name")) for a in agents if a.get("found") and a.get("name")]
    return list(providers) + [f"{name}{ACP_SUFFIX}" for name in found
                              if f"{name}{ACP_SUFFIX}" not in providers]


def new_conversation_args(choice: str, default_provider: str) -> dict[str, str]:
    """``agent.new``'s arguments for a picker entry: ``{agent}`` for an ACP agent,
    ``{provider}`` for another provider than the configured one, else nothing."""
    if choice.endswith(ACP_SUFFIX):
        return {"agent": choice[:-len(ACP_SUFFIX)]}
    return {"provider": choice} if choice and choice != default_provider else {}


#: A conversation's title in the picker is cut here (the store keeps 60 characters).
TITLE_SHOWN = 60


def conversation_labels(listing: Iterable[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """``[(label, conversation id)]`` for the conversation picker: who answers it first (so
    a cut label still names the agent), then its title — ``claude (ACP) · Convert the
    temperatures``. Labels that would be the same are told apart by when each was last
    used, then by id: every entry of the picker is one conversation."""
    import time

    from ui.tk.agent.model import who
    rows = []
    for c in listing:
        title = " ".join(str(c.get("title") or "New conversation").split())
        title = title if len(title) <= TITLE_SHOWN else title[:TITLE_SHOWN - 1] + "…"
        rows.append((f"{who(c) or '?'} · {title}", str(c.get("conversation")), c.get("updated")))
    counts: dict[str, int] = {}
    for label, _, _ in rows:
        counts[label] = counts.get(label, 0) + 1
    out: list[tuple[str, str]] = []
    for label, cid, updated in rows:
        if counts[label] > 1 and isinstance(updated, (int, float)) and updated > 0:
            label += " · " + time.strftime("%d %b %H:%M", time.localtime(updated))
        out.append((label, cid))
    seen: dict[str, int] = {}
    for label, _ in out:
        seen[label] = seen.get(label, 0) + 1
    return [(f"{label} [{cid[:6]}]" if seen[label] > 1 else label, cid) for label, cid in out]
