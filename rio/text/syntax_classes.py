"""The highlighting's style classes and their Tk tag names, apart from the highlighter itself
(rio/text/highlight.py, which imports pygments): a theme names their colours without loading
the lexers, so the window's first paint does not pay for pygments (issue 20)."""

from __future__ import annotations

STYLE_CLASSES = ("keyword", "string", "comment", "number", "name.function", "name.class",
                 "operator", "builtin", "decorator", "error")
TAG_PREFIX = "syn."
TAGS = tuple(TAG_PREFIX + c for c in STYLE_CLASSES)
