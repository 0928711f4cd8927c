"""What the plugin costs a pytest session that never runs a marked test: importing it (as pytest does through the
pytest11 entry point, in every session of every project where racecheck is installed) loads at most five racecheck
modules and neither torch nor ctypes; the engine loads at the first marked test. Each check runs in a fresh
interpreter, since this one has long loaded everything. Timing is measured by benchmarks/bench_plugin_start.py,
never asserted here.
"""

from __future__ import annotations

import json
import subprocess
import sys

pytest_plugins = ("pytester",)

BUDGET = 5  # racecheck modules an `import racecheck.pytest_plugin` may load


def _fresh(code: str) -> dict:
    """Run ``code`` in a new interpreter; it leaves its answer in ``out`` (a dict), returned here."""
    script = f"import json, sys\nout = {{}}\n{code}\nprint(json.dumps(out))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def _ours(modules: list[str]) -> list[str]:
    return sorted(m for m in modules if m == "racecheck" or m.startswith("racecheck."))


def test_importing_the_plugin_loads_at_most_five_racecheck_modules_and_neither_torch_nor_ctypes():
    out = _fresh("import racecheck.pytest_plugin\nout['modules'] = sorted(sys.modules)")
    ours = _ours(out["modules"])
    assert "racecheck.pytest_plugin" in ours
    assert len(ours) <= BUDGET, ours
    assert "torch" not in out["modules"]
    assert "ctypes" not in out["modules"]


def test_racecheck_exports_its_names_lazily_from_their_modules():
    out = _fresh(
        "import racecheck\n"
        "out['before'] = sorted(sys.modules)\n"
        "out['all'] = list(racecheck.__all__)\n"
        "out['dir'] = dir(racecheck)\n"
        "out['where'] = {name: getattr(racecheck, name).__module__ for name in racecheck.__all__}\n"
        "out['point'] = racecheck.point is __import__('racecheck.runtime').runtime.point\n"
        "try:\n"
        "    racecheck.no_such_name\n"
        "except AttributeError as exc:\n"
        "    out['missing'] = str(exc)\n"
    )
    assert out["all"] == ["Config", "ConfigError", "Crashed", "Deadlock", "Failure", "InternalError", "RacecheckError",
                          "ReplayDivergence", "Result", "StepLimitExceeded", "TokenError", "UncontrolledBlocking",
                          "explore", "point", "replay"]
    assert set(out["all"]) <= set(out["dir"])
    assert "racecheck.api" not in out["before"] and "racecheck.config" not in out["before"]
    assert out["point"]
    assert out["where"]["Config"] == "racecheck.config"
    assert out["where"]["TokenError"] == "racecheck.errors"
    assert out["missing"] == "module 'racecheck' has no attribute 'no_such_name'"


def test_the_engine_loads_at_the_first_marked_test(pytester):
    pytester.makepyfile(
        test_order="""
        import sys

        import pytest

        def test_unmarked_first():
            assert "racecheck.api" not in sys.modules
            assert "racecheck.frontends.pytest_runner" not in sys.modules

        @pytest.mark.racecheck(schedules=2)
        def test_marked_then():
            assert "racecheck.api" in sys.modules
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider", timeout=300)
    result.assert_outcomes(passed=2)
