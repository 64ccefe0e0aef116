"""Landlock's scoping, for an agent's box (ADR-0038): what a mount and PID namespace cannot do.

bubblewrap (rio/acp/sandbox.py) keeps the network shared — agents call their model services and
Rio's MCP endpoint on 127.0.0.1 — and with the network namespace come *abstract* unix sockets:
an X server's ``@/tmp/.X11-unix/X0`` (type keystrokes into the user's terminal), a D-Bus bus
on an abstract address (ask systemd to start a process outside the box). Landlock ABI 6
(Linux 6.12) scopes them: a process in a Landlock domain cannot connect to an abstract socket
made outside its domain, nor signal a process outside it (``LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET``,
``LANDLOCK_SCOPE_SIGNAL``). No file-system rules are set: the mounts do that part.

The domain is made in the child between fork and exec, before bwrap runs, so bwrap, the
agent and every helper are in it and none can leave it; ``PR_SET_NO_NEW_PRIVS`` comes with it
(Landlock wants it; bwrap sets it anyway). :func:`scope_step` is that step: built before the
fork, it makes three system calls and raises (the spawn then fails) if one fails.
"""

from __future__ import annotations

import ctypes
import os
import struct
import sys
from collections.abc import Callable

# x86_64 and aarch64 share the generic syscall numbers for Landlock (444–446).
_CREATE_RULESET, _RESTRICT_SELF = 444, 446
_CREATE_RULESET_VERSION = 1
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 0x1, 0x2
_PR_SET_NO_NEW_PRIVS = 38
#: The first ABI with scopes.
SCOPED_ABI = 6

_abi: int | None = None


def _libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def abi() -> int:
    """The kernel's Landlock ABI version; 0 when there is none (or it is turned off)."""
    global _abi
    if _abi is None:
        libc = _libc()
        version = -1
        if libc is not None:
            try:
                version = libc.syscall(ctypes.c_long(_CREATE_RULESET), None, ctypes.c_size_t(0),
                                       ctypes.c_uint32(_CREATE_RULESET_VERSION))
            except (AttributeError, OSError):
                version = -1
        _abi = max(0, int(version))
    return _abi


def scope_step() -> Callable[[], None] | None:
    """The child step (a ``preexec_fn`` addition) that puts the child in a Landlock domain
    scoping abstract unix sockets and signals; None where the kernel cannot (ABI < 6)."""
    libc = _libc()
    if libc is None or abi() < SCOPED_ABI:
        return None
    # struct landlock_ruleset_attr {u64 handled_access_fs, handled_access_net, scoped}
    attr = ctypes.create_string_buffer(
        struct.pack("QQQ", 0, 0, _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL))
    size = ctypes.c_size_t(len(attr.raw))
    prctl = libc.prctl
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                      ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    syscall, close, get_errno = libc.syscall, os.close, ctypes.get_errno
    create, restrict = ctypes.c_long(_CREATE_RULESET), ctypes.c_long(_RESTRICT_SELF)

    def step() -> None:
        fd = syscall(create, attr, size, ctypes.c_uint32(0))
        if fd < 0:
            raise OSError(get_errno(), "landlock_create_ruleset")
        try:
            if prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
                raise OSError(get_errno(), "PR_SET_NO_NEW_PRIVS")
            if syscall(restrict, ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
                raise OSError(get_errno(), "landlock_restrict_self")
        finally:
            close(fd)

    return step
