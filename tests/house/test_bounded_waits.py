"""Every wait in the tests is bounded, and there is one way to poll: ``tests.support.wait_for``.

A loop that waits for something without a deadline hangs the run when the something never
comes: pytest-timeout then kills the test without saying what it waited for. So a ``while
True`` in tests/ (not tests/bench) names its bound — a deadline or a timeout in the loop — or
says on its ``while`` line why it ends anyway (``# ends: …``: a non-blocking read that stops at
EOF, a fake agent's process that the test kills).
"""

from __future__ import annotations

import ast
import re
import time
from pathlib import Path

import pytest

from tests.support import wait_for

TESTS = Path(__file__).resolve().parents[1]
BOUND = re.compile(r"deadline|timeout|monotonic", re.I)


def unbounded_loops(source: str, filename: str = "<source>") -> list[int]:
    """The lines of the ``while True`` loops of ``source`` with no bound in sight: nothing in
    the loop mentions a deadline or a timeout, and its first line says no ``# ends:``."""
    lines = source.splitlines()
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if not (isinstance(node, ast.While) and isinstance(node.test, ast.Constant)
                and node.test.value is True):
            continue
        if "# ends:" in lines[node.lineno - 1]:
            continue
        if not BOUND.search("\n".join(lines[node.lineno - 1:node.end_lineno])):
            found.append(node.lineno)
    return found


def test_no_unbounded_while_true_in_the_tests():
    bad = []
    for path in sorted(TESTS.rglob("*.py")):
        if "bench" in path.relative_to(TESTS).parts:
            continue
        bad += [f"{path.relative_to(TESTS.parent)}:{line}"
                for line in unbounded_loops(path.read_text(encoding="utf-8"), str(path))]
    assert bad == [], "bound these loops (tests.support.wait_for) or say '# ends: why'"


def test_the_finder_tells_a_bounded_loop_from_an_unbounded_one():
    source = (
        "import time\n"
        "def hangs():\n"
        "    while True:\n"
        "        time.sleep(0.1)\n"
        "def bounded(deadline):\n"
        "    while True:\n"
        "        if time.monotonic() > deadline:\n"
        "            break\n"
        "def said():\n"
        "    while True:   # ends: the test kills this process\n"
        "        time.sleep(3600)\n"
        "def other():\n"
        "    while x < 3:\n"
        "        x += 1\n")
    assert unbounded_loops(source) == [3]


def test_wait_for_returns_the_first_true_answer():
    answers = iter([None, 0, "", "ready", "later"])
    assert wait_for(lambda: next(answers), 5, 0.001) == "ready"


def test_wait_for_gives_up_after_its_timeout_with_the_last_answer():
    asked = []

    def never() -> int:
        asked.append(time.monotonic())
        return 0

    assert wait_for(never, 0.05, 0.01) == 0
    # asked again once the time was up, never after: the wait is bounded
    assert asked[-1] - asked[0] >= 0.05 and len(asked) >= 2


def test_wait_for_says_what_it_waited_for_and_what_it_saw():
    with pytest.raises(AssertionError, match=r"waited 0.05 s for the answer; last seen: 41"):
        wait_for(lambda: False, 0.05, 0.01, what="the answer", seen=lambda: 41)
    state = {"n": 0}

    def counting() -> bool:
        state["n"] += 1
        return False

    with pytest.raises(AssertionError, match=r"last seen: False"):
        wait_for(counting, 0.02, 0.005, what="nothing")


def test_wait_for_takes_an_ignored_exception_as_not_yet():
    tries = iter([ConnectionError("not up yet"), ConnectionError("still not"), "up"])

    def call() -> str:
        answer = next(tries)
        if isinstance(answer, Exception):
            raise answer
        return answer

    assert wait_for(call, 5, 0.001, ignore=(ConnectionError,)) == "up"
    with pytest.raises(AssertionError, match=r"last seen: ConnectionError\('down'\)"):
        wait_for(_raises(ConnectionError("down")), 0.02, 0.005, what="the server",
                 ignore=(ConnectionError,))
    assert wait_for(_raises(ConnectionError("down")), 0.02, 0.005,
                    ignore=(ConnectionError,)) is None
    with pytest.raises(ValueError):   # not ignored: the test's own error, at once
        wait_for(_raises(ValueError("bug")), 5, 0.001, ignore=(ConnectionError,))


def test_wait_for_spends_its_steps_as_told():
    pauses: list[float] = []
    answers = iter([False, False, True])
    assert wait_for(lambda: next(answers), 5, 0.25, pause=pauses.append) is True
    assert pauses == [0.25, 0.25]


def _raises(exc: Exception):
    def predicate() -> bool:
        raise exc
    return predicate


def test_wait_for_async_waits_between_the_loops_tasks_and_fails_on_its_timeout():
    import asyncio

    from tests.support import wait_for_async

    async def main() -> tuple[str, list[str]]:
        box: list[str] = []

        async def later() -> None:
            await asyncio.sleep(0.01)
            box.append("done")

        task = asyncio.ensure_future(later())
        got = await wait_for_async(lambda: box, 5, what="the other task")
        await task
        with pytest.raises(AssertionError, match=r"waited 0.02 s for nothing; last seen: \[\]"):
            await wait_for_async(lambda: [], 0.02, 0.005, what="nothing")
        return got[0], box

    assert asyncio.run(main()) == ("done", ["done"])
