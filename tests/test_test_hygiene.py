"""The test suite cleans up after itself: no runtime folders or fixed-name files left in the
temp folder (issue 9)."""

from __future__ import annotations

import re
from pathlib import Path

from tests import support
from tests.support import REPO


def test_runtime_folders_handed_out_are_removed(tmp_path):
    env = support.rio_env(tmp_path)
    runtime = Path(env["RIO_RUNTIME_DIR"])
    (runtime / "inst").mkdir(parents=True)
    (runtime / "inst" / "instance.json").write_text("{}")
    assert runtime in support.RUNTIME_DIRS
    support.remove_runtime_dirs()
    assert not runtime.exists() and not support.RUNTIME_DIRS


def test_no_test_writes_fixed_names_into_the_temp_folder():
    """Files go under tmp_path; a fixed /tmp name is left behind and shared between runs."""
    fixed = re.compile(r"""(?:Path|open)\(\s*f?["']/tmp/""")
    offenders = []
    for path in sorted((REPO / "tests").rglob("*.py")):
        if path.name == Path(__file__).name:
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if fixed.search(line) and ".exists()" not in line:   # looking is fine
                offenders.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_helpers_are_imported_one_way():
    """``from tests.support import …``, never ``from support import …``: both work (pytest puts
    tests/ on sys.path), but they load the module twice, and the second copy's RUNTIME_DIRS
    is never cleaned up by conftest.py — its ``/tmp/rio-t-*`` folders were left behind."""
    helpers = {p.stem for p in (REPO / "tests").glob("*.py") if not p.stem.startswith("test_")}
    helpers |= {"fakes", "bench"}
    bare = re.compile(r"^\s*(?:from|import)\s+(" + "|".join(sorted(helpers)) + r")\b")
    offenders = []
    for path in sorted((REPO / "tests").rglob("*.py")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if bare.match(line):
                offenders.append(f"{path.relative_to(REPO)}:{n}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_every_short_runtime_folder_is_removed():
    """A test that makes its own ``/tmp/rio-*`` folder (ipc paths must be short, so not under
    tmp_path) hands it to RUNTIME_DIRS or removes it itself."""
    makes = re.compile(r"""Path\(\s*["']/tmp["']\s*\)\s*/\s*f?["']rio-""")
    offenders = [str(path.relative_to(REPO)) for path in sorted((REPO / "tests").rglob("*.py"))
                 if path.name != Path(__file__).name and makes.search(text := path.read_text())
                 and "RUNTIME_DIRS" not in text and "rmtree" not in text]
    assert not offenders, offenders
