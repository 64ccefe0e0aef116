"""README.md's test command passes on a fresh Debian machine (issue 18, point 17): it installs
what the tests need itself (tools/test-deps.sh), .ci/run runs exactly that command and installs
nothing of its own, every system command a test runs is in the script's table, and a test that
needs a font picks one that is there — the font test passes with Terminus gone."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import REPO

SCRIPT = REPO / "tools" / "test-deps.sh"
#: Commands of opt-in tests that skip, saying why, when the command is missing (real ACP
#: agents need node and npm packages; the image build needs podman and a local base image).
OPT_IN = {"node", "npm", "podman"}
#: In every Debian install (its Essential packages), or not a system package at all: the
#: test's own interpreter, Rio.
NOT_SYSTEM = {sys.executable, "python", "python3", "rio", "bash", "sh", "kill", "true", "env",
              "sed", "grep", "id", "tr", "cat", "sleep"}


def readme_test_command() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    found = re.findall(r"^    (.*pip install -e .*pytest.*)$", text, re.MULTILINE)
    assert found, "README.md has no test command"
    return found[0]


def table() -> dict[str, tuple[str, str, str]]:
    """tools/test-deps.sh's table: what → (kind, package, needed/optional)."""
    text = SCRIPT.read_text(encoding="utf-8")
    block = text.split("NEEDS='", 1)[1].split("'", 1)[0]
    rows = {}
    for line in block.splitlines():
        kind, what, package, level, _why = line.split("|", 4)
        rows[what] = (kind, package, level)
    return rows


def test_ci_runs_readmes_command_which_installs_what_the_tests_need():
    command = readme_test_command()
    assert command.startswith("bash tools/test-deps.sh && "), command
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    # .ci/run finds the same line and runs it as it is …
    pattern = re.search(r"sed -n '(s/.*?/p)' README.md", ci)
    assert pattern is not None, "the .ci/run line that reads README's command moved"
    done = subprocess.run(["sed", "-n", pattern.group(1), "README.md"], cwd=REPO,
                          capture_output=True, text=True, timeout=10)
    assert done.stdout.splitlines()[0] == command
    assert 'bash -c "$TEST_CMD"' in ci
    # … and installs nothing itself, so a green CI cannot hide a step the README lacks.
    assert "apt-get" not in ci


_WHICH = re.compile(r"""shutil\.which\(\s*["']([^"']+)["']""")
_RUN = re.compile(r"""subprocess\.(?:run|Popen|check_output|check_call|call)\(\s*\[\s*["']([^"']+)["']""")


def _commands_tests_run() -> set[str]:
    """Every command a test module names literally: ``shutil.which("x")`` and the first item
    of a list literal handed to subprocess."""
    names: set[str] = set()
    for path in sorted((REPO / "tests").rglob("*.py")):
        if path.name == Path(__file__).name:
            continue   # its own docstrings name made-up commands
        text = path.read_text(encoding="utf-8")
        names.update(_WHICH.findall(text))
        names.update(_RUN.findall(text))
    return names


def test_every_command_the_tests_run_is_installed_by_the_script():
    rows = table()
    commands = {what for what, (kind, _, _) in rows.items() if kind == "command"}
    unnamed = sorted(_commands_tests_run() - commands - OPT_IN - NOT_SYSTEM)
    assert unnamed == [], (f"tests run {unnamed}: add them to tools/test-deps.sh's table "
                           "(or to OPT_IN here, for a test that skips without them)")
    assert {"Xvfb", "xdotool"} <= {w for w, (k, _, level) in rows.items() if level == "needed"}


def test_the_script_names_what_is_missing(tmp_path: Path):
    """On a machine with nothing (an empty PATH: no Xvfb, no fc-list, so no fonts known),
    ``--check`` names every package and fails; here, after README's command, nothing needed
    is missing."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("bash", "id", "tr", "grep"):
        found = subprocess.run(["bash", "-c", f"command -v {tool}"], capture_output=True,
                               text=True).stdout.strip()
        (bin_dir / tool).symlink_to(found)
    bare = subprocess.run(["bash", str(SCRIPT), "--check"], capture_output=True, text=True,
                          timeout=30, env={"PATH": str(bin_dir)})
    assert bare.returncode == 1, bare.stdout + bare.stderr
    for package in {package for _, package, _ in table().values()}:
        assert f"Debian package {package} " in bare.stdout
    here = subprocess.run(["bash", str(SCRIPT), "--check"], capture_output=True, text=True,
                          timeout=30)
    assert here.returncode == 0, here.stdout + here.stderr


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_font_test_passes_without_terminus(tmp_path: Path):
    """The line-number test changed the editor's font to Terminus, "other line spacing, same
    size": on a machine without fonts-terminus Tk gave a silent substitute spaced like the
    old font, and the test failed. Run it with fontconfig refusing every Terminus font."""
    system = Path("/etc/fonts/fonts.conf")
    if not system.exists():
        pytest.skip("no /etc/fonts/fonts.conf to build on")
    conf = tmp_path / "fonts.conf"
    conf.write_text(
        '<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n'
        f'  <include ignore_missing="no">{system}</include>\n'
        f'  <cachedir>{tmp_path / "fc-cache"}</cachedir>\n'
        "  <selectfont><rejectfont><glob>*erminus*</glob><glob>*/ter-*</glob></rejectfont>"
        "</selectfont>\n</fontconfig>\n")
    families = subprocess.run(["fc-list", ":", "family"], capture_output=True, text=True,
                              timeout=30, env={**os.environ, "FONTCONFIG_FILE": str(conf)})
    assert "Terminus" not in families.stdout
    test = "tests/desktop/editor/test_gui_editor_view.py::test_line_numbers_follow_a_font_change_at_the_same_size"
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly",
                           f"--basetemp={tmp_path / 'inner'}", test],
                          cwd=REPO, capture_output=True, text=True, timeout=100,
                          env={**os.environ, "FONTCONFIG_FILE": str(conf)})
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
