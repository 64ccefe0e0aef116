"""What ties a Rio child to its spawner (ADR-0007) — the environment variables, the lineage of
cookies, the ``prctl`` binding — in a module of its own, so that a path that must not import
psutil yet (`rio FILE` forking its window, actors/runtime/window_first.py) can use them.
:mod:`actors.runtime.process_control` is their main user."""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Callable, Mapping

# The pid that spawned us (lets a child notice reparenting) and the lifeline's "<parent pid>:<fd>"
# (the read end of the parent's lifeline pipe): defined beside the watch that reads them, in the
# bus layer, since the desktop keeps that watch too.
from actors.bus.parent_watch import LIFELINE_ENV as LIFELINE_ENV
from actors.bus.parent_watch import PARENT_ENV as PARENT_ENV

COOKIE_ENV = "RIO_SPAWN_COOKIE"
LINEAGE_ENV = "RIO_SPAWN_LINEAGE"   # ":"-joined cookies of the Rio processes above this one

PR_SET_PDEATHSIG = 1
PR_SET_NAME = 15
PR_SET_CHILD_SUBREAPER = 36


def own_lineage(environ: Mapping[str, str] | None = None) -> list[str]:
    """The cookies that identify *this* process and its ancestors' spawns."""
    env = os.environ if environ is None else environ
    lineage = [c for c in env.get(LINEAGE_ENV, "").split(":") if c]
    own = env.get(COOKIE_ENV)
    if own:
        lineage.append(own)
    return lineage


def load_prctl() -> Callable[..., int] | None:
    """libc ``prctl`` with explicit argument types (arg2..5 are unsigned long: without
    argtypes ctypes passes C ints and the upper register bits are undefined)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    fn.restype = ctypes.c_int
    return fn
