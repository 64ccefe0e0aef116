"""rio.files.workspace: the confinement gate, listings and walks on real temporary trees."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rio.files.workspace import Workspace
from rio.protocol.errors import PathError


def make_tree(base: Path) -> tuple[Path, Path]:
    """A project with links pointing in, out, up, nowhere and round in circles."""
    root = base / "proj"
    outside = base / "outside"
    (root / "a" / "b").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (root / "a" / "b" / "file.txt").write_text("hello")
    (root / "top.txt").write_text("top")
    (root / "link_in").symlink_to(root / "a")
    (root / "link_file_in").symlink_to(root / "top.txt")
    (root / "link_out").symlink_to(outside)
    (root / "link_secret").symlink_to(outside / "secret.txt")
    (root / "link_up").symlink_to("..")
    (root / "a" / "rel_out").symlink_to("../../outside")
    (root / "loop").symlink_to("loop")
    (root / "dangling_in").symlink_to(root / "missing.txt")
    (root / "dangling_out").symlink_to(outside / "missing.txt")
    os.mkfifo(root / "fifo")
    return root, outside


@pytest.fixture
def tree(tmp_path: Path) -> tuple[Workspace, Path, Path]:
    root, outside = make_tree(tmp_path)
    return Workspace(root), root, outside


def kind_of(exc: pytest.ExceptionInfo[PathError]) -> str:
    return exc.value.kind


# ---------------------------------------------------------------- resolve


def test_resolve_relative_and_absolute_inside(tree: tuple[Workspace, Path, Path]) -> None:
    ws, root, _ = tree
    assert ws.resolve("a/b/file.txt") == root / "a/b/file.txt"
    assert ws.resolve(str(root / "a/b/file.txt")) == root / "a/b/file.txt"
    assert ws.resolve("a/b/../../top.txt") == root / "top.txt"
    assert ws.resolve("link_in/b/file.txt") == root / "a/b/file.txt"  # symlink inside: fine
    assert ws.resolve("link_file_in") == root / "top.txt"
    assert ws.resolve(".", kind="dir") == root
    assert ws.resolve("a", kind="any") == root / "a"


@pytest.mark.parametrize(("path", "reason"), [
    ("../outside/secret.txt", "dotdot"),
    ("a/../../outside/secret.txt", "dotdot"),
    ("link_out/secret.txt", "symlink"),
    ("link_secret", "symlink"),
    ("a/rel_out/secret.txt", "symlink"),
    ("link_up/outside/secret.txt", "symlink"),
    ("/etc/passwd", "absolute"),
])
def test_resolve_refuses_escapes_with_reason(tree: tuple[Workspace, Path, Path], path: str,
                                             reason: str) -> None:
    ws, _, _ = tree
    with pytest.raises(PathError) as caught:
        ws.resolve(path, kind="any")
    assert kind_of(caught) == "path.outside_root"
    assert caught.value.details["reason"] == reason
    assert caught.value.next == "Use a path inside the project folder"


def test_resolve_refuses_absolute_path_outside(tree: tuple[Workspace, Path, Path]) -> None:
    ws, _, outside = tree
    with pytest.raises(PathError) as caught:
        ws.resolve(str(outside / "secret.txt"))
    assert kind_of(caught) == "path.outside_root" and "outside the project" in caught.value.message


def test_dangling_link_pointing_out_is_refused_even_for_new_files(
        tree: tuple[Workspace, Path, Path]) -> None:
    ws, root, _ = tree
    with pytest.raises(PathError) as caught:
        ws.resolve("dangling_out", must_exist=False)
    assert kind_of(caught) == "path.outside_root"
    # A dangling link inside resolves to where a save would create the file.
    assert ws.resolve("dangling_in", must_exist=False) == root / "missing.txt"


@pytest.mark.parametrize(("path", "kind"), [
    ("", "path.invalid"),
    ("a\x00b", "path.invalid"),
    ("bad\ud800name", "path.invalid"),
    ("x" * 5000, "path.invalid"),
    ("loop", "path.invalid"),
    ("loop/x.txt", "path.invalid"),
    ("nope.txt", "path.not_found"),
    ("top.txt/child", "path.not_found"),
    ("fifo", "path.special_file"),
    ("a", "path.not_a_file"),
])
def test_resolve_refusals(tree: tuple[Workspace, Path, Path], path: str, kind: str) -> None:
    ws, _, _ = tree
    with pytest.raises(PathError) as caught:
        ws.resolve(path)
    assert kind_of(caught) == kind
    assert caught.value.message and caught.value.next


def test_resolve_wrong_kind_dir(tree: tuple[Workspace, Path, Path]) -> None:
    ws, _, _ = tree
    with pytest.raises(PathError) as caught:
        ws.resolve("top.txt", kind="dir")
    assert kind_of(caught) == "path.not_a_directory"


@pytest.mark.timeout(10)
def test_resolve_refuses_sockets_and_devices(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "dev").symlink_to("/dev/null")  # a device reached through a link pointing out
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(root / "s.sock"))
        ws = Workspace(root)
        with pytest.raises(PathError) as caught:
            ws.resolve("s.sock", kind="any")
        assert kind_of(caught) == "path.special_file"
        with pytest.raises(PathError) as caught:
            ws.resolve("dev", kind="any")
        assert kind_of(caught) == "path.outside_root"
    finally:
        sock.close()


def test_device_inside_root_is_special(tmp_path: Path) -> None:
    ws = Workspace("/dev")  # a workspace whose root holds devices
    with pytest.raises(PathError) as caught:
        ws.resolve("null", kind="any")
    assert kind_of(caught) == "path.special_file"


def test_resolve_new_files(tree: tuple[Workspace, Path, Path]) -> None:
    ws, root, _ = tree
    assert ws.resolve("new.txt", must_exist=False) == root / "new.txt"
    assert ws.resolve("a/new/deeper/x.txt", must_exist=False) == root / "a/new/deeper/x.txt"
    assert ws.resolve("link_in/new.txt", must_exist=False) == root / "a/new.txt"
    with pytest.raises(PathError) as caught:
        ws.resolve("top.txt/new.txt", must_exist=False)
    assert kind_of(caught) == "path.not_a_directory" and "top.txt is a file" in caught.value.message
    with pytest.raises(PathError) as caught:
        ws.resolve("link_out/new.txt", must_exist=False)
    assert kind_of(caught) == "path.outside_root"
    with pytest.raises(PathError) as caught:
        ws.resolve("../new.txt", must_exist=False)
    assert kind_of(caught) == "path.outside_root"


def test_relative_and_contains(tree: tuple[Workspace, Path, Path]) -> None:
    ws, root, outside = tree
    assert ws.relative(root) == "."
    assert ws.relative(root / "a" / "b" / "file.txt") == "a/b/file.txt"
    assert ws.relative("link_in/b") == "a/b"
    assert ws.relative("not/yet.txt") == "not/yet.txt"
    assert ws.contains("top.txt") and not ws.contains(outside) and not ws.contains("link_out")
    with pytest.raises(PathError):
        ws.relative(outside / "secret.txt")


def test_root_must_be_an_existing_folder(tmp_path: Path) -> None:
    with pytest.raises(PathError) as caught:
        Workspace(tmp_path / "nope")
    assert kind_of(caught) == "path.not_found"
    (tmp_path / "f").write_text("x")
    with pytest.raises(PathError) as caught:
        Workspace(tmp_path / "f")
    assert kind_of(caught) == "path.not_a_directory"


def test_root_given_through_a_symlink_is_resolved_once(tmp_path: Path) -> None:
    root, _ = make_tree(tmp_path)
    alias = tmp_path / "alias"
    alias.symlink_to(root)
    ws = Workspace(alias)
    assert ws.root == root
    assert ws.resolve(str(alias / "top.txt")) == root / "top.txt"


# ---------------------------------------------------------------- fuzz: confinement

_COMPONENTS = ["..", ".", "", "a", "b", "file.txt", "top.txt", "link_in", "link_out", "link_up",
               "link_secret", "rel_out", "loop", "dangling_in", "dangling_out", "fifo", "new",
               "outside", "secret.txt", "proj", "link_file_in", "\x00", "~", "..."]


@st.composite
def fuzz_paths(draw: st.DrawFn, root: str, outside: str) -> str:
    parts = draw(st.lists(st.one_of(st.sampled_from(_COMPONENTS), st.text(max_size=6)),
                          max_size=8))
    prefix = draw(st.sampled_from(["", "/", root + "/", outside + "/", "//", "./"]))
    return prefix + "/".join(parts)


@pytest.fixture(scope="module")
def fuzz_tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return make_tree(tmp_path_factory.mktemp("fuzz"))


@pytest.mark.slow
def test_resolve_fuzz_never_escapes(fuzz_tree: tuple[Path, Path]) -> None:
    root, outside = fuzz_tree
    ws = Workspace(root)
    root_str = str(root)

    def inside(p: Path) -> bool:
        real = os.path.realpath(p)
        return real == root_str or real.startswith(root_str + os.sep)

    @settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(fuzz_paths(root_str, str(outside)), st.booleans(),
           st.sampled_from(["file", "dir", "any"]))
    def check(path: str, must_exist: bool, kind: str) -> None:
        try:
            got = ws.resolve(path, must_exist=must_exist, kind=kind)  # type: ignore[arg-type]
        except PathError as exc:
            assert exc.kind.startswith("path.") and exc.next
            return
        assert got.is_absolute() and inside(got), (path, got)
        if got.exists():
            assert inside(got.resolve())
            if kind == "file":
                assert got.is_file()
            elif kind == "dir":
                assert got.is_dir()
        else:
            assert not must_exist
            parent = got.parent
            while not parent.exists():
                parent = parent.parent
            assert parent.is_dir() and inside(parent)

    check()


# ---------------------------------------------------------------- listing and walking


def build_project(root: Path) -> None:
    files = {
        "README.md": "r", "src/app.py": "a", "src/zeta.py": "z", "src/Alpha.py": "A",
        "src/gen/out.py": "g", "build/x.o": "o", "debug.log": "l", "keep.log": "k",
        "node_modules/pkg/index.js": "n", ".git/config": "c", "env3/pyvenv.cfg": "v",
        "env3/lib/site.py": "s", "src/__pycache__/app.cpython-311.pyc": "p",
        "img/logo.png": "png", "big.txt": "x" * 5000, "docs/.gitignore": "*.draft\n",
        "docs/a.draft": "d", "docs/a.md": "m",
        ".gitignore": "build/\n*.log\n!keep.log\n/src/gen/\n",
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_listing_sorts_dirs_first_and_applies_ignores(tmp_path: Path) -> None:
    build_project(tmp_path)
    (tmp_path / "link_out").symlink_to("/etc")
    os.mkfifo(tmp_path / "pipe")
    listing = Workspace(tmp_path).listing()
    names = [e.name for e in listing.entries]
    assert names == ["docs", "img", "link_out", "src", ".gitignore", "big.txt", "keep.log",
                     "pipe", "README.md"]
    by_name = {e.name: e for e in listing.entries}
    assert by_name["big.txt"].kind == "file" and by_name["big.txt"].size == 5000
    assert by_name["docs"].kind == "dir" and by_name["docs"].size is None
    assert by_name["link_out"].kind == "other" and by_name["link_out"].is_link
    assert by_name["pipe"].kind == "other"
    assert not listing.truncated


def test_listing_of_a_subfolder_and_limit(tmp_path: Path) -> None:
    build_project(tmp_path)
    ws = Workspace(tmp_path)
    src = ws.listing("src")
    assert [e.rel for e in src.entries] == ["src/Alpha.py", "src/app.py", "src/zeta.py"]
    cut = ws.listing("src", limit=2)
    assert [e.name for e in cut.entries] == ["Alpha.py", "app.py"] and cut.truncated
    assert ws.listing("docs").to_dict()["entries"][0]["rel"] == "docs/.gitignore"
    with pytest.raises(PathError):
        ws.listing("README.md")


def test_walk_files_skips_ignored_binary_big_and_links(tmp_path: Path) -> None:
    build_project(tmp_path)
    (tmp_path / "src" / "loop").symlink_to(tmp_path)
    (tmp_path / "src" / "link.py").symlink_to(tmp_path / "src" / "app.py")
    ws = Workspace(tmp_path)
    files = list(ws.walk_files(max_file_bytes=1000))
    assert files == [".gitignore", "README.md", "docs/.gitignore", "docs/a.md", "keep.log",
                     "src/Alpha.py", "src/app.py", "src/zeta.py"]
    assert list(ws.walk_files("src")) == ["src/Alpha.py", "src/app.py", "src/zeta.py"]
    assert len(list(ws.walk_files(max_files=3))) == 3
    assert "big.txt" in list(ws.walk_files())


def test_gitignore_edits_count_at_once(tmp_path: Path) -> None:
    build_project(tmp_path)
    ws = Workspace(tmp_path)
    assert "README.md" in list(ws.walk_files())
    (tmp_path / ".gitignore").write_text("*.md\n")
    assert "README.md" not in list(ws.walk_files())
    assert "debug.log" in list(ws.walk_files())


def test_walk_skips_unreadable_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    build_project(tmp_path)
    real_scandir = os.scandir

    def scandir(path: object):  # type: ignore[no-untyped-def]
        if str(path).endswith("docs"):
            raise PermissionError(13, "Permission denied")
        return real_scandir(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)
    files = list(Workspace(tmp_path).walk_files())
    assert "docs/a.md" not in files and "src/app.py" in files


def test_a_name_that_is_not_utf8_is_listed_flagged_and_encodable(tmp_path: Path) -> None:
    from rio.files.fs_ops import FsOps
    from rio.protocol.frames import Reply, encode
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "ok.txt").write_text("x")
    with open(os.path.join(os.fsencode(tmp_path), b"d", b"bad\xff.txt"), "wb") as f:
        f.write(b"y")
    reply = FsOps(tmp_path).list("d")
    encode(Reply.success("1", reply))   # msgpack cannot encode lone surrogates: raised before
    by_name = {e["name"]: e for e in reply["entries"]}
    assert set(by_name) == {"bad\ufffd.txt", "ok.txt"}
    assert by_name["bad\ufffd.txt"]["undecodable"] is True
    assert by_name["bad\ufffd.txt"]["path"] == "d/bad\ufffd.txt"
    assert "undecodable" not in by_name["ok.txt"]
    # walks (find in files) leave such names out: they cannot be named on the wire
    assert list(Workspace(tmp_path).walk_files()) == ["d/ok.txt"]


@given(st.binary(min_size=1, max_size=12).filter(lambda b: b"/" not in b and b"\0" not in b))
@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_every_file_name_lists_as_utf8_text(tmp_path: Path, raw: bytes) -> None:
    from rio.files.workspace import displayable
    folder = os.path.join(os.fsencode(tmp_path), b"h")
    os.makedirs(folder, exist_ok=True)
    raw = b"n_" + raw + b".txt"   # no dot-file, nothing an ignore rule would hide
    path = os.path.join(folder, raw)
    with open(path, "wb"):
        pass
    try:
        [entry] = Workspace(tmp_path).listing("h").entries
        entry.name.encode("utf-8")   # never raises
        assert entry.undecodable == (displayable(os.fsdecode(raw)) != os.fsdecode(raw))
    finally:
        os.unlink(path)


def test_a_name_longer_than_the_file_system_allows_says_so(tmp_path):
    """A 300-byte file name (ENAMETOOLONG) was "cannot be checked … Check the folder's
    permissions": the next action named the wrong problem."""
    ws = Workspace(tmp_path)
    for must_exist in (True, False):
        with pytest.raises(PathError) as info:
            ws.resolve("x" * 300 + ".txt", must_exist=must_exist)
        err = info.value
        assert err.kind == "path.invalid"
        assert "too long" in err.message and "shorter" in err.next
        assert "permission" not in err.next
        assert len(err.message) < 200          # the name is not repeated whole
