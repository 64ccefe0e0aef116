"""rio.files.atomic: private JSON files replaced atomically."""

import json
import stat

import pytest

from rio.files.atomic import write_json


def test_writes_private_json_and_replaces_it(tmp_path):
    path = tmp_path / "state" / "x.json"
    write_json(path, {"a": 1})
    write_json(path, {"b": 2}, sort_keys=True)
    assert json.loads(path.read_text()) == {"b": 2}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temp(tmp_path):
    path = tmp_path / "x.json"
    write_json(path, {"keep": True})
    with pytest.raises(TypeError):
        write_json(path, {"bad": object()})
    assert json.loads(path.read_text()) == {"keep": True}
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]
