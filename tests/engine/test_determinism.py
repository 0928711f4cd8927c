"""A schedule that does not replay is a reported failure that says where, never a silent pass: ReplayDivergence for a
token, kind "nondeterminism" for explore(check_determinism=True); and our own targets are deterministic."""

import functools
import threading

import classic_bugs
import determinism_targets
import pytest
import racecheck

# The subject here is where a diverging replay is reported, step by step, not memory:
# explored with memory=False (memory watching adds a warm-up run and steps of its own).
_explore = functools.partial(racecheck.explore, memory=False)

MODE = {"gate": False}  # module state a test changes between recording and replaying: nondeterminism on demand


def order_depends_on_outside_state():
    log = []
    gate = threading.Event()

    def worker(name):
        racecheck.point(f"ready {name}")
        if name == "a":
            gate.set()
        elif MODE["gate"]:
            gate.wait()  # only when replaying: T2 now waits for T1
        racecheck.point(f"work {name}")
        log.append(name)

    threads = [threading.Thread(target=worker, args=(n,)) for n in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert log == ["a", "b"], f"out of order: {log}"


def test_replay_divergence_is_a_failure_not_bad_input():
    assert not issubclass(racecheck.ReplayDivergence, racecheck.TokenError)
    assert issubclass(racecheck.ReplayDivergence, racecheck.RacecheckError)


def test_a_replay_that_takes_another_path_raises_and_says_where():
    MODE["gate"] = False
    try:
        failure = _explore(order_depends_on_outside_state, strategy="random", schedules=200).failure
        assert failure is not None
        MODE["gate"] = True  # the same schedule now finds T2 blocked where it ran
        with pytest.raises(racecheck.ReplayDivergence) as info:
            racecheck.replay(order_depends_on_outside_state, failure.token)
    finally:
        MODE["gate"] = False
    text = str(info.value)
    assert "\n" not in text
    assert "at step " in text and "the token expected T" in text and "ran instead: T" in text
    assert "at step 5: the token expected T2 to run next (now at 'wait Event#1' @test_determinism.py:" in text
    assert "ran instead: T1 'begin' @test_determinism.py:" in text  # operations and lines, in user terms
    assert "Likely cause" in text and "unseeded randomness" in text
    for internal in ("choice", "arity", "decision ", "index"):
        assert internal not in text


def test_a_replay_that_ends_early_raises():
    def short():
        racecheck.point("only")

    failure = _explore(classic_bugs.lost_update, strategy="random", schedules=100).failure
    token = racecheck.search.tokens.decode(failure.token)
    # same function identity and config, fewer decisions: re-encode the token for a function with another body
    short.__module__, short.__qualname__ = classic_bugs.lost_update.__module__, classic_bugs.lost_update.__qualname__
    assert token.picked  # the token records which thread each decision ran
    with pytest.raises(racecheck.ReplayDivergence, match="at step"):
        racecheck.replay(short, failure.token)


_draws = iter(range(10**9))


def uses_unseeded_state():
    """Like code reading an unseeded RNG or the wall clock: every call sees another value."""
    n = next(_draws)
    done = []

    def worker():
        racecheck.point("step")
        done.append(1)

    threads = [threading.Thread(target=worker) for _ in range(1 + n % 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_check_determinism_reports_the_first_divergence():
    assert _explore(uses_unseeded_state, strategy="random", schedules=20).ok  # unnoticed without it
    result = _explore(uses_unseeded_state, strategy="random", schedules=20, check_determinism=True)
    assert not result.ok
    failure = result.failure
    assert failure.kind == "nondeterminism"
    assert isinstance(failure.exception, racecheck.ReplayDivergence)
    text = str(failure.exception)
    assert "ran differently the second time, at step" in text and "first run T" in text and "Likely cause" in text
    assert failure.schedule_index == 0


@pytest.mark.parametrize("name", sorted(classic_bugs.BUGS))
def test_classic_bugs_are_deterministic(name):
    buggy, fixed, needed = classic_bugs.BUGS[name]
    found = _explore(buggy, strategy="random", schedules=300, check_determinism=True)
    assert found.failure is not None and found.failure.kind != "nondeterminism", found.failure
    assert found.failure.preemptions == needed
    proved = _explore(fixed, strategy="dfs", schedules=10_000, preemption_bound=1, check_determinism=True)
    assert proved.ok and proved.exhausted, proved.failure


def test_fake_fs_scenario_is_deterministic():
    import racecheck.fakefs  # noqa: F401 - root() above

    save_vs_delete = determinism_targets.fake_fs_save_vs_delete
    result = _explore(save_vs_delete, strategy="random", schedules=200, seed=1, fs="windows",
                               check_determinism=True)
    assert result.failure is not None and result.failure.kind == "exception", result.failure
    assert isinstance(result.failure.exception, PermissionError)
    again = racecheck.replay(save_vs_delete, result.failure.token, fs="windows", check_determinism=True)
    assert again.trace == result.failure.trace


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("name", sorted(classic_bugs.BUGS))
def test_classic_bugs_are_deterministic_over_seeds(name, seed):
    buggy, fixed, _ = classic_bugs.BUGS[name]
    for strategy in ("random", "pct"):
        found = _explore(buggy, strategy=strategy, schedules=500, seed=seed, check_determinism=True)
        assert found.failure is not None and found.failure.kind != "nondeterminism", found.failure
    proved = _explore(fixed, strategy="dfs", schedules=100_000, preemption_bound=2, check_determinism=True)
    assert proved.ok and proved.exhausted, proved.failure


def _scenario_cases():
    try:
        from racecheck import scenarios
    except Exception:  # noqa: BLE001 - no scenarios without their optional dependencies
        return []
    return [
        pytest.param(name, fs, id=f"{name}-{fs}")
        for name, scenario in scenarios.CATALOGUE.items()
        if not name.startswith("trainer-fit") and scenario.takes == "io"
        for fs in scenario.semantics
    ]


@pytest.mark.slow
@pytest.mark.parametrize("target", ["stock", "fixed"])
@pytest.mark.parametrize(("scenario", "fs"), _scenario_cases())
def test_every_scenario_is_deterministic(scenario, fs, target):
    pytest.importorskip("lightning")
    from racecheck import scenarios

    spec = scenarios.STOCK_TARGET if target == "stock" else scenarios.FIXED_TARGET
    prepared = scenarios.get(scenario).build(scenarios.load_target(spec), fs)
    result = _explore(
        prepared.fn, strategy="random", schedules=100, check_determinism=True, shrink_budget=0,
        **prepared.explore_kwargs,
    )
    assert result.failure is None or result.failure.kind != "nondeterminism", result.failure
