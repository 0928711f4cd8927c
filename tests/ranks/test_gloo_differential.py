"""The ranks' collectives are a model computed in the parent: held against real gloo on generated programs (two
real ranks over loopback, started once for the module), and a planted wrong reduction is caught."""

import multiprocessing
import shutil
import tempfile

import pytest

torch = pytest.importorskip("torch")
import racecheck  # noqa: E402
import rank_programs as programs  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from racecheck.control.ranks import compute  # noqa: E402

REDUCTIONS = ["SUM", "PRODUCT", "MIN", "MAX"]
INT_ONLY = ["BAND", "BOR", "BXOR"]


@st.composite
def an_op(draw):
    kind = draw(st.sampled_from([
        "all_reduce", "reduce", "broadcast", "all_gather", "all_gather_into_tensor", "gather", "scatter",
        "reduce_scatter_tensor", "barrier", "all_gather_object", "gather_object", "broadcast_object_list",
        "scatter_object_list", "send_recv", "group_ranks"]))
    dtype = draw(st.sampled_from(["int64", "int32", "float32"]))
    length = draw(st.integers(1, 3)) * (2 if kind == "reduce_scatter_tensor" else 1)
    values = [draw(st.lists(st.integers(-3, 3), min_size=length, max_size=length)) for _ in range(2)]
    ops = REDUCTIONS + (INT_ONLY if dtype != "float32" else ["AVG"])
    rank = draw(st.integers(0, 1))
    arg = {"all_reduce": draw(st.sampled_from(ops)), "reduce": (rank, draw(st.sampled_from(ops))),
           "reduce_scatter_tensor": draw(st.sampled_from(ops))}.get(kind, rank)
    return (kind, arg, dtype, values)


BATCHES = st.lists(st.lists(an_op(), min_size=1, max_size=5), min_size=1, max_size=3)


@pytest.fixture(scope="module")
def gloo():
    """Two real gloo ranks over loopback, kept warm for every example: run a batch, get each rank's outputs."""
    ctx = multiprocessing.get_context("fork")
    root = tempfile.mkdtemp(prefix="rc-gloo-")
    pipes = [ctx.Pipe() for _ in range(2)]
    workers = [ctx.Process(target=programs.gloo_worker, args=(r, root, pipes[r][1]), daemon=True) for r in range(2)]
    for worker in workers:
        worker.start()

    def answers(batch):
        for end, _ in pipes:
            end.send(batch)
        return [end.recv() for end, _ in pipes]

    def run(batch):
        got = answers(batch)
        assert all(status == "ok" for status, _ in got), got
        return [outputs for _, outputs in got]

    run.answers = answers
    yield run
    for end, _ in pipes:
        end.send(None)
    for worker in workers:
        worker.join(10)
        if worker.is_alive():
            worker.kill()
    shutil.rmtree(root, ignore_errors=True)


def _modelled(batch):
    got = {}

    def program():
        got["outputs"] = programs.modelled_outputs(batch)

    result = racecheck.explore(program, strategy="random", seed=1, schedules=1, shrink_budget=0, race_budget=0)
    assert result.ok, result.failure
    return got["outputs"]


def _differential(gloo, examples):
    @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(BATCHES)
    def same_as_gloo(batch):
        assert _modelled(batch) == gloo(batch), batch

    same_as_gloo()


def test_the_model_gives_what_gloo_gives(gloo):
    _differential(gloo, 4)


@pytest.mark.slow  # one schedule of two forked ranks per example: about a second each
def test_the_model_gives_what_gloo_gives_on_many_programs(gloo):
    _differential(gloo, 40)


def test_an_average_of_integers_fails_as_on_gloo(gloo):
    message = "result type Float can't be cast to the desired output type Long"
    batch = [[("all_reduce", "AVG", "int64", [[1], [2]])]]
    assert all(status == "err" and message in error for status, error in gloo.answers(batch))
    failure = racecheck.explore(lambda: programs.modelled_outputs(batch), strategy="random", seed=1, schedules=1,
                                shrink_budget=0, race_budget=0).failure
    assert failure is not None and message in failure.message, failure


def test_a_wrong_reduction_is_caught(gloo, monkeypatch):
    wrong = dict(compute.COMPUTE)
    wrong["all_reduce"] = lambda agreed, inputs: [{"tensor": inputs[-1]["tensor"]} for _ in inputs]  # the last rank's
    monkeypatch.setattr(compute, "COMPUTE", wrong)
    batch = [[("all_reduce", "SUM", "int64", [[1, 2], [3, 4]])]]
    assert _modelled(batch) != gloo(batch)
