"""The comparison the served manager proxies' differential tests share (``test_manager_differential``,
``test_proc46_manager_array``; their real ``Manager()`` is conftest's ``real_manager``): a program run once
against the real manager and once under racecheck on the served model, whose last report must equal the real one's."""

import functools

import racecheck


def compare_to_real(program, ops, manager):
    real: list = []
    program(ops, real, manager)
    served: list = []
    result = racecheck.explore(functools.partial(program, ops, served), schedules=1, memory=False)
    assert result.ok, result.failure
    assert served[-1] == real[0], ops
