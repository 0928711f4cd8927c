"""PCT keeps its promise (Burckhardt et al., ASPLOS 2010): measured, not believed.

1. On bugs of known depth d (d ordering constraints make them fail) among n threads with k decisions, the observed
   hit rate over a fixed set of seeds is at least 1/(n*k^(d-1)), and with a margin: the 99% Wilson lower
   confidence bound of the rate clears it, so the verdict does not hinge on the seeds chosen.
2. On small programs (two racing threads plus the main thread), PCT at depth d reaches every interleaving of the
   program's shared-state events that exhaustive search finds with at most d-1 preemptions.
3. Change points fire: every change point PCT draws falls on a decision that happens (the first version drew them
   over scheduling steps, floor 50, and 89-94% never fired).

k is the largest number of decisions (points where more than one thread could run) any schedule made, read from
the run itself; n counts the main thread. Measured rates are in docs/strategies.md.
"""

from __future__ import annotations

import functools
import math
import threading

import pytest
import racecheck
from racecheck import runtime
from racecheck.search import pct, random_walk

# The subject here is PCT's probability bound over the marked points, not memory:
# explored with memory=False (memory watching adds a warm-up run and steps of its own).
_explore = functools.partial(racecheck.explore, memory=False)

SEEDS = range(4)
PER_SEED = 250  # 1000 schedules per program


def _program(kind: str, noise: int, record: list):
    """A test function with a bug of known depth; it records (bug hit, decisions, event log) instead of failing,
    so one exploration measures the rate over all its schedules.

    * ``init``  (d=1): a user reads a flag before the initialiser set it (user started after the initialiser).
    * ``init-r`` (d=1): the same with the user started first.
    * ``update`` (d=2): lost update, read / point / write in two threads (r1 < w2 and r2 < w1).
    * ``order`` (d=3): a1 b1 a2 b2 exactly (a1 < b1 < a2 < b2), each step behind a point.
    ``noise`` threads each make one point of their own.
    """

    def program() -> None:
        log: list[str] = []
        state = {"n": 0, "init": False}

        def initialiser() -> None:
            racecheck.point("init")
            state["init"] = True
            log.append("init")

        def user() -> None:
            racecheck.point("use")
            log.append("use" if state["init"] else "use-before-init")

        def increment(i: int):
            def body() -> None:
                value = state["n"]
                log.append(f"r{i}")
                racecheck.point("between read and write")
                state["n"] = value + 1
                log.append(f"w{i}")

            return body

        def stepper(tag: str):
            def body() -> None:
                for i in (1, 2):
                    racecheck.point(f"{tag}{i}")
                    log.append(f"{tag}{i}")

            return body

        def noisy() -> None:
            racecheck.point("noise")
            log.append("noise")

        if kind == "init":
            bodies = [initialiser, user]
        elif kind == "init-r":
            bodies = [user, initialiser]
        elif kind == "update":
            bodies = [increment(1), increment(2)]
        else:
            bodies = [stepper("a"), stepper("b")]
        bodies += [noisy] * noise
        threads = [threading.Thread(target=body) for body in bodies]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if kind.startswith("init"):
            hit = "use-before-init" in log
        elif kind == "update":
            hit = state["n"] != 2
        else:
            hit = [e for e in log if e != "noise"] == ["a1", "b1", "a2", "b2"]
        run = runtime.current_run()
        record.append((hit, len(run.arities), tuple(log)))  # every thread is joined: no decision is left

    return program


DEPTH = {"init": 1, "init-r": 1, "update": 2, "order": 3}


def _wilson_lower(hits: int, total: int, z: float = 2.576) -> float:
    p = hits / total
    centre = p + z * z / (2 * total)
    spread = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total))
    return (centre - spread) / (1 + z * z / total)


def _measure(kind: str, noise: int, depth: int) -> tuple[int, int, int]:
    record: list = []
    for seed in SEEDS:
        program = _program(kind, noise, record)
        result = _explore(program, strategy="pct", depth=depth, schedules=PER_SEED, seed=seed,
                                   skip_duplicates=False)  # independent samples: the bound is per execution
        assert result.ok and result.schedules == PER_SEED
    hits = sum(hit for hit, _, _ in record)
    k = max(decisions for _, decisions, _ in record)
    return hits, len(record), k


@pytest.mark.parametrize(
    ("kind", "noise"),
    [("init", 1), ("init-r", 0), ("update", 0), ("update", 1), ("order", 0), ("order", 1)],
)
def test_hit_rate_is_at_least_the_pct_bound(kind, noise):
    d = DEPTH[kind]
    n = 3 + noise  # the main thread, two racing threads, the noise
    hits, total, k = _measure(kind, noise, depth=d)
    bound = 1 / (n * k ** (d - 1))
    rate = hits / total
    assert rate >= bound, f"{kind}: rate {rate:.4f} < bound {bound:.4f} (n={n}, k={k}, d={d})"
    assert _wilson_lower(hits, total) >= bound, (
        f"{kind}: rate {rate:.4f} clears the bound {bound:.4f} only marginally ({hits}/{total}, n={n}, k={k})"
    )


def _interleavings(kind: str, noise: int, strategy: str, **options) -> list[tuple[str, ...]]:
    record: list = []
    result = _explore(_program(kind, noise, record), strategy=strategy, **options)
    assert result.ok
    if strategy == "dfs":
        assert result.exhausted
    return [log for _, _, log in record]


@pytest.mark.parametrize(
    ("kind", "noise", "depth"),
    [("init", 0, 2), ("init", 2, 2), ("update", 0, 2), ("update", 0, 3), ("order", 0, 2), ("order", 0, 3)],
)
def test_pct_reaches_every_interleaving_within_d_minus_1_preemptions(kind, noise, depth):
    wanted = set(_interleavings(kind, noise, "dfs", preemption_bound=depth - 1, schedules=100_000))
    reached = _interleavings(kind, noise, "pct", depth=depth, schedules=500, seed=0)
    missing = wanted - set(reached)
    assert not missing, f"PCT depth {depth} never reached {sorted(missing)[:3]} ({len(missing)} of {len(wanted)})"


def _fired_fraction(monkeypatch, program) -> float:
    counts = {"drawn": 0, "fired": 0}
    original = pct.PCT.end_execution

    def counting(self, chooser, steps):
        counts["drawn"] += len(chooser.change_points)
        counts["fired"] += chooser.fired
        original(self, chooser, steps)

    monkeypatch.setattr(pct.PCT, "end_execution", counting)
    result = _explore(program, strategy="pct", depth=3, schedules=200, seed=0, skip_duplicates=False)
    monkeypatch.undo()
    assert result.ok, result.failure
    assert counts["drawn"] == 2 * 199  # d-1 points in every execution but the first, which measures k
    return counts["fired"] / counts["drawn"]


def test_change_points_fire(monkeypatch):
    """A change point is drawn among the decisions of the longest execution seen so far, so it fires unless this
    execution is shorter. Two racing threads make (almost) the same number of decisions in every schedule: nearly
    all points fire. Programs whose length varies by schedule lose the points past their own end, never most."""
    from classic_bugs import check_then_act_fixed, futures_order_fixed, lost_update_fixed, missed_wakeup_fixed

    for kind in ("init", "update"):
        assert _fired_fraction(monkeypatch, _program(kind, 0, [])) >= 0.95
    fractions = [
        _fired_fraction(monkeypatch, program)
        for program in (
            _program("order", 2, []),
            lost_update_fixed,
            check_then_act_fixed,
            missed_wakeup_fixed,
            futures_order_fixed,
        )
    ]
    assert min(fractions) >= 0.6, fractions
    assert sum(fractions) / len(fractions) >= 0.75, fractions


@pytest.mark.parametrize(
    ("strategy", "text"),
    [
        (lambda: pct.PCT(seed=5, depth=3), "pct:5:{index}:3"),
        (lambda: random_walk.RandomWalk(seed=5), "random:5:{index}"),
    ],
)
def test_an_execution_draws_the_stream_its_seed_text_names(strategy, text):
    """The generator is re-seeded per execution (a fresh one per schedule cost cache-cold state): the stream
    must stay exactly ``random.Random(text)``'s, whatever ran before, so schedule ``index`` is the same in any
    order, worker or process."""
    import random

    strat = strategy()
    for index in (0, 7, 3, 3):
        chooser = strat.new_execution(index)
        chooser.rng.random()  # a previous execution's draws must not leak into the next one
        expected = random.Random(text.format(index=index))
        expected.random()
        assert chooser.rng.getstate() == expected.getstate()
