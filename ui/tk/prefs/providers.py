"""Edit → AI Preferences…: the *Model providers* box — each provider's endpoint and model.

They are config.toml's ``[providers.NAME] endpoint`` and ``model`` (docs/agent.md §2), the
file the instance reads at every turn: a change applies from the next message on, for the
desktop's conversations and `rio chat`'s alike. The box shows what the file sets (empty: the
default, named beside it), checks what is typed (a usable URL; a model's one-word name:
:mod:`rio.agent.config_edit`) and writes only the lines it changed; a bad value keeps the
dialog open and says which one. An environment variable that moves an endpoint
(``ANTHROPIC_BASE_URL``, ``OPENAI_BASE_URL``) wins over the file, and the box says so. A window
on a remote instance (``rio --connect``) cannot reach that instance's file: the box says where
to set them instead.
"""

from __future__ import annotations

import tkinter as tk
from tkinter import ttk
from typing import Protocol

from rio.agent.config_edit import (
    ProviderForm,
    check_endpoint,
    check_model,
    config_path,
    provider_forms,
)
from rio.protocol.errors import RioError
from ui.tk.prefs.store import save_providers
from ui.tk.widgets.seams import Themed

#: How many providers the box shows at most (the built-in two, then config.toml's own).
SHOWN = 6


class ProvidersHost(Themed, Protocol):
    """What the box uses of the window: the look, and whether it shows a remote instance
    (whose providers are the server's config.toml, not this machine's)."""

    @property
    def remote(self) -> str | None: ...


class ProvidersBox:
    """The providers' rows in ``parent``; ``fields`` are its ``ui.dialog_answer`` fields
    (``<provider>_endpoint``, ``<provider>_model``)."""

    def __init__(self, parent: ttk.Frame, top: tk.Toplevel, app: ProvidersHost):
        self.top = top
        self.error = tk.StringVar(top, "")
        self.fields: dict[str, tk.StringVar] = {}
        self.forms: list[ProviderForm] = []
        box = ttk.LabelFrame(parent, text=" Model providers ", padding=8)
        box.pack(side="top", fill="x", pady=(8, 0))
        self.box = box
        muted = app.theme.disabled_fg
        if app.remote:
            ttk.Label(box, text="This window shows a remote instance: set its providers in "
                                "the server's config.toml\n([providers.NAME] endpoint, model).",
                      foreground=muted, justify="left").pack(anchor="w")
            return
        try:
            self.forms = provider_forms()[:SHOWN]
        except RioError as err:
            ttk.Label(box, text=f"{err.message} {err.next}", foreground="#c00000",
                      wraplength=420, justify="left").pack(anchor="w")
            return
        grid = ttk.Frame(box)
        grid.pack(side="top", fill="x")
        ttk.Label(grid, text="Endpoint").grid(row=0, column=1, sticky="w", padx=(6, 0))
        ttk.Label(grid, text="Model").grid(row=0, column=2, sticky="w", padx=(6, 0))
        row = 1
        for form in self.forms:
            endpoint = tk.StringVar(top, form.endpoint)
            model = tk.StringVar(top, form.model)
            self.fields[f"{form.name}_endpoint"] = endpoint
            self.fields[f"{form.name}_model"] = model
            ttk.Label(grid, text=form.name.title() if form.name != "openai" else
                      "OpenAI-compatible").grid(row=row, column=0, sticky="w")
            ttk.Entry(grid, textvariable=endpoint, width=34,
                      name=f"{form.name}_endpoint").grid(row=row, column=1, sticky="ew",
                                                         padx=(6, 0), pady=1)
            ttk.Entry(grid, textvariable=model, width=20,
                      name=f"{form.name}_model").grid(row=row, column=2, sticky="ew",
                                                      padx=(6, 0), pady=1)
            row += 1
            hint = _hint(form)
            if hint:
                ttk.Label(grid, text=hint, foreground=muted, wraplength=420,
                          justify="left").grid(row=row, column=1, columnspan=2, sticky="w",
                                               padx=(6, 0))
                row += 1
        ttk.Label(box, text=f"Saved in {config_path()}; used from the next message on.",
                  foreground=muted, wraplength=440, justify="left").pack(anchor="w",
                                                                          pady=(4, 0))
        ttk.Label(box, textvariable=self.error, foreground="#c00000", wraplength=440,
                  justify="left").pack(anchor="w")

    def changes(self) -> dict[str, dict[str, str]] | None:
        """What was changed, checked: ``{provider: {endpoint?, model?}}``; None (and the
        reason shown) when a value is not usable."""
        found: dict[str, dict[str, str]] = {}
        try:
            for form in self.forms:
                endpoint = check_endpoint(form.name, self.fields[f"{form.name}_endpoint"].get())
                model = check_model(form.name, self.fields[f"{form.name}_model"].get())
                changed = {k: v for k, v, was in (("endpoint", endpoint, form.endpoint),
                                                  ("model", model, form.model)) if v != was}
                if changed:
                    found[form.name] = changed
        except ValueError as exc:
            self.error.set(str(exc))
            return None
        self.error.set("")
        return found

    def save(self, changes: dict[str, dict[str, str]]) -> bool:
        """Write ``changes`` to config.toml; False (and why, shown) when it could not be."""
        if not changes:
            return True
        try:
            save_providers(changes)
        except RioError as err:
            self.error.set(f"{err.message} {err.next}")
            return False
        except OSError as exc:
            self.error.set(f"config.toml was not saved: {exc.strerror or exc}.")
            return False
        return True


def _hint(form: ProviderForm) -> str:
    parts = []
    if form.default_endpoint or form.default_model:
        parts.append("empty = the default: " + ", ".join(
            v for v in (form.default_endpoint, form.default_model) if v))
    if form.env_var and form.env_value:
        parts.append(f"{form.env_var} is set ({form.env_value}) and wins over this endpoint")
    return "; ".join(parts)
