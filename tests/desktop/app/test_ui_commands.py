"""The command table: labels, mnemonics, accelerators → Tk sequences, menus, lookup by path."""

import pytest

from ui.tk.app.commands import (
    MENUS,
    Command,
    CommandTable,
    default_table,
    strip_mnemonic,
    tk_sequences,
)


def test_strip_mnemonic_finds_the_underlined_letter():
    assert strip_mnemonic("Save &As...") == ("Save As...", 5)
    assert strip_mnemonic("&File") == ("File", 0)
    assert strip_mnemonic("Fish && Chips") == ("Fish & Chips", -1)
    assert strip_mnemonic("Plain") == ("Plain", -1)


@pytest.mark.parametrize("accel, seqs", [
    ("Ctrl+S", ("<Control-s>", "<Control-S>")),
    ("Ctrl+Shift+S", ("<Control-Shift-S>",)),
    ("F3", ("<F3>",)),
    ("Shift+F3", ("<Shift-F3>",)),
    ("Ctrl+=", ("<Control-equal>",)),
    ("Ctrl+-", ("<Control-minus>",)),
    ("Ctrl+/", ("<Control-slash>",)),
    ("Ctrl+Tab", ("<Control-Tab>",)),
    ("Ctrl+Shift+Tab", ("<Control-Shift-Tab>", "<Control-ISO_Left_Tab>")),
    ("Insert", ("<Insert>",)),
    ("Alt+1", ("<Alt-Key-1>",)),       # "<Alt-1>" is Alt + mouse button 1 in Tk
    ("Ctrl+0", ("<Control-Key-0>",)),
    ("", ()),
])
def test_accelerators_become_tk_sequences(accel, seqs):
    assert tk_sequences(accel) == seqs


def test_unknown_modifier_is_refused():
    with pytest.raises(ValueError):
        tk_sequences("Hyper+X")


def test_default_table_has_no_duplicate_accelerators_and_every_menu_is_known():
    table = default_table()
    assert table.conflicts() == {}
    menus = {m for m, _ in MENUS}
    assert {c.menu for c in table} <= menus | {""}
    # every menu item has a mnemonic, and no two items of one menu share it
    for menu in menus:
        letters = [c.text[c.underline].lower() for c in table.menu(menu) if c is not None]
        assert all(c.underline >= 0 for c in table.menu(menu) if c is not None), menu
        assert len(letters) == len(set(letters)), (menu, letters)


def test_issue_keys_are_there():
    table = default_table()
    accels = {c.accel for c in table}
    for key in ("Ctrl+N", "Ctrl+O", "Ctrl+S", "Ctrl+Z", "Ctrl+Y", "Ctrl+X", "Ctrl+C", "Ctrl+V",
                "Ctrl+F", "Ctrl+H", "Ctrl+G", "F3", "F2", "Ctrl+F2", "F5", "Ctrl+W", "Ctrl+Tab"):
        assert key in accels, key


def test_menu_groups_are_separated():
    table = default_table()
    entries = table.menu("File")
    assert entries[0].name == "file.new"
    assert None in entries
    assert entries[entries.index(None) + 1].name == "file.save"
    assert entries[-1].name == "file.quit"


def test_by_path_tolerates_mnemonics_dots_and_case():
    table = default_table()
    assert table.by_path("File/Save").name == "file.save"
    assert table.by_path("File/Save As").name == "file.save_as"
    assert table.by_path("file/save as...").name == "file.save_as"
    assert table.by_path("view.wrap").name == "view.wrap"
    with pytest.raises(KeyError):
        table.by_path("File/Nope")


def test_invoke_runs_the_bound_handler_and_register_replaces_in_place():
    table = CommandTable([Command("a", "&A", "File"), Command("b", "&B", "File")])
    calls = []
    table.bind("a", lambda: calls.append("a"))
    table.invoke("a")
    assert calls == ["a"]
    with pytest.raises(LookupError):
        table.invoke("b")
    table.add(Command("a", "&Again", "File", handler=lambda: calls.append("again")))
    assert [c.name for c in table.menu("File")] == ["a", "b"]
    table.invoke("a")
    assert calls == ["a", "again"]


def test_toolbar_follows_menus_with_separators_and_tooltips_show_keys():
    table = default_table()
    bar = table.toolbar()
    names = [c.name if c else "|" for c in bar]
    assert names[:4] == ["file.new", "file.open", "file.save", "file.save_all"]
    assert names[4] == "|"
    assert table.get("file.save").tooltip == "Save (Ctrl+S)"
    assert table.get("file.open").tooltip == "Open (Ctrl+O)"


def test_shortcut_list_names_menu_label_and_key():
    rows = default_table().shortcuts()
    assert ("File", "Save", "Ctrl+S") in rows
    assert all(accel for _, _, accel in rows)


def test_the_user_guide_names_every_menu_and_every_shortcut():
    """docs/user-guide.md against the code (issue 18, point 21): its menu bar line names the
    menus of MENUS in order — the Agent menu too — and its shortcut table has a row for every
    accelerator: the default table's and those the plug-ins register (the tree, the output
    pane, the agent panel)."""
    import re
    from pathlib import Path

    repo = Path(__file__).resolve().parents[3]
    text = (repo / "docs" / "user-guide.md").read_text(encoding="utf-8")
    line = next(ln for ln in text.splitlines() if ln.startswith("* **Menu bar** —"))
    listed = [m.strip() for m in line.split("—", 1)[1].split("(")[0].split(",")]
    assert listed == [name for name, _ in MENUS]
    rows = {(m.group(1), m.group(3)) for m in re.finditer(
        r"^\| (\w+) \| ([^|]+) \| ([^|]+?)(?: \(.*\))? \|$", text, re.M)}
    keys = {k for _, k in rows}
    missing = [f"{menu} {label} {accel}" for menu, label, accel in default_table().shortcuts()
               if (menu, accel) not in rows]
    registered = re.compile(r"""(?:register_command|\breg)\(\s*"([\w.]+)",\s*"([^"]+)",\s*"([^"]+)",""")
    for path in sorted((repo / "ui" / "tk").glob("*.py")):
        for name, label, accel in registered.findall(path.read_text(encoding="utf-8")):
            if accel not in keys:
                missing.append(f"{name} {label} {accel} ({path.name})")
    assert missing == [], "not in docs/user-guide.md's shortcut table: " + ", ".join(missing)
