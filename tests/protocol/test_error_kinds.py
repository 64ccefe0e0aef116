"""Error kinds are matched by name all over Rio (``err.kind == "bus.timeout"``); a typo there
would silently never match. This suite reads every comparison against a kind and every error
built from a leaf, in the code and the tests, and checks each against the tree of
:mod:`rio.protocol.errors` — the one list of kinds (:data:`rio.protocol.errors.KINDS`)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from rio.protocol import errors
from rio.protocol.errors import KINDS, RioError, kind_of

REPO = Path(__file__).resolve().parents[2]
FOLDERS = ("rio", "actors", "ui", "tests", "tools")
FAMILIES = {cls.__name__: cls.family for cls in RioError.__subclasses__()}
FAMILIES["RioError"] = "internal"


def _sources() -> list[Path]:
    return sorted(p for folder in FOLDERS for p in (REPO / folder).rglob("*.py"))


def _is_kind_expr(node: ast.AST) -> bool:
    """``x.kind``, ``x["kind"]``, ``x.get("kind")`` (and ``.leaf`` for bare leaves)."""
    if isinstance(node, ast.Attribute) and node.attr == "kind":
        return True
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
            and node.slice.value == "kind":
        return True
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get" and node.args
            and isinstance(node.args[0], ast.Constant) and node.args[0].value == "kind")


def _strings(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for elt in node.elts for s in _strings(elt)]
    return []


def _kinds_used(path: Path) -> list[tuple[int, str]]:
    """(line, kind) for every kind a comparison names and every error built from a leaf."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    used: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_is_kind_expr(s) for s in sides):
                for side in sides:
                    used += [(node.lineno, s) for s in _strings(side) if "." in s]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in FAMILIES and node.args:
            first = node.args[0]
            if isinstance(first, ast.Constant) and isinstance(first.value, str):
                leaf = first.value
                kind = leaf if "." in leaf else f"{FAMILIES[node.func.id]}.{leaf}"
                used.append((node.lineno, kind))
    return used


@pytest.mark.slow
def test_every_kind_named_in_the_code_and_tests_is_in_the_tree():
    unknown = [f"{path.relative_to(REPO)}:{line}: {kind}"
               for path in _sources() for line, kind in _kinds_used(path)
               if kind not in KINDS]
    assert unknown == []


def test_the_scan_sees_comparisons_and_constructions(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        'if err.kind == "bus.timout": pass\n'
        'if e["kind"] in ("path.outside_root", "file.binnary"): pass\n'
        'raise PathError("outside_rot", "m")\n'
        'if proposal.kind == "edit": pass\n')
    kinds = [k for _, k in _kinds_used(sample)]
    assert kinds == ["bus.timout", "path.outside_root", "file.binnary", "path.outside_rot"]
    assert [k for k in kinds if k not in KINDS] == ["bus.timout", "file.binnary",
                                                   "path.outside_rot"]


def test_the_tree_is_parsed_into_families_and_leaves():
    assert "path.outside_root" in KINDS and "bus.timeout" in KINDS
    assert {k.split(".")[0] for k in KINDS} == set(FAMILIES.values())
    # "no_server_key(s)" in the tree stands for both spellings.
    assert {"bus.no_server_key", "bus.no_server_keys"} <= KINDS


def test_a_note_or_a_label_in_the_tree_is_not_a_kind():
    """The tree's notes in brackets (even over lines) and the labels before a colon were read
    as kinds once — ``agent.the``, ``buffer.([editor]``, ``auth.later`` — so ``kind_of`` let
    a misspelling that happened to be one of their words through. Every kind is an
    identifier leaf, and the leaves after a note or a label are still read."""
    from rio.protocol.errors import _kinds_from_tree
    assert all(re.fullmatch(r"[a-z]+\.[a-z][a-z0-9_]*", k) for k in KINDS), \
        sorted(k for k in KINDS if not re.fullmatch(r"[a-z]+\.[a-z][a-z0-9_]*", k))
    assert {"agent.the", "auth.later", "agent.ACP", "bus.remote"}.isdisjoint(KINDS)
    assert {"buffer.too_many_buffers", "auth.owner_only_path", "bus.backpressure",
            "agent.tool_refused", "agent.sandbox_unavailable"} <= KINDS
    tree = ("    ├── BusError               bus.*        x\n"
            "    │     spawn_failed (system.spawn: the process\n"
            "    │     ended first), no_key(s),\n"
            "    │     remote keys (ADR-0021): backpressure\n")
    assert _kinds_from_tree(tree) == {"bus.spawn_failed", "bus.no_key", "bus.no_keys",
                                      "bus.backpressure"}
    with pytest.raises(ValueError, match="not a kind"):
        _kinds_from_tree("    ├── BusError               bus.*        x\n"
                         "    │     spawn_failed, Timeout\n")


def test_kind_of_refuses_a_kind_outside_the_tree():
    assert kind_of("bus.timeout") == "bus.timeout"
    with pytest.raises(ValueError, match="bus.timout"):
        kind_of("bus.timout")


def test_every_error_class_in_the_tree_is_a_family():
    for name, family in FAMILIES.items():
        assert hasattr(errors, name)
        assert any(k.startswith(family + ".") for k in KINDS), name
