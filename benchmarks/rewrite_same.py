"""The memory rewriter, before and after a change: the same output for every module, and how long each took.

    python benchmarks/rewrite_same.py [--base main] [--groups lightning,stdlib,...] [--every 1] [--repeat 1] [--calls]

A refactor of the rewriter (``racecheck.control.rewrite`` and the modules it uses) must leave what it writes exactly
as it was. This exports the ``harness/`` of ``--base`` (a git revision) into a temporary package, then rewrites the
same real modules with it and with the working tree, each in its own process under this interpreter, and compares,
module by module, the digest of the rewritten tree (``ast.dump`` with every node's location) and of what else
``Rewritten`` carries (the rebound globals). It prints how many modules it compared and which differ (exit status 1
if any does), and the time each side spent in ``rewrite_module`` (parsing included; the same for both), best of
``--repeat``, so that a slowdown shows; on a shared machine the time is noisy, so ``--calls`` also counts the
calls one pass makes (``cProfile``'s count: the same however busy the machine is).

The modules: the installed ``lightning`` family and ``torchmetrics``, ``torch`` and the standard library (every
``--every``-th file of each, in sorted order), and racecheck's own ``harness/`` and ``tests/``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import sysconfig
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
SITE = sysconfig.get_paths()["purelib"]
STDLIB = sysconfig.get_paths()["stdlib"]
GROUPS = {
    "lightning": [(SITE, p) for p in ("lightning", "lightning_fabric", "pytorch_lightning", "lightning_utilities")],
    "torchmetrics": [(SITE, "torchmetrics")],
    "torch": [(SITE, "torch")],
    "stdlib": [(STDLIB, ".")],
    "racecheck": [(REPO, "harness"), (REPO, "tests")],
}


def modules(groups: list[str], every: int) -> list[tuple[str, str]]:
    """(path, dotted module name) of every ``every``-th ``.py`` file of each group, in sorted order."""
    found: list[tuple[str, str]] = []
    for group in groups:
        paths = []
        for root, top in GROUPS[group]:
            for folder, dirs, files in os.walk(os.path.join(root, top)):
                dirs[:] = sorted(d for d in dirs if d not in ("site-packages", "__pycache__"))
                paths.extend(os.path.join(folder, f) for f in sorted(files) if f.endswith(".py"))
            found.extend((p, _dotted(root, p)) for p in sorted(paths)[::every])
            paths = []
    return found


def _dotted(root: str, path: str) -> str:
    rel = os.path.relpath(path, root)[: -len(".py")]
    parts = [p for p in rel.split(os.sep) if p not in (".", "__init__")]
    return ".".join(parts) or "__main__"


def read(path: str) -> str:
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        return f.read()


def digest(rewritten: object) -> str:
    tree = rewritten.tree  # type: ignore[attr-defined]
    rebound = sorted(rewritten.rebound)  # type: ignore[attr-defined]
    extra = {k: v for k, v in vars(rewritten).items() if k not in ("tree", "rebound")}
    text = ast_dump(tree) + "\n" + repr(rebound) + "\n" + repr(sorted(extra.items()))
    return hashlib.sha256(text.encode()).hexdigest()


def ast_dump(tree: object) -> str:
    import ast

    return ast.dump(tree, include_attributes=True)  # type: ignore[arg-type]


def worker(listing: str, repeat: int, count: bool) -> None:
    """Rewrite every module listed (path, name and source, as JSON in the file ``listing``) with whichever
    ``racecheck`` this process imports."""
    from racecheck.control.rewrite import rewrite_module

    with open(listing) as f:
        sources = [tuple(entry) for entry in json.load(f)]
    best = float("inf")
    results: dict[str, str] = {}
    for _ in range(repeat):
        spent = 0.0
        for path, name, source in sources:
            start = time.process_time()
            try:
                rewritten = rewrite_module(source, path, name)
            except SyntaxError as error:  # a file meant for another Python, or none at all
                spent += time.process_time() - start
                results[path] = f"SyntaxError: {error.msg}"
                continue
            except Exception as error:  # noqa: BLE001 - recorded, compared like any result
                spent += time.process_time() - start
                results[path] = f"{type(error).__name__}: {error}"
                continue
            spent += time.process_time() - start
            results[path] = digest(rewritten)
        best = min(best, spent)
    calls = count_calls(rewrite_module, sources) if count else None
    import racecheck

    json.dump({"results": results, "seconds": best, "calls": calls, "racecheck": racecheck.__file__}, sys.stdout)


def count_calls(rewrite_module: object, sources: list[tuple[str, str, str]]) -> int:
    """The function calls (Python and builtin, as ``cProfile`` counts them) one pass of rewriting makes: unlike
    its time, the same on a busy machine as on an idle one."""
    import cProfile
    import pstats

    profile = cProfile.Profile()
    for path, name, source in sources:
        try:
            profile.runcall(rewrite_module, source, path, name)  # type: ignore[arg-type]
        except Exception:  # noqa: BLE001, S110 - the timed pass recorded it
            pass
    return pstats.Stats(profile).total_calls  # type: ignore[attr-defined]


def run_side(pythonpath: str | None, listing: str, repeat: int, count: bool) -> dict:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", listing, "--repeat", str(repeat),
                          *(["--calls"] if count else [])],
                         env=env, cwd=tempfile.gettempdir(), capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="main")
    parser.add_argument("--groups", default=",".join(GROUPS))
    parser.add_argument("--every", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--calls", action="store_true", help="also count the calls a pass makes (slower)")
    parser.add_argument("--worker")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.repeat, args.calls)
        return 0
    entries = modules(args.groups.split(","), args.every)
    with tempfile.TemporaryDirectory() as tmp:
        base = os.path.join(tmp, "base")
        os.mkdir(base)
        archive = subprocess.run(["git", "archive", "--prefix=racecheck/", f"{args.base}:harness"], cwd=REPO,
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", base], input=archive, check=True)
        listing = os.path.join(tmp, "modules.json")
        with open(listing, "w") as f:  # the sources themselves: both sides rewrite the same text
            json.dump([(path, name, read(path)) for path, name in entries], f)
        old = run_side(base, listing, args.repeat, args.calls)
        new = run_side(None, listing, args.repeat, args.calls)
    assert old["racecheck"].startswith(base) and not new["racecheck"].startswith(base), (old["racecheck"],
                                                                                        new["racecheck"])
    differ = [path for path, _ in entries if old["results"][path] != new["results"][path]]
    failed = sum(1 for path, _ in entries if ":" in new["results"][path])
    print(f"compared {len(entries)} modules ({failed} of them do not parse or rewrite, on both sides alike "
          f"unless listed): {len(differ)} differ")
    for path in differ:
        print(f"  differs: {path}: {old['results'][path][:80]} -> {new['results'][path][:80]}")
    print(f"rewrite time: base ({args.base}) {old['seconds']:.2f} s, working tree {new['seconds']:.2f} s "
          f"({(new['seconds'] / old['seconds'] - 1) * 100:+.1f}%)")
    if args.calls:
        change = (new["calls"] / old["calls"] - 1) * 100
        print(f"calls: base {old['calls']}, working tree {new['calls']} ({change:+.1f}%)")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
