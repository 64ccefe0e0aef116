"""rio/files/digest.py: the same sha256 as hashlib, with or without OpenSSL."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from rio.config.instance import default_name, journal_dir
from rio.files.digest import name_hash, sha256


@given(st.text(max_size=300), st.integers(min_value=1, max_value=64))
def test_name_hash_is_a_prefix_of_the_sha256_hex(text, length):
    assert name_hash(text, length) == hashlib.sha256(text.encode()).hexdigest()[:length]


@given(st.binary(max_size=5000))
def test_sha256_is_hashlibs(data):
    assert sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
    grown = sha256()
    grown.update(data)
    assert grown.hexdigest() == hashlib.sha256(data).hexdigest()


def test_instance_names_and_state_folders_are_unchanged(tmp_path):
    # Names and folders already on disk (journals) keep resolving after the change.
    root = tmp_path / "proj"
    assert default_name(root) == f"proj-{hashlib.sha256(str(root).encode()).hexdigest()[:6]}"
    assert journal_dir(root).parent.name == hashlib.sha256(str(root).encode()).hexdigest()[:16]
