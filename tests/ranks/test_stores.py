"""The ranks' stores are a model in the parent: held against a real ``HashStore`` on generated operation
sequences, and used by two ranks through a ``TCPStore`` on loopback (a get waits for the set; a key nobody sets
is a deadlock, not a timeout)."""

import pytest

torch = pytest.importorskip("torch")
import racecheck  # noqa: E402
import rank_programs as programs  # noqa: E402
import torch.distributed as dist  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from racecheck.control.ranks.stores import Store  # noqa: E402

KEYS = st.sampled_from(["a", "b", "c"])
VALUES = st.sampled_from(["", "0", "1", "x", "12"])
OPS = st.lists(st.one_of(
    st.tuples(st.just("set"), KEYS, VALUES), st.tuples(st.just("add"), KEYS, st.integers(-3, 3)),
    st.tuples(st.just("compare_set"), KEYS, VALUES, VALUES), st.tuples(st.just("append"), KEYS, VALUES),
    st.tuples(st.just("delete_key"), KEYS), st.tuples(st.just("get"), KEYS),
    st.tuples(st.just("check"), st.lists(KEYS, min_size=1, max_size=2)), st.tuples(st.just("num_keys")),
), max_size=25)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(OPS)
def test_the_store_model_behaves_as_a_real_hash_store(ops):
    real, model = dist.HashStore(), Store("HashStore(test)")
    for op, *args in ops:
        if op == "get" and not model.check([args[0]]):
            continue  # a real get of a missing key waits (the run's model waits for the set: a point)
        if op == "add" and not model.data.get(args[0], b"0").lstrip(b"-").isdigit():
            continue
        assert getattr(model, op)(*args) == getattr(real, op)(*args), (op, args)


def test_ranks_meet_through_a_tcp_store():
    result = racecheck.explore(programs.store_handshake, strategy="pct", seed=1, schedules=6)
    assert result.ok, result.failure


def test_a_key_nobody_sets_is_a_deadlock():
    failure = racecheck.explore(programs.store_never_set, strategy="random", seed=1, schedules=2).failure
    assert failure is not None and failure.kind == "deadlock", failure
    assert "TCPStore(127.0.0.1:29531).get('never')" in failure.message, failure.message
