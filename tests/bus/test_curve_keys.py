"""CURVE key files: modes, formats, authorisation and the client-side lookup."""

import stat

import pytest
import zmq
import zmq.auth

from actors.bus import curve_keys
from rio.protocol.errors import BusError, ConfigError


def mode(path):
    return stat.S_IMODE(path.stat().st_mode)


def test_server_keys_are_private_and_readable_by_zmq(tmp_path):
    base = tmp_path / "curve"
    pair, created = curve_keys.create_server_keys(base)
    assert created
    public_file, secret_file = curve_keys.server_paths(base)
    assert mode(base) == 0o700
    assert mode(base / curve_keys.AUTHORIZED) == 0o700
    assert mode(secret_file) == 0o600
    assert mode(public_file) == 0o600
    assert zmq.auth.load_certificate(secret_file) == (pair.public, pair.secret)
    assert zmq.auth.load_certificate(public_file) == (pair.public, None)
    assert zmq.curve_public(pair.secret) == pair.public


def test_second_create_keeps_keys_unless_replaced(tmp_path):
    base = tmp_path / "curve"
    first, _ = curve_keys.create_server_keys(base)
    again, created = curve_keys.create_server_keys(base)
    assert (again, created) == (first, False)
    rotated, created = curve_keys.create_server_keys(base, replace=True)
    assert created and rotated.public != first.public
    assert curve_keys.load_server_keys(base) == rotated


def test_a_loose_folder_mode_is_tightened(tmp_path):
    base = tmp_path / "curve"
    base.mkdir(mode=0o755)
    base.chmod(0o755)
    curve_keys.create_server_keys(base)
    assert mode(base) == 0o700


def test_missing_server_keys_name_rio_keys(tmp_path):
    with pytest.raises(BusError) as info:
        curve_keys.load_server_keys(tmp_path / "none")
    assert info.value.kind == "bus.no_server_keys"
    assert "rio keys" in info.value.next


def test_client_keys_are_created_and_authorised(tmp_path):
    base = tmp_path / "curve"
    pair, secret_file = curve_keys.create_client_keys("laptop", base)
    assert mode(secret_file) == 0o600
    assert mode(base / curve_keys.CLIENTS) == 0o700
    assert curve_keys.authorized(base) == {"laptop": pair.public}
    # the authorised folder is exactly what the ZAP authenticator loads
    assert zmq.auth.load_certificates(base / curve_keys.AUTHORIZED) == {pair.public: True}
    assert curve_keys.revoke("laptop", base)
    assert curve_keys.authorized(base) == {}
    assert not curve_keys.revoke("laptop", base)


def test_authorize_checks_the_key_and_the_name(tmp_path):
    base = tmp_path / "curve"
    public, _secret = zmq.curve_keypair()
    path = curve_keys.authorize("ci-runner", public.decode(), base)
    assert mode(path) == 0o600
    assert curve_keys.authorized(base) == {"ci-runner": public}
    with pytest.raises(ConfigError) as info:
        curve_keys.authorize("x", "not a key", base)
    assert info.value.kind == "config.bad_public_key"
    with pytest.raises(ConfigError):
        curve_keys.authorize("../escape", public, base)


def test_client_lookup_uses_the_only_key_or_the_named_one(tmp_path):
    folder = tmp_path / "keys"
    env = {"RIO_CLIENT_KEY_DIR": str(folder)}
    with pytest.raises(BusError) as info:
        curve_keys.load_client_keys(env)
    assert info.value.kind == "bus.no_client_key"
    folder.mkdir()
    one_public, one_secret = zmq.curve_keypair()
    curve_keys.write_key_file(folder / "one.key_secret", one_public, one_secret)
    assert curve_keys.load_client_keys(env) == curve_keys.KeyPair(one_public, one_secret)
    two_public, two_secret = zmq.curve_keypair()
    curve_keys.write_key_file(folder / "two.key_secret", two_public, two_secret)
    with pytest.raises(BusError) as info:
        curve_keys.load_client_keys(env)
    assert info.value.kind == "bus.ambiguous_client_key"
    assert "RIO_CLIENT_KEY" in info.value.next
    picked = curve_keys.load_client_keys(dict(env, RIO_CLIENT_KEY="two"))
    assert picked.public == two_public


def test_client_lookup_defaults_to_the_config_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("RIO_CONFIG_DIR", str(tmp_path / "config"))
    pair, _ = curve_keys.create_client_keys("me")
    assert curve_keys.load_client_keys({}) == pair


def test_a_public_only_file_is_not_a_client_key(tmp_path):
    public, _ = zmq.curve_keypair()
    curve_keys.write_key_file(tmp_path / "c.key_secret", public)
    with pytest.raises(ConfigError) as info:
        curve_keys.load_client_keys({"RIO_CLIENT_KEY_DIR": str(tmp_path)})
    assert "key_secret" in info.value.next


def test_a_garbled_key_file_is_a_config_error(tmp_path):
    bad = tmp_path / "server.key_secret"
    bad.write_text("nothing here\n")
    with pytest.raises(ConfigError) as info:
        curve_keys.load_server_keys(tmp_path)
    assert info.value.kind == "config.bad_key_file"


def test_rio_keys_gives_roles_and_lists_them(tmp_path, monkeypatch, capsys):
    from rio.cli import main as cli
    monkeypatch.setenv("RIO_CONFIG_DIR", str(tmp_path))
    assert cli.main(["keys", "--client", "viewer", "--role", "observer"]) == 0
    assert cli.main(["keys", "--client", "dev"]) == 0                      # editor by default
    pair, _ = curve_keys.create_client_keys("boss", tmp_path / "elsewhere", authorise=False)
    assert cli.main(["keys", "--authorize", "boss", pair.public.decode(), "--role",
                     "owner"]) == 0
    assert sorted(r for _n, r in curve_keys.authorized_roles().values()) == \
        ["editor", "observer", "owner"]
    assert cli.main(["keys", "--set-role", "viewer", "editor"]) == 0
    capsys.readouterr()
    assert cli.main(["keys", "--list"]) == 0
    listed = capsys.readouterr().out
    assert "viewer" in listed and "observer" not in listed and "owner" in listed
    assert cli.main(["keys", "--set-role", "ghost", "owner"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rio: config.unknown_client: ")


def test_rio_keys_add_is_client_or_authorize(tmp_path, monkeypatch, capsys):
    from rio.cli import main as cli
    monkeypatch.setenv("RIO_CONFIG_DIR", str(tmp_path))
    assert cli.main(["keys", "add", "here"]) == 0                       # made here, editor
    pair, _ = curve_keys.create_client_keys("far", tmp_path / "other", authorise=False)
    assert cli.main(["keys", "add", "far", pair.public.decode(), "--role", "owner"]) == 0
    assert {n: r for n, r in curve_keys.authorized_roles().values()} == \
        {"here": "editor", "far": "owner"}
    capsys.readouterr()
    assert cli.main(["keys", "remove", "far"]) == cli.EXIT_USAGE
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("rio: usage: ")


@pytest.mark.parametrize("form", ["add", "authorize"])
def test_a_public_key_that_starts_with_a_dash_is_taken_as_the_key(tmp_path, monkeypatch, form):
    """Z85 starts 1 key in 85 with "-" (the first 4 bytes ≥ 63·85⁴): argparse took such a key
    for an option and `rio keys add NAME KEY` failed now and then."""
    from zmq.utils import z85

    from rio.cli import main as cli
    monkeypatch.setenv("RIO_CONFIG_DIR", str(tmp_path))
    raw = (63 * 85 ** 4).to_bytes(4, "big") + bytes(range(28))
    key = z85.encode(raw).decode()
    assert key.startswith("-") and len(key) == 40
    argv = ["keys", "add", "far", key, "--role", "owner"] if form == "add" else \
        ["keys", "--authorize", "far", key, "--role", "owner"]
    assert cli.main(argv) == 0
    assert [(n, r) for n, r in curve_keys.authorized_roles().values()] == [("far", "owner")]
    assert curve_keys.check_public_key(key) in {
        k if isinstance(k, bytes) else k.encode() for k in curve_keys.authorized_roles()}
