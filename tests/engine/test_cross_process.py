"""The same token renders the same trace byte for byte, in this process and in another one with another hash seed
(so another pid, other thread idents and object addresses), for every kind of target: the classic bugs, a thread
that writes its ident/pid/object reprs into the trace, the fake filesystem, stock Lightning, the fixed IO."""

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import determinism_targets
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
HAS_LIGHTNING = importlib.util.find_spec("lightning") is not None


@pytest.fixture(scope="module")
def recorded():
    return determinism_targets.tokens_and_traces()


@pytest.fixture(scope="module")
def replayed_here(recorded):
    return determinism_targets.replay_all({name: token for name, (token, _) in recorded.items()})


@pytest.fixture(scope="module")
def replayed_elsewhere(recorded):
    tokens = {name: token for name, (token, _) in recorded.items()}
    script = textwrap.dedent(
        f"""
        import json, sys
        sys.path.insert(0, {HERE!r})
        import determinism_targets
        print(json.dumps(determinism_targets.replay_all(json.loads(sys.stdin.read()))))
        """
    )
    env = dict(os.environ, PYTHONHASHSEED="4321")
    out = subprocess.run(
        [sys.executable, "-c", script], input=json.dumps(tokens), capture_output=True, text=True, env=env,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _params():
    for name in determinism_targets.NAMES:
        marks = []
        if name in determinism_targets.NEED_LIGHTNING and not HAS_LIGHTNING:
            marks.append(pytest.mark.skip(reason="lightning is not installed"))
        yield pytest.param(name, marks=marks, id=name)


@pytest.mark.parametrize("name", list(_params()))
def test_same_token_same_trace_here_and_in_another_process(name, recorded, replayed_here, replayed_elsewhere):
    trace = recorded[name][1]
    assert replayed_here[name] == trace
    assert replayed_elsewhere[name] == trace


def test_process_specific_values_are_virtual(recorded):
    trace = recorded["process-specific-values"][1]
    assert "pid 4242 " in trace and f"pid {os.getpid()}" not in trace
    assert "ident 1515847681 native 1515847681 attr 1515847681" in trace  # T1's logical ident, all three ways
    assert "object <object object at 0x_>" in trace
    assert "child idents [1515847681, 1515847682]" in trace
