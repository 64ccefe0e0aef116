"""rio/config/supervisor_toml.py: loading, overriding, validating supervisor.toml; the restart rule."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.runtime.actor_registry import ON_DEMAND, known_actors
from rio.config.supervisor_toml import (
    RestartBudget,
    backoff_delay,
    find_key_line,
    load_config,
    packaged_path,
)
from rio.protocol.errors import ConfigError

REPO = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, text: str, name: str = "supervisor.toml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


# ------------------------------------------------------------------------- shipped file

def test_the_repo_root_file_is_the_packaged_one() -> None:
    assert packaged_path().name == "default_supervisor.toml"
    assert (REPO / "supervisor.toml").read_bytes() == packaged_path().read_bytes()


def test_the_shipped_defaults() -> None:
    config = load_config()
    assert [p.name for p in config.processes] == ["core", "agent", "mcp", "fake", "ui"]
    core = config.process("core")
    assert core.actors == ("documents", "workspace", "runner", "conversations", "gate",
                           "agents")
    assert core.restart == "always"
    assert (core.max_restarts, core.window_s) == (5, 60.0)
    assert (core.backoff_initial_s, core.backoff_max_s) == (0.1, 5.0)
    assert core.stop_graces() == {"stdin_grace": 1.0, "term_grace": 1.0, "kill_grace": 1.0}
    assert (core.ping_interval_s, core.ping_misses) == (1.0, 3)
    agent = config.process("agent")
    assert (agent.actors, agent.per, agent.restart) == (("agent_session",), "conversation",
                                                        "on-failure")
    assert config.process_for("ui").when == "desktop"
    assert config.process_for("gate") is core
    assert [p.name for p in config.to_start(desktop=False)] == ["core", "agent", "mcp", "fake"]
    assert [p.name for p in config.to_start(desktop=True)] == ["core", "agent", "mcp", "fake",
                                                               "ui"]
    assert config.process("fake").per == "conversation"  # the fault harness's, on demand
    # Rio's MCP endpoint: one process, started by the first ACP conversation (ADR-0034)
    endpoint = config.process("mcp")
    assert (endpoint.actors, endpoint.per, endpoint.restart) == (("mcp",), "demand", "always")
    assert config.placements == ("isolated",) and config.placement is None
    assert config.sources == (packaged_path(),)
    with pytest.raises(KeyError):
        config.process("nope")


def test_the_isolated_placement_gives_each_actor_its_own_process() -> None:
    config = load_config(placement="isolated")
    hosts = {actor: config.process_for(actor).name for actor in known_actors()}
    assert hosts == {"documents": "documents", "workspace": "workspace", "runner": "runner",
                     "conversations": "conversations", "gate": "gate", "agents": "agents",
                     "mcp": "mcp", "agent_session": "agent", "fake_agent": "fake", "ui": "ui"}
    assert all(len(p.actors) == 1 for p in config.processes)
    assert config.process("gate").restart == "always"
    assert config.placement == "isolated"


def test_an_unknown_placement_names_the_ones_there_are() -> None:
    with pytest.raises(ConfigError) as info:
        load_config(placement="scattered")
    assert info.value.kind == "config.unknown_placement"
    assert "isolated" in info.value.next


# ----------------------------------------------------------------------------- the user copy

def test_the_user_copy_overrides_key_by_key(tmp_path: Path) -> None:
    user = write(tmp_path, """
        [defaults]
        max_restarts = 2
        term_grace_ms = 250

        [process.core]
        restart = "never"
    """)
    config = load_config(user_path=user)
    core = config.process("core")
    assert core.restart == "never"
    assert core.actors == ("documents", "workspace", "runner", "conversations",
                           "gate", "agents")  # kept from shipped
    assert core.max_restarts == 2 and core.term_grace_s == 0.25
    assert config.process("agent").max_restarts == 2
    assert config.process("agent").stdin_grace_s == 1.0
    assert config.sources == (packaged_path(), user)


def test_the_user_copy_can_move_an_actor_and_change_a_placement(tmp_path: Path) -> None:
    user = write(tmp_path, """
        [process.core]
        actors = ["documents", "workspace", "conversations", "gate", "agents"]

        [process.endpoint]
        actors = ["runner"]
        restart = "never"

        [placement.isolated.gate]
        max_restarts = 9
    """)
    config = load_config(user_path=user)
    assert config.process_for("runner").name == "endpoint"
    assert config.process("endpoint").restart == "never"
    isolated = load_config(user_path=user, placement="isolated")
    assert isolated.process("gate").max_restarts == 9
    assert "endpoint" not in [p.name for p in isolated.processes]  # its actor moved away


def test_a_missing_user_copy_means_the_defaults(tmp_path: Path) -> None:
    assert load_config(user_path=tmp_path / "absent.toml") == load_config()


BAD = [
    # (user file, line blamed, words in the reason)
    ("[defaults]\nmax_restarts = 5\nrestart = always\n", 3, "TOML syntax"),
    ("[defaults]\n\n# a comment\nrestart = \"sometimes\"\n", 4, "restart must be one of"),
    ("[process.core]\nrestrat = \"always\"\n", 2, "unknown key 'restrat'"),
    ("[defaults]\nmax_restarts = \"5\"\n", 2, "must be a whole number"),
    ("[defaults]\nmax_restarts = true\n", 2, "must be a whole number"),
    ("[defaults]\nbackoff_initial_ms = 1.5\n", 2, "must be a whole number"),
    ("[defaults]\nping_misses = 0\n", 2, "at least 1"),
    ("[defaults]\nbackoff_initial_ms = 9000\n", 2, "below backoff_initial_ms"),
    ("[process.core]\nactors = [\"documents\", \"docs\"]\n", 2, "unknown actor 'docs'"),
    ("[process.core]\nactors = []\n", 2, "non-empty list"),
    ("# mine\n[process.extra]\nwhen = \"desktop\"\nactors = [\"gate\"]\n", 4,
     "'gate' is in two processes"),
    ("[process.core]\nactors = [\"documents\", \"workspace\", \"runner\", \"conversations\"]\n",
     2, "no process hosts gate"),
    ("[process.extra]\nrestart = \"never\"\n", 1, "has no actors"),
    ("[process.agent]\nper = \"turn\"\n", 2, "per must be one of"),
    ("[processes.core]\nrestart = \"never\"\n", 1, "unknown table 'processes'"),
    ("process.core.restart = 3\n", 1, "restart must be one of"),
    ("[placement.isolated.gate]\nactors = [\"gate\", \"runner\"]\n", 2,
     "'runner' is in two processes"),
    ("[process.Core]\nactors = [\"ui\"]\n", 1, "bad process name"),
]


@pytest.mark.parametrize(("text", "line", "reason"), BAD)
def test_a_bad_user_copy_is_refused_with_its_file_and_line(tmp_path: Path, text: str,
                                                           line: int, reason: str) -> None:
    user = write(tmp_path, text)
    placement = "isolated" if "placement" in text else None
    with pytest.raises(ConfigError) as info:
        load_config(user_path=user, placement=placement)
    error = info.value
    assert error.kind == "config.invalid"
    assert str(user) in error.message and f"line {line}:" in error.message
    assert reason in error.message
    assert error.next == (f"Fix supervisor.toml at line {line} "
                          "(or delete your copy to use the defaults)")
    assert error.details == {"file": str(user), "line": line}


def test_a_bad_shipped_file_is_blamed_on_itself(tmp_path: Path) -> None:
    shipped = write(tmp_path, """
        [defaults]
        restart = "on-failure"

        [process.all]
        actors = ["documents", "conversations", "gate", "agent_session", "ui", "ui"]
    """, name="default_supervisor.toml")
    with pytest.raises(ConfigError) as info:
        load_config(shipped_path=shipped)
    assert "line 5:" in info.value.message and "listed twice" in info.value.message
    assert "reinstall" in info.value.next


def test_an_unreadable_file_is_a_config_error(tmp_path: Path) -> None:
    user = tmp_path / "supervisor.toml"
    user.write_bytes(b"[defaults]\nrestart = \"\xff\"\n")
    with pytest.raises(ConfigError) as info:
        load_config(user_path=user)
    assert info.value.kind == "config.invalid" and str(user) in info.value.message


def test_a_minimal_shipped_file_gets_built_in_defaults(tmp_path: Path) -> None:
    shipped = write(tmp_path, """
        [process.all]
        actors = ["documents", "conversations", "gate", "agent_session", "ui"]
    """)
    spec = load_config(shipped_path=shipped).process("all")
    assert (spec.restart, spec.max_restarts, spec.per, spec.when) == ("on-failure", 5,
                                                                      "instance", "always")


# ------------------------------------------------------------------------ finding lines

def test_find_key_line() -> None:
    text = textwrap.dedent("""
        # comment
        [defaults]
        restart = "always"

        [process.core]
        actors = [
          "documents",
        ]
        "max_restarts" = 2
        [process . "agent"]
        when.x = 1
    """).lstrip("\n")
    assert find_key_line(text, ("defaults", "restart")) == 3
    assert find_key_line(text, ("defaults",)) == 2
    assert find_key_line(text, ("process", "core", "actors")) == 6
    assert find_key_line(text, ("process", "core", "max_restarts")) == 9
    assert find_key_line(text, ("process", "core", "absent")) == 5   # its table
    assert find_key_line(text, ("process", "agent", "when", "x")) == 11
    assert find_key_line(text, ("process",)) == 5                    # first table inside
    assert find_key_line(text, ("elsewhere",)) == 1


# ------------------------------------------------------------------------ restart budget

def test_backoff_doubles_up_to_the_cap() -> None:
    assert [backoff_delay(n, 0.1, 1.0) for n in range(6)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    assert backoff_delay(10_000, 0.1, 5.0) == 5.0
    assert backoff_delay(3, 0.0, 5.0) == 0.0


def test_the_budget_gives_up_after_five_restarts_in_sixty_seconds() -> None:
    budget = RestartBudget("always", 5, 60, 0.1, 5.0)
    decisions = [budget.record_exit(t) for t in (0, 1, 2, 3, 4)]
    assert all(d.restart for d in decisions)
    assert [d.delay_s for d in decisions] == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.6])
    sixth = budget.record_exit(5)
    assert not sixth.restart
    assert sixth.reason == "gave up after 5 restarts in 60 s"
    # The window slides: 60 s after the first restart one slot is free again.
    later = budget.record_exit(60.5)
    assert later.restart and later.delay_s == pytest.approx(1.6)
    assert budget.restarts_in_window(200) == 0
    fresh = budget.record_exit(200)
    assert fresh.restart and fresh.delay_s == pytest.approx(0.1)


def test_the_policy_decides_first() -> None:
    assert not RestartBudget("never", 5, 60, 0.1, 5).record_exit(0).restart
    on_failure = RestartBudget("on-failure", 5, 60, 0.1, 5)
    assert not on_failure.record_exit(0, failed=False).restart
    assert on_failure.record_exit(0, failed=True).restart
    assert RestartBudget("always", 5, 60, 0.1, 5).record_exit(0, failed=False).restart


def test_reset_forgets_past_restarts() -> None:
    budget = RestartBudget("always", 1, 60, 0.1, 5)
    assert budget.record_exit(0).restart
    assert not budget.record_exit(1).restart
    budget.reset()
    assert budget.record_exit(2).restart


def test_a_spec_builds_its_budget() -> None:
    budget = load_config().process("core").budget()
    assert (budget.policy, budget.max_restarts, budget.window_s) == ("always", 5, 60.0)


@given(gaps=st.lists(st.floats(min_value=0, max_value=30, allow_nan=False), max_size=40),
       max_restarts=st.integers(min_value=0, max_value=6),
       window=st.floats(min_value=0.5, max_value=100, allow_nan=False))
def test_no_window_ever_holds_more_restarts_than_allowed(gaps: list[float], max_restarts: int,
                                                         window: float) -> None:
    budget = RestartBudget("always", max_restarts, window, 0.1, 5.0)
    now, granted = 0.0, []
    for gap in gaps:
        now += gap
        decision = budget.record_exit(now)
        if decision.restart:
            granted.append(now)
            assert 0.1 <= decision.delay_s <= 5.0
        else:
            assert decision.reason.startswith("gave up")
    for start in granted:
        inside = [t for t in granted if start <= t < start + window]
        assert len(inside) <= max_restarts


def test_a_placement_takes_its_actors_out_of_the_base_processes(tmp_path: Path) -> None:
    user = write(tmp_path, """
        [placement.isolated.gate]
        actors = ["gate", "ui"]
    """)
    config = load_config(user_path=user, placement="isolated")
    assert config.process_for("ui").name == "gate"
    assert [p.name for p in config.processes] == ["agent", "mcp", "fake", "documents",
                                                  "conversations", "gate", "workspace",
                                                  "runner", "agents"]  # no "ui"


# ------------------------------------------------------------------- one list of actors

def test_the_shipped_file_places_every_actor_of_the_registry_and_no_other() -> None:
    config = load_config(actors=known_actors(), on_demand=ON_DEMAND)
    placed = {actor for p in config.processes for actor in p.actors}
    assert placed == set(known_actors())


def test_the_registry_has_a_factory_for_every_actor_a_host_starts() -> None:
    from actors.runtime.actor_registry import OTHER_PROCESSES, factory_for
    for name in known_actors():
        if name not in OTHER_PROCESSES:
            assert callable(factory_for(name)), name
    assert factory_for("no_such_actor") is None


def test_an_actor_the_registry_does_not_know_is_refused(tmp_path: Path) -> None:
    user = write(tmp_path, """
        [process.core]
        actors = ["documents", "workspace", "runner", "conversations", "gate", "agents",
                  "mystery"]
    """)
    with pytest.raises(ConfigError) as info:
        load_config(user_path=user, actors=known_actors(), on_demand=ON_DEMAND)
    assert "unknown actor 'mystery'" in info.value.message and "line 2:" in info.value.message
