"""actors/malloc.py: a fixed mmap threshold, so a big buffer freed goes back to the OS instead
of staying in the heap (glibc raises the threshold after the first big free)."""

from __future__ import annotations

import platform
import subprocess
import sys

import pytest

from tests.support import REPO

pytestmark = pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's malloc only")

# Two 16 MiB buffers made and freed, as a 4 MiB slice relayed again and again is: prints how
# much RSS stays once both are gone.
KEPT = """
import os, sys
from actors.malloc import fix_mmap_threshold
if sys.argv[1] == "fixed":
    assert fix_mmap_threshold()
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
base = rss()
for _ in range(3):
    block = b"x" * (16 << 20)
    del block
print(rss() - base)
"""


def _kept(mode: str, env: dict | None = None) -> int:
    out = subprocess.run([sys.executable, "-c", KEPT, mode], cwd=str(REPO), capture_output=True,
                         text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    return int(out.stdout)


@pytest.mark.timeout(60)
def test_a_big_buffer_freed_is_given_back():
    if _kept("glibc-default") < 12 << 20:
        pytest.skip("this glibc does not keep the freed buffer: nothing to fix here")
    assert _kept("fixed") < 4 << 20


def test_the_users_own_setting_wins(monkeypatch):
    from actors.malloc import fix_mmap_threshold
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")
    assert fix_mmap_threshold() is False


def test_a_host_and_a_spare_fix_it_first(monkeypatch):
    import actors.host as host
    calls: list[int] = []
    monkeypatch.setattr(host, "fix_mmap_threshold", lambda: calls.append(1) or True)
    monkeypatch.setattr(host, "read_assignment", lambda: None)   # the supervisor stopped it
    assert host.spare_main(["--spare", "--preload", ""]) == 0
    assert calls == [1]


def test_every_child_of_an_instance_gets_it_in_its_environment(monkeypatch):
    # The window among them: ui/ does not import actors.malloc (tests/test_layering.py).
    from actors.malloc import MMAP_THRESHOLD
    from actors.window_first import child_env
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    assert child_env("proj-1")["MALLOC_MMAP_THRESHOLD_"] == str(MMAP_THRESHOLD)
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")
    assert child_env("proj-1")["MALLOC_MMAP_THRESHOLD_"] == "65536"


@pytest.mark.timeout(60)
def test_the_environment_entry_gives_the_buffer_back_too(monkeypatch):
    import os

    from actors.malloc import child_env_value
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    if _kept("glibc-default") < 12 << 20:
        pytest.skip("this glibc does not keep the freed buffer: nothing to fix here")
    assert _kept("env", {**os.environ, **child_env_value()}) < 4 << 20
