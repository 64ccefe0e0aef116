"""``python -m ui.tk``: the desktop's one entry point.

* ``python -m ui.tk --instance NAME --root DIR [--open FILE]...``: the window drawn first, before
  the bus exists (what `rio [PATH]` runs in its fork, and the supervisor's restart of it):
  :mod:`ui.tk.start.first`.
* ``python -m ui.tk --instance NAME [--open FILE]...`` and ``python -m ui.tk --connect
  tcp://HOST:PORT [--server-key KEY]``: the desktop connecting first (started by hand, or on a
  remote instance): :mod:`ui.tk.start.desktop`.

Which one is chosen from the arguments alone, so that the window-first path imports nothing
more than it did as a module of its own (tests/runtime/test_start_path_imports.py).
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if any(a == "--root" or a.startswith("--root=") for a in args):
        from ui.tk.start import first
        return first.main(args)
    from ui.tk.start import desktop
    return desktop.main(args)


if __name__ == "__main__":
    sys.exit(main())
