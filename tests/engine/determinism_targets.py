"""Targets whose failing schedules must render the same trace byte for byte in any process (hash seed, pid,
thread idents, object addresses, process-global counters all differ between processes).

Each entry: name -> (test function, explore keyword arguments). Passing targets end with a deliberate failure so
that a whole schedule gets a token.
"""

import os
import threading

import classic_bugs
import firstcall_config
import racecheck


def process_specific_values():
    """Everything process-specific a thread can ask for, written into the trace."""
    seen = []

    def report():
        me = threading.current_thread()
        racecheck.point(f"ident {threading.get_ident()} native {threading.get_native_id()} attr {me.ident}")
        racecheck.point(f"pid {os.getpid()} object {object()!r}")
        seen.append(me.native_id)

    threads = [threading.Thread(target=report) for _ in range(2)]
    for t in threads:
        t.start()
    racecheck.point(f"child idents {[t.ident for t in threads]}")
    for t in threads:
        t.join()
    raise AssertionError(f"end of schedule (saw {sorted(seen)})")


def fake_fs_save_vs_delete():
    path = racecheck.fakefs.root() + "/ckpt/a.ckpt"
    os.makedirs(os.path.dirname(path), exist_ok=True)

    def save():
        with open(path, "wb") as f:
            f.write(b"x" * 10)

    saver = threading.Thread(target=save)
    saver.start()
    if os.path.exists(path):
        os.remove(path)
    saver.join()


def first_call_configuration():
    """Two threads read a library's settings (built on the first call in the process) and race on a counter."""
    state = {"count": 0}

    def work():
        timeout = firstcall_config.settings()["timeout"]
        value = state["count"]
        state["count"] = value + len(timeout)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert state["count"] == 2 * len("timeout-2"), f"lost update: {state['count']}"


def _scenario(name, target_spec, fs, force_failure):
    from racecheck import scenarios

    prepared = scenarios.get(name).build(scenarios.load_target(target_spec), fs)
    body = prepared.fn

    def run():
        body()
        if force_failure:
            raise AssertionError("end of schedule")

    run.__module__ = body.__module__  # the scenario's own module is instrumented (its os calls see the fake fs)
    run.__qualname__ = f"scenario_{name}_{fs}_{target_spec.rpartition(':')[2]}"
    return run, dict(prepared.explore_kwargs)


NAMES = [f"classic-{name}" for name in sorted(classic_bugs.BUGS)] + [
    "process-specific-values", "fake-fs-windows", "first-call-configuration", "stock-real-dir", "stock-fake-fs",
    "fixed-fake-fs",
]
NEED_LIGHTNING = ("stock-real-dir", "stock-fake-fs", "fixed-fake-fs")


def targets():
    import racecheck.fakefs  # noqa: F401 - fakefs.root() in the targets

    out = {f"classic-{name}": (buggy, {"strategy": "pct", "seed": 3}) for name, (buggy, _, _) in
           sorted(classic_bugs.BUGS.items())}
    out["process-specific-values"] = (process_specific_values, {"strategy": "random", "seed": 1, "shrink_budget": 0})
    out["fake-fs-windows"] = (fake_fs_save_vs_delete, {"strategy": "random", "seed": 1, "fs": "windows"})
    out["first-call-configuration"] = (first_call_configuration, {"strategy": "pct", "seed": 0})
    try:
        import lightning  # noqa: F401
    except ImportError:
        return out
    stock = "lightning.pytorch.plugins.io.async_plugin:AsyncCheckpointIO"
    fixed = "racecheck.fixed_impl:LockedAsyncCheckpointIO"
    fn, kwargs = _scenario("delete-while-queued", stock, "real", False)
    out["stock-real-dir"] = (fn, dict(kwargs, strategy="pct"))
    fn, kwargs = _scenario("delete-while-queued", stock, "posix", False)
    out["stock-fake-fs"] = (fn, dict(kwargs, strategy="pct"))
    fn, kwargs = _scenario("delete-while-queued", fixed, "posix", True)
    out["fixed-fake-fs"] = (fn, dict(kwargs, strategy="random", seed=2, shrink_budget=0))
    return out


def tokens_and_traces(names=None):
    found = {}
    for name, (fn, kwargs) in targets().items():
        if names is not None and name not in names:
            continue
        result = racecheck.explore(fn, schedules=300, **kwargs)
        assert result.failure is not None, name
        found[name] = (result.failure.token, result.failure.trace)
    return found


def replay_all(tokens):
    out = {}
    for name, (fn, kwargs) in targets().items():
        if name in tokens:
            opts = {k: v for k, v in kwargs.items() if k in ("instrument", "fs")}
            out[name] = racecheck.replay(fn, tokens[name], **opts).trace
    return out
