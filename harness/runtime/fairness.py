"""CHESS fair scheduling: a thread that yields waits for someone else, so it is not scheduled again before every
thread that could run when it yielded has run (or stopped being able to).

A yield is a point where the thread says it cannot make progress by itself (``sleep(0)``, a failed non-blocking
attempt in a retry loop). Without fairness a strategy may pick the spinning thread again and again and a spin loop
never ends; with it, leaving the yielder is no preemption and the others get their turn. The relation is kept on
the records (``ThreadRecord.yield_to``: the threads that must run first) and in the run's list of yielders; the
scheduler consults it only while yields are in play, so a program without yields never pays for it.
"""

from __future__ import annotations

from racecheck.runtime.records import ThreadRecord

__racecheck_engine__ = True


def note_yield(me: ThreadRecord, candidates: list[ThreadRecord], yielders: list[ThreadRecord]) -> None:
    """``me`` yields at a step whose candidates are ``candidates``: it waits for every other one of them."""
    others = {c.tid for c in candidates if c is not me}
    if others:
        me.yield_to = others
        yielders.append(me)


def fair_candidates(candidates: list[ThreadRecord]) -> list[ThreadRecord]:
    """Drop candidates that yielded to a thread that can run now and has not run since (never all of them:
    a thread yields only while it runs, which clears it from every other's set, so the relation is acyclic)."""
    runnable = {c.tid for c in candidates}
    fair = [c for c in candidates if c.yield_to is None or runnable.isdisjoint(c.yield_to)]
    return fair or candidates


def after_pick(yielders: list[ThreadRecord], chosen: ThreadRecord) -> list[ThreadRecord]:
    """``chosen`` runs now: whoever yielded to it has had its wish. The yielders still waiting for someone."""
    keep = []
    for rec in yielders:
        waits = rec.yield_to
        if waits is not None and rec is not chosen:
            waits.discard(chosen.tid)
            if waits and not rec.finished:
                keep.append(rec)
                continue
        rec.yield_to = None
    return keep
