import multiprocessing
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # spawn children import programs from here


@pytest.fixture(scope="module")
def real_manager():
    """One real ``Manager()`` (fork) per test module that compares the served proxies with it (``manager_compare``)."""
    with multiprocessing.get_context("fork").Manager() as manager:
        yield manager
