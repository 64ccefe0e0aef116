"""What a user's eye sees on an X display, read from outside the process that draws it.

:class:`Screen` grabs the root window's pixels with ``XGetImage`` (libX11 through ctypes, no
process started per frame) and answers two questions about a frame, the same for every program
on the display:

* :meth:`Screen.any_window`: is a top-level window with a name mapped (what ``xdotool search
  --onlyvisible --name .`` answered, the old "grey window" row);
* :meth:`Screen.marker_drawn`: is the *marker line* drawn — a line of full blocks ("█", U+2588)
  that the benchmark puts first in the file it opens. Drawn, it is a solid bar of one dark colour
  at least ``MARKER_MIN_W`` pixels wide and ``MARKER_MIN_H`` pixels high, which nothing else
  on a light window (menus, bevels, icons, an empty editor) draws. Its first frame is the first
  frame in which the file's first line is on the screen, in whatever program shows it, and
  whoever draws it: nothing is asked of the program measured.

The window's title is read at the same moment (``WM_NAME`` of the top-levels), so a row can ask
for both: the file's name in a title and its first line drawn.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from dataclasses import dataclass

MARKER_CHARS = 40         # "█" × 40 as the file's first line (a comment in a Python file)
MARKER_MIN_W = 150        # px: 40 cells of any editor font at 9 pt or more are wider
MARKER_MIN_H = 8          # px: a cell's height, with room for fonts that leave a gap
MARKER_DENSITY = 0.75     # of the bar's pixels dark: Terminus leaves a 1 px gap per cell
DARK = 0x50               # every channel at or below this: "dark" (black text on white)


class _XImage(ctypes.Structure):
    _fields_ = [("width", ctypes.c_int), ("height", ctypes.c_int),
                ("xoffset", ctypes.c_int), ("format", ctypes.c_int),
                ("data", ctypes.c_void_p), ("byte_order", ctypes.c_int),
                ("bitmap_unit", ctypes.c_int), ("bitmap_bit_order", ctypes.c_int),
                ("bitmap_pad", ctypes.c_int), ("depth", ctypes.c_int),
                ("bytes_per_line", ctypes.c_int), ("bits_per_pixel", ctypes.c_int)]


class _Attrs(ctypes.Structure):      # XWindowAttributes
    _fields_ = [("x", ctypes.c_int), ("y", ctypes.c_int), ("width", ctypes.c_int),
                ("height", ctypes.c_int), ("border_width", ctypes.c_int),
                ("depth", ctypes.c_int), ("visual", ctypes.c_void_p),
                ("root", ctypes.c_ulong), ("class_", ctypes.c_int),
                ("bit_gravity", ctypes.c_int), ("win_gravity", ctypes.c_int),
                ("backing_store", ctypes.c_int), ("backing_planes", ctypes.c_ulong),
                ("backing_pixel", ctypes.c_ulong), ("save_under", ctypes.c_int),
                ("colormap", ctypes.c_ulong), ("map_installed", ctypes.c_int),
                ("map_state", ctypes.c_int), ("all_event_masks", ctypes.c_long),
                ("your_event_mask", ctypes.c_long), ("do_not_propagate_mask", ctypes.c_long),
                ("override_redirect", ctypes.c_int), ("screen", ctypes.c_void_p)]


def marker_line() -> str:
    return "# " + "\u2588" * MARKER_CHARS


@dataclass
class Frame:
    any_window: bool
    titles: list[str]
    marker: bool


class Screen:
    """One connection to ``display``; :meth:`frame` reads one frame (~5–15 ms at 1280×800)."""

    def __init__(self, display: str) -> None:
        import numpy  # noqa: F401 -- fail here, not at the first frame
        name = ctypes.util.find_library("X11")
        if name is None:
            raise RuntimeError("libX11 not found")
        x = self.x = ctypes.cdll.LoadLibrary(name)
        x.XOpenDisplay.restype = ctypes.c_void_p
        x.XOpenDisplay.argtypes = [ctypes.c_char_p]
        x.XDefaultRootWindow.restype = ctypes.c_ulong
        x.XDefaultRootWindow.argtypes = [ctypes.c_void_p]
        x.XGetImage.restype = ctypes.POINTER(_XImage)
        x.XGetImage.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_int, ctypes.c_int,
                                ctypes.c_uint, ctypes.c_uint, ctypes.c_ulong, ctypes.c_int]
        x.XFree.argtypes = [ctypes.c_void_p]
        x.XQueryTree.argtypes = [ctypes.c_void_p, ctypes.c_ulong,
                                 ctypes.POINTER(ctypes.c_ulong), ctypes.POINTER(ctypes.c_ulong),
                                 ctypes.POINTER(ctypes.POINTER(ctypes.c_ulong)),
                                 ctypes.POINTER(ctypes.c_uint)]
        x.XFetchName.argtypes = [ctypes.c_void_p, ctypes.c_ulong,
                                 ctypes.POINTER(ctypes.c_char_p)]
        x.XGetWindowAttributes.argtypes = [ctypes.c_void_p, ctypes.c_ulong, ctypes.c_void_p]
        x.XCloseDisplay.argtypes = [ctypes.c_void_p]
        x.XSync.argtypes = [ctypes.c_void_p, ctypes.c_int]
        x.XSetErrorHandler.restype = ctypes.c_void_p
        # A window that goes away between the listing and the reading is an X error, which
        # libX11's default handler turns into exit(): ignore errors on this connection.
        self._on_error = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)(
            lambda d, e: 0)
        x.XSetErrorHandler(self._on_error)
        self.display = display
        self.dpy = x.XOpenDisplay(display.encode())
        if not self.dpy:
            raise RuntimeError(f"cannot open display {display}")
        self.root = x.XDefaultRootWindow(self.dpy)
        a = _Attrs()
        x.XGetWindowAttributes(ctypes.c_void_p(self.dpy), self.root, ctypes.byref(a))
        self.width, self.height = a.width, a.height

    def close(self) -> None:
        if self.dpy:
            self.x.XCloseDisplay(ctypes.c_void_p(self.dpy))
            self.dpy = None

    def _top_levels(self) -> list[tuple[str, tuple[int, int, int, int]]]:
        """(name, (x, y, width, height)) of every named, viewable window near the root (on a
        window-manager-less Xvfb, Tk's wrapper is the top-level and carries the name)."""
        out: list[tuple[str, tuple[int, int, int, int]]] = []
        self.x.XSync(ctypes.c_void_p(self.dpy), 0)

        def walk(win: int, depth: int) -> None:
            root_ret, parent = ctypes.c_ulong(), ctypes.c_ulong()
            kids = ctypes.POINTER(ctypes.c_ulong)()
            n = ctypes.c_uint()
            if not self.x.XQueryTree(ctypes.c_void_p(self.dpy), win, ctypes.byref(root_ret),
                                     ctypes.byref(parent), ctypes.byref(kids), ctypes.byref(n)):
                return
            children = [kids[i] for i in range(n.value)]
            if kids:
                self.x.XFree(kids)
            for child in children:
                name = ctypes.c_char_p()
                if self.x.XFetchName(ctypes.c_void_p(self.dpy), child, ctypes.byref(name)) \
                        and name.value is not None:
                    a = _Attrs()
                    self.x.XGetWindowAttributes(ctypes.c_void_p(self.dpy), child,
                                                ctypes.byref(a))
                    if a.map_state == 2:            # IsViewable
                        out.append((name.value.decode("utf-8", "replace"),
                                    (a.x, a.y, a.width, a.height)))
                    self.x.XFree(name)
                elif depth < 2:
                    walk(child, depth + 1)
        walk(self.root, 0)
        return out

    def pixels(self) -> bytes:
        img = self.x.XGetImage(ctypes.c_void_p(self.dpy), self.root, 0, 0, self.width,
                               self.height, 0xFFFFFFFF, 2)   # AllPlanes, ZPixmap
        if not img:
            return b""
        try:
            im = img.contents
            return ctypes.string_at(im.data, im.bytes_per_line * im.height)
        finally:
            # XDestroyImage is a macro for the image's own f.destroy_image; XFree on the
            # data and the structure does the same for an image from XGetImage.
            self.x.XFree(ctypes.c_void_p(img.contents.data))
            self.x.XFree(img)

    def marker_in(self, data: bytes, rects: list[tuple[int, int, int, int]]) -> bool:
        """A dark bar at least MARKER_MIN_W × MARKER_MIN_H px, ``MARKER_DENSITY`` of its pixels
        dark, inside one of ``rects`` (x, y, width, height: the windows; the root around them
        is black on this Xvfb)."""
        import numpy as np
        if not data:
            return False
        img = np.frombuffer(data, dtype=np.uint8).reshape(self.height, -1, 4)[:, :self.width]
        k, h = MARKER_MIN_W, MARKER_MIN_H
        for x, y, w, hh in rects:
            x0, y0 = max(x, 0), max(y, 0)
            x1, y1 = min(x + w, self.width), min(y + hh, self.height)
            if x1 - x0 < k or y1 - y0 < h:
                continue
            dark = (img[y0:y1, x0:x1, :3] <= DARK).all(axis=2)
            if dark.sum() < k * h * MARKER_DENSITY:
                continue
            sums = np.zeros((dark.shape[0] + 1, dark.shape[1] + 1), dtype=np.int32)
            sums[1:, 1:] = dark.cumsum(axis=0, dtype=np.int32).cumsum(axis=1, dtype=np.int32)
            box = sums[h:, k:] - sums[:-h, k:] - sums[h:, :-k] + sums[:-h, :-k]
            if (box >= k * h * MARKER_DENSITY).any():
                return True
        return False

    def frame(self) -> Frame:
        tops = self._top_levels()
        marker = bool(tops) and self.marker_in(self.pixels(), [r for _, r in tops])
        return Frame(bool(tops), [n for n, _ in tops], marker)
