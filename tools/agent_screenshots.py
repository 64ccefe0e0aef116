"""Make the agent panel's screenshots (docs/agent-chat.md, the README) from the running app.

    python tools/agent_screenshots.py --out DIR     # write the PNGs into DIR
    python tools/agent_screenshots.py --docs        # retake docs/screenshots/agent-*.png
    python tools/agent_screenshots.py               # into a new temporary folder (printed)

The same way as tools/screenshots.py (its own Xvfb, a demo project, a real desktop instance
driven through the ``ui.*`` ops): every picture is the real window. What answers is scripted,
never a real model or a real key — the loopback Anthropic server of the tests
(tests/fakes/model_servers.py) and the fake ACP agent (tests/fakes/acp_agent.py), installed as
``[agents.demo]`` (wants a sign-in) and ``[agents.helper]`` (offers modes and a model, and edits
a file behind Rio's back). Pictures: a conversation with a diff card waiting
(``agent-panel.png``), after the approval (``agent-panel-after.png``), the minimised strip
with a question waiting (``agent-panel-minimised.png``), the sign-in view
(``agent-sign-in.png``), and an ACP agent's pickers with the files-changed card, Review
unfolded (``agent-changed-files.png``).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tools"))

import screenshots as base  # noqa: E402  (tools/screenshots.py: Xvfb, Desktop, demo files)

from tests.fakes.model_servers import (  # noqa: E402
    FakeModelServer,
    anthropic_text,
    anthropic_tool_use,
)

OLD = "    return 13.12 + 0.6215 * r.celsius - 11.37 * v + 0.3965 * r.celsius * v\n"
NEW = ("    chill = 13.12 + 0.6215 * r.celsius - 11.37 * v + 0.3965 * r.celsius * v\n"
       "    return round(chill, 1)\n")


def agent(desk: base.Desktop, pred, what: str, timeout: float = 60) -> dict:
    box: dict = {}

    def ok() -> bool:
        s = desk.try_call("ui.state")
        box["a"] = s.get("agent") if s else None
        return bool(box["a"]) and bool(pred(box["a"]))
    try:
        desk.wait(ok, timeout, what)
    except SystemExit:
        print(json.dumps(box.get("a"), indent=1)[:3000], file=sys.stderr)
        raise
    return box["a"]


def install_agents(folder: Path, bin_dir: Path, scripts: dict[str, Path]) -> None:
    """``[agents.NAME]`` for each script: a small launcher named ``NAME-agent`` running the
    fake ACP agent (so a terminal sign-in reads ``demo-agent --login``, not python's path)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    lines = []
    for name, script in scripts.items():
        launcher = bin_dir / f"{name}-agent"
        launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" '
                            f'"{REPO / "tests" / "fakes" / "acp_agent.py"}" "{script}" "$@"\n')
        launcher.chmod(launcher.stat().st_mode | stat.S_IXUSR)
        lines.append(f'[agents.{name}]\ncommand = "{launcher}"\nargs = []\n')
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.toml").write_text("\n".join(lines))


def main(argv: list[str] | None = None) -> int:
    out = base.output_folder(argv)
    for tool in ("Xvfb", "import"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is needed (Debian: apt-get install xvfb imagemagick)")
    out.mkdir(parents=True, exist_ok=True)
    print(f"writing screenshots into {out}")
    xvfb, display = base.start_xvfb()
    tmp = Path(tempfile.mkdtemp(prefix="rio-shots-"))
    project = tmp / "station"
    project.mkdir()
    (project / "forecast.py").write_text(base.FORECAST)
    (project / "report.py").write_text(base.REPORT)
    (project / "README.md").write_text(base.README)
    sign_in = tmp / "demo.json"
    sign_in.write_text(json.dumps({"auth": "new_session", "auth_methods": [
        {"id": "browser", "name": "Log in with your browser",
         "description": "the agent opens the sign-in page"},
        {"id": "terminal", "name": "Log in in a terminal", "type": "terminal",
         "args": ["--login"]},
        {"id": "key", "name": "Use an API key", "type": "env_var", "vars": ["DEMO_API_KEY"]}]}))
    helper = tmp / "helper.json"
    helper.write_text(json.dumps({
        "modes": {"current": "ask", "available": ["ask", "code", "plan"]},
        "turns": [[{"plan": ["read report.py", "tidy the f-string"]},
                   {"write_disk": {"path": str(project / "report.py"), "content":
                                   base.REPORT.replace("feels like", "feels like about")}},
                   {"text": "I tidied `report.py` with my own tools."}]]}))
    server = FakeModelServer()
    server.__enter__()
    desk = base.Desktop(project, tmp, display, out)
    desk.env.update({"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "demo-not-a-key",
                     "PATH": f"{tmp / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"})
    install_agents(Path(desk.env["RIO_CONFIG_DIR"]), tmp / "bin",
                   {"demo": sign_in, "helper": helper})
    try:
        desk.start(str(project / "forecast.py"))
        desk.wait_ready()
        desk.call("ui.agent", {"action": "open"})
        cid = desk.call("agent.new", {"title": "Round feels_like to one decimal"})
        cid = cid["conversation"]
        desk.call("ui.agent", {"action": "open", "conversation": cid})
        server.push(
            anthropic_tool_use("toolu_1", "fs_read", {"path": "forecast.py"}, text=(
                "## Plan\nI'll read `forecast.py` first. Then:\n- round the **wind chill** "
                "to one decimal\n- keep `summary` as it is\n")),
            anthropic_tool_use("toolu_2", "propose_edit", {
                "path": "forecast.py", "old_text": OLD, "new_text": NEW},
                text="The formula is right; only the rounding is missing:"),
            anthropic_text("Done: `feels_like` now rounds to one decimal."))
        desk.call("ui.agent", {"action": "send", "text": "Round feels_like to one decimal"})
        agent(desk, lambda a: a["pending"], "the proposal")
        desk.shot("agent-panel.png")

        desk.call("ui.agent", {"action": "approve"})
        agent(desk, lambda a: a["state"] == "idle" and a["undo"] == "available", "the turn")
        desk.shot("agent-panel-after.png")

        server.push(anthropic_tool_use("toolu_3", "propose_edit", {
            "path": "forecast.py", "old_text": "def summary(readings: list[Reading]) -> str:\n",
            "new_text": "def summary(readings: list[Reading]) -> str:\n"
                        '    """Low, high and mean of the day."""\n'},
            text="A docstring for `summary`:"), anthropic_text("Left as it was."))
        desk.call("ui.agent", {"action": "send", "text": "Document summary"})
        agent(desk, lambda a: a["pending"], "the second proposal")
        desk.call("ui.agent", {"action": "minimise"})
        agent(desk, lambda a: a["strip"] and a["strip"]["count"] == "1", "the strip")
        desk.shot("agent-panel-minimised.png")
        desk.call("ui.agent", {"action": "open"})
        desk.call("ui.agent", {"action": "reject"})
        agent(desk, lambda a: a["state"] == "idle", "the rejected turn")

        demo = desk.call("agent.new", {"agent": "demo"})["conversation"]
        desk.call("ui.agent", {"action": "open", "conversation": demo})
        desk.call("ui.agent", {"action": "send", "text": "Explain morning_report"})
        agent(desk, lambda a: a["sign_in"] and a["state"] != "thinking", "the sign-in card",
              120)
        desk.shot("agent-sign-in.png")

        other = desk.call("agent.new", {"agent": "helper"})["conversation"]
        desk.call("ui.agent", {"action": "open", "conversation": other})
        desk.call("ui.agent", {"action": "send", "text": "Tidy report.py"})
        agent(desk, lambda a: a["state"] == "idle" and a["changed_files"], "the changed files",
              120)
        desk.call("ui.agent", {"action": "review", "path": "report.py"})
        time.sleep(0.5)           # the tab loads; the card unfolds its diff
        desk.shot("agent-changed-files.png")
    finally:
        desk.stop()
        server.__exit__(None, None, None)
        xvfb.terminate()
        xvfb.wait(5)
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
