"""A spawned rank that imports ``torch.distributed`` inside its function gets the model's functions then (and a
name bound from it after): no rank of the run imports torch before its code asks for it."""

import lazyrank_programs
import racecheck


def test_a_rank_importing_torch_distributed_in_its_function_gets_the_model():
    result = racecheck.explore(lazyrank_programs.two_lazy_ranks_spawned, strategy="random", schedules=2, seed=0)
    assert result.failure is None, result.failure
    assert result.processes == 3, result.processes
    assert not result.coverage.escaped, result.coverage.escaped
