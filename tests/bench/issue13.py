"""Issue 13's table: each goal with the figure the issue reported ("before (issue 13)"), the one
measured now (min / median / max over the runs, each run with its own floors), the ratio to
its floor or peer, and a verdict on the median. ``python -m tests.bench --runs 3`` prints it
after the rows it is made from; a row whose benchmark did not run says so."""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass
from typing import Callable

from tests.bench.common import Row


@dataclass(frozen=True)
class Goal:
    what: str
    before: str                  # the "today", verbatim in substance
    goal: str
    row: str                     # the benchmark row it reads: a regex matched at the start
    unit: str = "ms"
    ratio_of: str = ""           # "floor": value / that row's floor; "" for none
    ok: Callable[[float, float | None], bool] = lambda v, r: True
    #: Made from two rows of one run: (row regex, other row regex) → value a / b as the ratio.
    versus: str = ""


def _ms(limit: float) -> Callable[[float, float | None], bool]:
    return lambda v, r: v <= limit


def _ratio(limit: float) -> Callable[[float, float | None], bool]:
    return lambda v, r: r is not None and r <= limit


GOALS: list[Goal] = [
    Goal('rio chat "hi", loopback model, no instance running', "3.2–3.8 s (11 s loaded)",
         "≤ 1.5 s", re.escape('rio chat "hi", no instance running'), ok=_ms(1500)),
    Goal('rio chat "hi", attached to a running one', "0.9–1.4 s", "≤ 0.6 s",
         re.escape('rio chat "hi", attached to a running one'), ok=_ms(600)),
    Goal("rio serve → core answers buffer.list", "0.75–1.5 s", "≤ 0.5 s",
         "rio serve → core answers buffer.list", ok=_ms(500)),
    Goal("cold start to a window (seen outside) vs idlelib FILE", "1.2 s vs 0.4 s = 3.0×",
         "≤ 0.75×", re.escape("first mapped window, rio FILE vs idlelib FILE"), unit="s",
         ratio_of="floor", ok=_ratio(0.75)),
    # issue 20: what the user waits for is the file, not a window (ADR-0043)
    Goal("first paint is the file vs idlelib FILE (issue 20)", "~1.8× (grey window first)",
         "≤ 1.0×", re.escape("first paint is the file: rio FILE vs idlelib FILE"), unit="s",
         ratio_of="floor", ok=_ratio(1.0)),
    # issue 20: sessions forked from the zygote (ADR-0039)
    Goal("each added idle API conversation, USS (issue 20)", "~34 MB (a new interpreter)",
         "≤ 15 MB", re.escape("api: each added conversation (USS"), unit="MB",
         ok=lambda v, r: v <= 15),
    Goal("each added idle ACP conversation, USS (issue 20)", "~46 MB (a new interpreter)",
         "≤ 15 MB", re.escape("acp: each added conversation (USS"), unit="MB",
         ok=lambda v, r: v <= 15),
    Goal("core kill -9 → answering p50 (vs bare import)", "0.49–0.82 s", "≤ 0.5 s, ≤ 2.5×",
         re.escape("core kill -9 → answering p50 (floor: bare import)"), ratio_of="floor",
         ok=lambda v, r: v <= 500 and r is not None and r <= 2.5),
    Goal("agent session start → ready for a turn", "— (not measured)", "≤ 0.3 s",
         "agent session: spawn → answers session.status", ok=_ms(300)),
    Goal("keystroke → core → widget p50, 1 KB", "1.10 ms (loaded 1.7)", "≤ 1 ms",
         re.escape("keystroke→core→widget, 1 KB (p50)"), ok=_ms(1)),
    Goal("keystroke → core → widget p99, 1 KB", "5.5 ms (loaded 11.5)", "≤ 2 ms",
         re.escape("keystroke→core→widget, 1 KB (p99)"), ok=_ms(2)),
    Goal("keystroke → core → widget p50, big file", "1.35 ms (loaded 2.0)", "≤ 1 ms",
         r"keystroke→core→widget, \d+ MB \(p50\)", ok=_ms(1)),
    Goal("keystroke → core → widget p99, big file", "5.8 ms (loaded 13.8)", "≤ 2 ms",
         r"keystroke→core→widget, \d+ MB \(p99\)", ok=_ms(2)),
    Goal("buffer.replace → reply + event p50 vs raw ZeroMQ", "4.2–4.8× (loaded 8.9–11.5×)",
         "≤ 3×", "buffer.replace p50 @ 1 MB", unit="µs", ratio_of="floor", ok=_ratio(3)),
    Goal("buffer.replace p99", "2.7–3.4 ms (loaded 4.9–7.3)", "≤ 2 ms",
         "buffer.replace p99 @ 1 MB", unit="µs", ok=lambda v, r: v <= 2000),
    Goal("a key in a 1 MB single-line file p50", "3.4 ms", "≤ 2 ms",
         re.escape("keystroke, 1 MB single line (p50)"), ok=_ms(2)),
    Goal("a key in a 1 MB single-line file p99", "> 16 ms", "≤ 16 ms",
         re.escape("keystroke, 1 MB single line (p99)"), ok=_ms(16)),
    Goal("a key in the 1 MB line vs a key at 1 KB, p50", "3.4 / 1.10 ms = 3.1×", "same cost",
         re.escape("keystroke, 1 MB single line (p50)"),
         versus=re.escape("keystroke→core→widget, 1 KB (p50)"), ok=lambda v, r: r <= 1.25),
    Goal("RSS growth (window + core) / file, big file open", "3.3×", "≤ 3×",
         r"RSS growth \(ui \+ core\) / file", unit="x", ok=lambda v, r: v <= 3),
    Goal("RSS of all processes / file, big file open", "— (3.3× was the growth)", "≤ 3×",
         "RSS of all processes / file", unit="x", ok=lambda v, r: v <= 3),
    Goal("open big file vs read + decode", "1.91–2.25×", "≤ 2×", r"open \d+ MB$", ratio_of="floor",
         ok=_ratio(2)),
    Goal("open big file: first screen", "0.44–0.58 s", "≤ 0.5 s", r"open \d+ MB: first screen",
         unit="s", ok=lambda v, r: v <= 0.5),
    Goal("time to first delta vs bare httpx reader", "15 ms vs 3–4 ms", "≤ bare + 5 ms",
         re.escape("time to first delta (floor: bare sync httpx)"), ratio_of="floor",
         ok=lambda v, r: r is not None and v - v / r <= 5),
    Goal("RSS of all processes, idle desktop, no document", "— (not measured)", "≤ 150 MB",
         "RSS of all processes, idle desktop", unit="MB", ok=lambda v, r: v <= 150),
]


def _find(rows: list[Row], prefix: str) -> Row | None:
    return next((r for r in rows if re.match(prefix, r.name) and r.value == r.value), None)


def _fmt(xs: list[float]) -> str:
    if not xs:
        return "not run"
    def one(x: float) -> str:
        return f"{x:.0f}" if abs(x) >= 100 else f"{x:.3g}"
    lo, mid, hi = min(xs), statistics.median(xs), max(xs)
    return one(mid) if len(xs) == 1 else f"{one(lo)} / {one(mid)} / {one(hi)}"


def table(runs: list[list[Row]], loads: list[str]) -> list[str]:
    """The issue's table as text lines: min / median / max over ``runs``."""
    out = [f"Issue 13: {len(runs)} run(s); load average (1/5/15 min) before each: "
           + "; ".join(loads),
           f"{'what':<56} {'before (issue 13)':<28} {'now min / median / max':<26} "
           f"{'ratio (median)':<14} {'goal':<16} verdict"]
    out.append("-" * len(out[1]))
    for g in GOALS:
        found = [r for r in (_find(rows, g.row) for rows in runs) if r is not None]
        values = [r.value for r in found]
        ratios = [r.ratio for r in found if g.ratio_of and r.ratio is not None]
        if g.versus:
            pairs = [(_find(rows, g.row), _find(rows, g.versus)) for rows in runs]
            ratios = [a.value / b.value for a, b in pairs if a and b and b.value]
        if not found:
            out.append(f"{g.what:<56} {g.before:<28} {'not run':<26} {'-':<14} {g.goal:<16} -")
            continue
        mid = statistics.median(values)
        mid_ratio = statistics.median(ratios) if ratios else None
        verdict = "met" if g.ok(mid, mid_ratio) else "MISSED"
        ratio = f"{mid_ratio:.2f}×" if mid_ratio is not None else "-"
        if ratios and len(ratios) > 1:
            ratio += f" ({min(ratios):.2f}–{max(ratios):.2f})"
        out.append(f"{g.what:<56} {g.before:<28} {_fmt(values) + ' ' + g.unit:<26} "
                   f"{ratio:<14} {g.goal:<16} {verdict}")
    return out


def runs_from_json(path: str) -> tuple[list[list[Row]], list[str]]:
    """The runs in a results.json (rows in order; a run starts where the first row repeats)."""
    import json
    data = json.loads(open(path).read())
    fields = Row.__dataclass_fields__
    rows = [Row(**{k: v for k, v in r.items() if k in fields}) for r in data["rows"]]
    runs: list[list[Row]] = []
    for r in rows:
        if not runs or (r.name == runs[0][0].name and r.group == runs[0][0].group):
            runs.append([])
        runs[-1].append(r)
    return runs, data.get("load_averages", [])


if __name__ == "__main__":      # python -m tests.bench.issue13 [results.json]: the table again
    import sys

    from tests.bench.common import RESULTS
    print("\n".join(table(*runs_from_json(sys.argv[1] if len(sys.argv) > 1 else
                                            str(RESULTS)))))
