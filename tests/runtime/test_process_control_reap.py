"""reap_zombies() is called by the supervisor's loop every 20 ms: with no child exited it must
not list the children (psutil reads every process's /proc entry, ~2 ms of CPU holding the GIL,
which the hub thread in the same process waited for — issue 13), and once one has exited it
still reaps the untracked one and leaves a protected one's exit status alone.

Runs in a fresh interpreter, so no child of pytest's own can be the zombie it sees."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent("""
    import json, subprocess, sys, time
    import psutil
    from actors.runtime import process_control as pc

    scans = []
    real_children = psutil.Process.children
    def counting_children(self, *a, **k):
        scans.append(1)
        return real_children(self, *a, **k)
    psutil.Process.children = counting_children

    def zombie(pid):
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE

    sleeper = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"],
                               stdin=subprocess.PIPE)
    quiet = [pc.reap_zombies(protect=[sleeper.pid]) for _ in range(100)]
    scans_quiet = len(scans)
    stray = subprocess.Popen([sys.executable, "-c", "pass"])
    protected = subprocess.Popen([sys.executable, "-c", "import sys; sys.exit(4)"])
    while not (zombie(stray.pid) and zombie(protected.pid)):
        time.sleep(0.01)
    reaped = pc.reap_zombies(protect=[sleeper.pid, protected.pid])
    rc = protected.wait()
    sleeper.stdin.close()
    sleeper.wait()
    print(json.dumps({"quiet": quiet, "scans_quiet": scans_quiet, "scans": len(scans),
                      "reaped": reaped, "stray": stray.pid, "rc": rc}))
""")


@pytest.mark.timeout(60)
def test_no_exited_child_no_scan_and_an_exited_one_still_reaped() -> None:
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         timeout=50, check=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["quiet"] == [[]] * 100
    assert result["scans_quiet"] == 0, "children listed with no child exited"
    assert result["scans"] >= 1
    assert result["reaped"] == [result["stray"]]
    assert result["rc"] == 4, "a protected child's exit status is not stolen"
