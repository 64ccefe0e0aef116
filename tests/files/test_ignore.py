"""rio.files.ignore: the always-ignored folders and git's ignore rules, without touching a disk."""

from __future__ import annotations

import pytest

from rio.files.ignore import IgnoreRules, parse_gitignore


def rules(files: dict[str, str], venvs: frozenset[str] = frozenset(), *,
          nested: bool = True) -> IgnoreRules:
    return IgnoreRules(files.get, lambda rel: rel in venvs, nested=nested)


@pytest.mark.parametrize("name", [".git", "node_modules", "__pycache__", ".venv", "venv",
                                  ".mypy_cache", ".pytest_cache", ".tox"])
def test_always_ignored_folders_at_any_depth(name: str) -> None:
    r = rules({})
    assert r.is_ignored(name, True)
    assert r.is_ignored(f"src/pkg/{name}", True)
    assert not r.is_ignored(name, False)  # a *file* called venv is just a file


def test_virtualenv_detected_by_pyvenv_cfg() -> None:
    r = rules({}, venvs=frozenset({"tools/env3"}))
    assert r.is_ignored("tools/env3", True)
    assert not r.is_ignored("tools/env4", True)


def test_root_is_never_ignored() -> None:
    assert not rules({".gitignore": "*\n"}).is_ignored(".", True)


def test_gitignore_patterns() -> None:
    r = rules({".gitignore": "\n".join([
        "# comment", "*.log", "!keep.log", "build/", "/only_top.txt", "docs/**/*.tmp",
        "dist", "   ", "\\#not_a_comment",
    ])})
    assert r.is_ignored("x.log", False) and r.is_ignored("deep/x.log", False)
    assert not r.is_ignored("keep.log", False) and not r.is_ignored("deep/keep.log", False)
    assert r.is_ignored("build", True) and r.is_ignored("src/build", True)
    assert not r.is_ignored("build", False)  # dir-only pattern, and this is a file
    assert r.is_ignored("only_top.txt", False) and not r.is_ignored("sub/only_top.txt", False)
    assert r.is_ignored("docs/a/b/c.tmp", False) and r.is_ignored("docs/c.tmp", False)
    assert not r.is_ignored("other/c.tmp", False)
    assert r.is_ignored("dist", True) and r.is_ignored("dist", False)
    assert r.is_ignored("#not_a_comment", False)
    assert not r.is_ignored("main.py", False)


def test_nested_gitignore_is_relative_to_its_folder_and_wins() -> None:
    files = {
        ".gitignore": "*.gen\n",
        "pkg/.gitignore": "!keep.gen\n/local.txt\n",
    }
    r = rules(files)
    assert r.is_ignored("a.gen", False) and r.is_ignored("pkg/a.gen", False)
    assert not r.is_ignored("pkg/keep.gen", False)       # the deeper file re-includes it
    assert r.is_ignored("keep.gen", False)               # but only below pkg/
    assert r.is_ignored("pkg/local.txt", False)          # anchored to pkg/, not the root
    assert not r.is_ignored("local.txt", False)
    assert not r.is_ignored("pkg/sub/local.txt", False)
    flat = rules(files, nested=False)
    assert flat.is_ignored("pkg/keep.gen", False)        # nested files switched off


def test_info_exclude_counts_but_gitignore_wins() -> None:
    r = rules({".git/info/exclude": "secret.txt\n*.bak\n", ".gitignore": "!important.bak\n"})
    assert r.is_ignored("secret.txt", False) and r.is_ignored("x/y.bak", False)
    assert not r.is_ignored("important.bak", False)


def test_ignored_parent_cannot_be_reincluded() -> None:
    r = rules({".gitignore": "out/\n!out/keep.txt\n"})
    assert r.is_ignored_with_parents("out/keep.txt", False)
    assert r.is_ignored_with_parents("node_modules/pkg/index.js", False)
    assert not r.is_ignored_with_parents("src/index.js", False)


def test_bad_lines_are_skipped_not_fatal() -> None:
    spec = parse_gitignore("!\n[z-a]\n*.o\n")
    assert spec.match_file("x.o") and not spec.match_file("x.c")


def test_ignore_files_are_read_once_per_instance() -> None:
    reads: list[str] = []

    def read(rel: str) -> str | None:
        reads.append(rel)
        return "*.o\n" if rel == ".gitignore" else None

    r = IgnoreRules(read)
    for name in ("a.o", "b.o", "src/c.o", "src/d.o"):
        assert r.is_ignored(name, False)
    # Each file once; info/exclude is never needed because .gitignore already decided.
    assert sorted(reads) == [".gitignore", "src/.gitignore"]


@pytest.mark.timeout(30)
def test_a_gitignore_line_that_backtracks_does_not_hang_a_walk() -> None:
    """pathspec turns ``*a*a…*b`` into ``[^/]*a[^/]*a…b``; with re, matching it against a long
    name took minutes with the GIL held (the core missed its pings and was killed as hung on
    every listing). A cloned repository — or an editor key, which can save a .gitignore and
    a long name — could keep the core down. The ignore patterns now match with the regex
    package, which does this in milliseconds, with the GIL released."""
    import time
    line = "*a" * 12 + "*b"
    r = rules({".gitignore": f"{line}\n*.log\n"})
    started = time.monotonic()
    assert not r.is_ignored("a" * 250, False)
    assert not r.is_ignored("src/" + "a" * 250, False)
    assert r.is_ignored("x" + "a" * 12 + "b", False)    # the line still means what git says
    assert r.is_ignored("deep/x.log", False)
    assert time.monotonic() - started < 2
