"""system.spawn is capped: at most max_live processes of an on-demand kind at once (a client,
even an owner's, cannot fork without end)."""

import textwrap
from pathlib import Path

import pytest

from rio.config.supervisor_toml import load_config
from rio.protocol.errors import ConfigError, RioError
from tests.support import RioServer, rio_env, wait_for


def test_max_live_is_read_and_checked(tmp_path: Path) -> None:
    assert load_config().process("agent").max_live == 16       # the built-in default
    user = tmp_path / "supervisor.toml"
    user.write_text("[process.agent]\nmax_live = 3\n")
    assert load_config(user_path=user).process("agent").max_live == 3
    user.write_text("[process.agent]\nmax_live = 0\n")
    with pytest.raises(ConfigError):
        load_config(user_path=user)


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_spawn_beyond_max_live_is_refused_until_one_ends(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    env = rio_env(tmp_path)
    Path(env["RIO_CONFIG_DIR"]).mkdir(parents=True)
    (Path(env["RIO_CONFIG_DIR"]) / "supervisor.toml").write_text(textwrap.dedent("""
        [process.fake]
        max_live = 2
    """))
    srv = RioServer(root, tmp_path, env=env).start()
    try:
        def state(name: str) -> str | None:
            return next((p["state"] for p in srv.call("system.status")["processes"]
                         if p["name"] == name), None)

        for key in ("a", "b"):
            srv.call("system.spawn", {"kind": "fake", "key": key})
        with pytest.raises(RioError) as info:
            srv.call("system.spawn", {"kind": "fake", "key": "c"})
        err = info.value
        assert err.kind == "bus.spawn_limit" and "max_live" in err.message + err.next
        assert state("fake:c") is None
        # asking again for one that is alive is not a new process
        assert srv.call("system.spawn", {"kind": "fake", "key": "a"})["name"] == "fake:a"
        srv.call("system.restart", {"process": "fake:a", "again": False})
        assert wait_for(lambda: state("fake:a") not in ("running", "starting", "stopping"), 30)
        assert srv.call("system.spawn", {"kind": "fake", "key": "c"})["name"] == "fake:c"
    finally:
        srv.stop()
