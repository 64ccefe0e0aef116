"""Every broad catch in Rio's code says in one line why it must be broad.

ruff's BLE001 (pyproject.toml) fails an ``except Exception`` that neither logs its traceback nor
re-raises unless it carries ``# noqa: BLE001 -- why``, and RUF100 fails a marker that no longer
suppresses anything. Neither asks a catch that *does* log why it is broad; this test does, for
every ``except Exception`` / ``except BaseException`` (alone or in a tuple) in rio/, actors/, ui/,
except a clean-up that ends in a bare ``raise`` (it catches nothing).
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("rio", "actors", "ui")
BROAD = {"Exception", "BaseException"}
_MARKER = re.compile(r"^noqa(:\s*[A-Z]+[0-9]+(\s*,\s*[A-Z]+[0-9]+)*)?\s*(--)?\s*")


def _is_broad(node: ast.expr | None) -> bool:
    if isinstance(node, ast.Name):
        return node.id in BROAD
    if isinstance(node, ast.Tuple):
        return any(_is_broad(element) for element in node.elts)
    return False


def _reraises(handler: ast.ExceptHandler) -> bool:
    """A clean-up that ends in a bare ``raise`` lets the exception through: nothing is caught."""
    last = handler.body[-1]
    return isinstance(last, ast.Raise) and last.exc is None


def _reason(comment: str) -> str:
    """A comment's words once a ``noqa: CODE --`` marker is taken off."""
    return _MARKER.sub("", comment.lstrip("#").strip()).strip()


def unexplained(source: str, name: str = "<source>") -> list[int]:
    """The lines of broad ``except`` clauses in ``source`` with no comment saying why."""
    comments: dict[int, str] = {}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            comments[token.start[0]] = token.string
    bad = []
    for node in ast.walk(ast.parse(source, name)):
        if isinstance(node, ast.ExceptHandler) and _is_broad(node.type) \
                and not _reraises(node):
            clause = range(node.lineno, node.body[0].lineno)   # the except line(s), up to the body
            if not any(_reason(comments.get(line, "")) for line in clause):
                bad.append(node.lineno)
    return bad


def test_every_broad_catch_says_why():
    bad = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            source = path.read_text(encoding="utf-8")
            bad += [f"{path.relative_to(REPO)}:{line}" for line in unexplained(source, str(path))]
    assert bad == []


def test_the_check_tells_a_reason_from_a_bare_marker():
    source = (
        "try:\n    pass\nexcept Exception:  # noqa: BLE001 -- a plug-in's bug must not stop us\n    pass\n"
        "try:\n    pass\nexcept Exception:  # noqa: BLE001\n    pass\n"
        "try:\n    pass\nexcept (OSError, BaseException):\n    pass\n"
        "try:\n    pass\nexcept OSError:\n    pass\n"
        "try:\n    pass\nexcept Exception:  # one event must never end the store\n    pass\n"
        "try:\n    pass\nexcept BaseException:\n    print()\n    raise\n"
    )
    assert unexplained(source) == [7, 11]
