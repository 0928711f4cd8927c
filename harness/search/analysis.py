"""What one execution tells the partial-order search (``racecheck.search.dpor``): its steps, happens-before, its
races, and the races that blocking hides.

A step is a thread's operation at a scheduling point and the code it ran until its next one, with everything it
touched (its notes' accesses included; the read of the scheduler's fairness every step makes is left implicit,
see ``Analysis.extend``). Happens-before is program order and conflicts (``racecheck.search.dependency``). The
analysis is kept from one execution to the next (``Analysis``): the search's next execution replays a prefix of the
last one, so only the steps after the shared prefix are analysed again.

Sets of steps are ints with bit ``k`` for the execution's step ``k``: an execution has hundreds of steps, and the
questions the search asks (which earlier steps conflict with this one, which of them are ordered before it, which
came while a thread waited) are then a few ``|``, ``&`` and ``bit_length`` on one int each, instead of a loop
over steps in Python. The search pays this analysis for every schedule, on top of the run itself, so it is kept
to a handful of int operations per access of each new step.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from racecheck.runtime.access import ACQUIRE, FAIRNESS_OBJ, FAIRNESS_READ, READ, RELEASE, WRITE
from racecheck.runtime.relation import ALL_OBJECTS, Order, Relation, active
from racecheck.runtime.steps import Access, Obj, ObjKind, Step
from racecheck.search.lock_aware import LockAware

__racecheck_engine__ = True

Accesses = tuple[Access, ...]
# A step as the analysis keeps it, in its int-indexed rows: (thread, trace step number, everything it touched). Made
# from a runtime ``Step``, with what differs: the run's step number (``Step.event.step``) where a ``Step`` has the
# thread's own count, since the search places its decisions by run step; and pseudo-steps, numbered -1, that no
# run made: what a thread was about to do when the analysis stops (a deadlock, the state a run was cut at).
StepRow = tuple[int, int, Accesses]
# What a thread would still have done when a failure elsewhere cut the run short: unknown, so it conflicts with every
# step (the search then tries the thread before the steps it could have gone before, and reads what it does there).
REST_OBJ = Obj(ObjKind.REST, "the rest of a thread")
REST = Access(REST_OBJ, WRITE)
_SPECIAL = frozenset({FAIRNESS_OBJ, REST_OBJ})  # objects whose access conflicts with every earlier step's

# How a later access of one kind to an object meets an earlier one of another (``relation.Order``): they commute
# (0), they conflict but only ever in one order (a start before its thread's first step, an end before a join), or
# they conflict and could run the other way round (a race when nothing else orders them).
ONE_WAY, REVERSIBLE = Order.ONE_WAY, Order.REVERSIBLE
# The wildcard bits of a step (``Analysis.extend``): 1, it touched a wildcard over everything; 2, memory that the
# unresolved-memory wildcard covers; 4, that wildcard itself.
_ANYTHING_BIT, _MEMORY_BIT, _UNRESOLVED_BIT = 1, 2, 4


def _wild_bits(relation: Relation) -> dict[ObjKind, int]:
    """Per kind of object, its wildcard bits, read from the relation's wildcards."""
    memory_wild = relation.wildcards.get(ObjKind.ANY_MEMORY, frozenset())
    out = {}
    for kind in ObjKind:
        bits = _ANYTHING_BIT if relation.wildcards.get(kind) == ALL_OBJECTS else 0
        if kind in memory_wild:
            bits |= _MEMORY_BIT
        if kind is ObjKind.ANY_MEMORY and memory_wild:
            bits |= _UNRESOLVED_BIT
        out[kind] = bits
    return out


def row_of(step: Step) -> StepRow:
    """A step as the analysis holds it: its thread, its number in the run, what it touched."""
    return step.event.tid, step.event.step, step.accesses


def rows_of(steps: Iterable[Step]) -> list[StepRow]:
    """``steps`` (the runtime's, ``RunEnd.taken``, or built from a part of a trace) as rows."""
    return [(step.event.tid, step.event.step, step.accesses) for step in steps]


def bits_of(mask: int) -> list[int]:
    """The positions of the set bits of ``mask``, lowest first."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


class Analysis:
    """Happens-before over an execution's steps, built step by step and rewound to a shared prefix.

    Per step: its thread, trace number, accesses and ``before`` (the steps that happen before it, as bits). Per
    object and kind of access, the steps with such an access (``masks``), per object every step that touched it
    (``touched``: a kind that conflicts, either way round, with every kind reads that one mask), and per thread its
    steps: which earlier steps conflict with a new one is an ``|`` of the masks of the kinds that conflict with its
    own. Rewinding clears the bits of the forgotten steps from every mask.

    The relation (``racecheck.runtime.relation``, the one in force unless given) is read when the analysis is made,
    as per-kind lookups (``Relation.order_rows``): the inner loops ask it for every access of every step."""

    def __init__(self, relation: Relation | None = None) -> None:
        self.tids: list[int] = []
        self.numbers: list[int] = []
        self.accesses: list[Accesses] = []
        self.before: list[int] = []
        self.last_of: dict[int, int] = {}
        self.of_thread: dict[int, int] = {}  # thread -> its steps
        self.masks: dict[Obj, dict[Any, int]] = {}  # object -> kind -> the steps with that access to it
        self.real = 0  # steps that are not pseudo-steps (pseudo-steps come last)
        relation = relation or active()
        self.order, self.reorder_all = relation.order_rows, relation.reorders_all
        self.wild_bits = _wild_bits(relation)
        self.touched: dict[Obj, int] = {}  # object -> every step that touched it
        # The wildcards (``Relation.wildcard_conflict``): steps with a bare point's ``anything`` (they conflict with
        # every step), steps that touched any memory, and steps with unresolved memory (they conflict with those).
        self.any_steps = 0
        self.memory_steps = 0
        self.unresolved_steps = 0
        # Lock-aware reduction (``racecheck.search.lock_aware``): what the masks read instead of a step's accesses
        self.lax: LockAware | None = None

    def shared(self, steps: Sequence[StepRow], limit: int) -> int:
        """How many of ``steps`` (at most ``limit``) are the steps already analysed."""
        n = min(limit, len(self.tids), len(steps))
        tids, numbers, accesses = self.tids, self.numbers, self.accesses
        for k in range(n):
            tid, number, touched = steps[k]
            if tids[k] != tid or numbers[k] != number or accesses[k] != touched:
                return k
        return n

    def covering(self, number: int | None) -> int:
        """How many analysed steps come before the step numbered after ``number`` (None: before the first step),
        or -1 when the analysis does not hold every one of them (the last execution was cut before them)."""
        if number is None:
            return 0
        count = bisect_right(self.numbers, number, 0, self.real)  # the real steps' numbers increase
        return count if count and self.numbers[count - 1] == number else -1

    def rewind(self, n: int) -> None:
        """Forget the steps after the first ``n``: their bits go from every mask. Per object and kind rather than
        per forgotten step and access: an execution's objects are fewer than the accesses of the steps a new one
        analyses again, and most masks have no bit to clear."""
        if len(self.tids) <= n:
            return
        keep = (1 << n) - 1
        for kinds in self.masks.values():
            for kind, steps in kinds.items():
                if steps >> n:
                    kinds[kind] = steps & keep
        touched = self.touched
        for obj, steps in touched.items():
            if steps >> n:
                touched[obj] = steps & keep
        self.any_steps &= keep
        self.memory_steps &= keep
        self.unresolved_steps &= keep
        if self.lax is not None:
            self.lax.rewind(n)
        last_of, of_thread = self.last_of, self.of_thread
        for tid, steps in of_thread.items():
            if steps >> n:
                steps &= keep
                of_thread[tid] = steps
                if steps:
                    last_of[tid] = steps.bit_length() - 1
                else:
                    del last_of[tid]
        del self.tids[n:], self.numbers[n:], self.accesses[n:], self.before[n:]
        self.real = min(self.real, n)

    def extend(self, steps: Sequence[StepRow], fresh: int, could_run: Callable[[int, int, int], bool] | None = None,
               waiting: list[tuple[int, int]] | None = None) -> list[tuple[int, int]]:
        """Take ``steps`` as the next ones; for each that lands at position ``fresh`` or later, its races: every
        earlier step i of another thread that conflicts with it and is not ordered before it through other steps
        (so the pair could run the other way round), a start and its thread's first step or an end and a join
        excepted (never the other way). In one call, since the search pays this for every schedule.

        With ``waiting``, the races a fresh step's wait hid go there too (``_hidden``), if its thread waited:
        ``could_run(tid, first, last)`` says whether the thread was among the candidates at every step numbered
        ``first`` to ``last`` since its previous step; one that was never disabled has only the races above. Asked
        while the masks hold the steps before it, so an execution's steps are read once.

        Every step also reads the scheduler's fairness (``FAIRNESS_READ``), which is not in its accesses: it
        conflicts with the steps that wrote it (``masks`` has them), and a step that writes it conflicts with
        every earlier step."""
        tids, numbers, all_accesses, before = self.tids, self.numbers, self.accesses, self.before
        last_of, of_thread = self.last_of, self.of_thread
        masks, order, touched, reorder_all = self.masks, self.order, self.touched, self.reorder_all
        wild_bits = self.wild_bits
        read_row = order[ObjKind.FAIRNESS][READ]
        special = _SPECIAL
        found: list[tuple[int, int]] = []
        lax = self.lax
        for tid, number, original in steps:
            j = len(tids)
            bit = 1 << j
            accesses = original if lax is None else lax.step(j, tid, original)
            report = j >= fresh
            previous = last_of.get(tid)
            if report and waiting is not None:
                if previous is None:
                    waiting.extend(self._hidden(j, tid, -1, accesses))
                elif number < 0:  # what it was about to do at the end: waited, unless cut short while it could run
                    if REST not in accesses or not could_run(tid, numbers[previous] + 1, numbers[self.real - 1]):
                        waiting.extend(self._hidden(j, tid, previous, accesses))
                else:
                    after = numbers[previous] + 1
                    if after != number and not could_run(tid, after, number - 1):
                        waiting.extend(self._hidden(j, tid, previous, accesses))
            # The earlier steps it conflicts with, and of those the ones whose order could be the other way round
            # (all but a start before its thread's first step and an end before a join on it).
            conflicting = reversible = 0
            fairness = masks.get(FAIRNESS_OBJ)
            if fairness is not None:
                for earlier_kind, earlier_steps in fairness.items():
                    if read_row[earlier_kind]:
                        conflicting |= earlier_steps
                reversible = conflicting
            wild = 0  # 1: anything, 2: memory, 4: unresolved memory
            for access in accesses:
                obj = access.obj
                kind = access.kind
                obj_kind = obj.kind
                wild |= wild_bits[obj_kind]
                kinds = masks.get(obj)
                if kinds is None:
                    masks[obj] = {kind: bit}
                    touched[obj] = bit
                else:
                    if kind in reorder_all[obj_kind]:  # conflicts with every kind, either way: every step on it
                        earlier_steps = touched[obj]
                        conflicting |= earlier_steps
                        reversible |= earlier_steps
                    else:
                        row = order[obj_kind][kind]
                        for earlier_kind, earlier_steps in kinds.items():
                            how = row[earlier_kind]
                            if how:
                                conflicting |= earlier_steps
                                if how == REVERSIBLE:
                                    reversible |= earlier_steps
                    kinds[kind] = kinds.get(kind, 0) | bit
                    touched[obj] |= bit
                if obj in special and (obj is REST_OBJ or order[obj_kind][kind][READ]):
                    conflicting |= bit - 1
                    reversible |= bit - 1
            if wild or self.any_steps:
                met = self._wild(wild, bit)
                conflicting |= met
                reversible |= met
            own = closure = 0 if previous is None else before[previous] | (1 << previous)
            # Of the conflicting steps not already before it through its own thread, the latest comes first: what
            # it comes after is not a race of this step, and the next latest that is left is.
            rest = conflicting & (bit - 1) & ~own
            if rest:
                mine = []
                while rest:
                    i = rest.bit_length() - 1
                    earlier = before[i] | (1 << i)
                    if report and (reversible >> i) & 1:
                        mine.append((i, j))
                    closure |= earlier
                    rest &= ~earlier
                if mine:
                    mine.reverse()
                    found += mine
            all_accesses.append(original)
            tids.append(tid)
            numbers.append(number)
            before.append(closure)
            last_of[tid] = j
            of_thread[tid] = of_thread.get(tid, 0) | bit
            if number >= 0 and self.real == j:
                self.real = j + 1
        return found

    def _wild(self, wild: int, bit: int) -> int:
        """The earlier steps a step with wildcard bits ``wild`` (``extend``) meets through a wildcard, on either side;
        records the step's own wildcards for the steps after it."""
        met = self.any_steps
        if wild & 1:
            met |= bit - 1
            self.any_steps |= bit
        if wild & 2:
            met |= self.unresolved_steps
            self.memory_steps |= bit
        if wild & 4:
            met |= self.memory_steps & (bit - 1)
            self.unresolved_steps |= bit
        return met

    def _wild_racing(self, j: int, accesses: Accesses) -> int:
        """The earlier steps a step j (not yet added) meets through a wildcard, without recording it."""
        racing = self.any_steps
        wild_bits = self.wild_bits
        for access in accesses:
            bits = wild_bits[access.obj.kind]
            if bits & _ANYTHING_BIT:
                racing |= (1 << j) - 1
            elif bits & _MEMORY_BIT:
                racing |= self.unresolved_steps
                if bits & _UNRESOLVED_BIT:
                    racing |= self.memory_steps
        return racing

    def _hidden(self, j: int, tid: int, start: int, accesses: Accesses) -> list[tuple[int, int]]:
        """Races a blocking operation hides (Flanagan and Godefroid's rule for disabled transitions), for a step j
        (not yet added) of thread ``tid`` that waited since its previous step ``start`` (-1: none): every step i of
        another thread that conflicts with j while it waited; and the last such step before that, unless it
        happens before the wait began. A get that found the queue emptied by another thread's get, and ran once
        that thread put the item back, races with that get, though the put orders the two: at the decision before
        the get, j's thread could have gone first."""
        masks, order, reorder_all = self.masks, self.order, self.reorder_all
        upto = (1 << (start + 1)) - 1  # the steps up to the thread's previous one
        window = ((1 << j) - 1) & ~upto  # the steps while it waited: none of them its own
        others = ~self.of_thread.get(tid, 0)
        pairs = 0
        wild = self._wild_racing(j, accesses)
        if wild:
            pairs |= wild & window
            last = wild & upto & others
            if last:
                k = last.bit_length() - 1
                if start < 0 or not (self.before[start] >> k) & 1:
                    pairs |= 1 << k
        # Its implicit read of the fairness first (racing with the yields), then what it names.
        for access in ((FAIRNESS_READ,) if FAIRNESS_OBJ in masks else ()) + accesses:
            obj, kind = access.obj, access.kind
            kinds = masks.get(obj)
            racing = 0
            if kinds is not None:
                if kind in reorder_all[obj.kind]:
                    racing = self.touched[obj]
                else:
                    row = order[obj.kind][kind]
                    for earlier_kind, steps in kinds.items():
                        if row[earlier_kind] == REVERSIBLE:
                            racing |= steps
            if (obj is FAIRNESS_OBJ and order[obj.kind][kind][READ] == REVERSIBLE) or obj is REST_OBJ:
                racing |= (1 << j) - 1  # every earlier step read the fairness; the rest of a thread is unknown
            if not racing:
                continue
            pairs |= racing & window
            last = racing & upto & others
            if last:  # the last conflicting step before the wait
                k = last.bit_length() - 1
                if start < 0 or not (self.before[start] >> k) & 1:
                    pairs |= 1 << k
        return [(i, j) for i in bits_of(pairs)] if pairs else []

    def initials(self, i: int, j: int) -> list[int]:
        """The threads that could start the reversal of race (i, j) at the decision before i (Abdulla et al.'s
        initials of notdep(i).j): the steps after i that do not happen after i, then j; a thread is an initial when
        its first step in that sequence has no step of the sequence before it in happens-before. (Within that
        sequence happens-before and a chain of direct conflicts coincide: a step between two of its steps that
        happens after i would put the later one after i too.) Once every thread has shown its first step the rest
        of the sequence cannot add one."""
        before, tids = self.before, self.tids
        found: list[int] = []
        seen: set[int] = set()
        threads = len(self.of_thread)
        earlier = 0  # the steps of the sequence so far, as bits
        for k in range(i + 1, len(tids)):
            if k == j or (before[k] >> i) & 1:
                continue
            tid = tids[k]
            if tid not in seen:
                seen.add(tid)
                if not before[k] & earlier:
                    found.append(tid)
                if len(seen) == threads:
                    return found
            earlier |= 1 << k
        tid = tids[j]
        if tid not in seen and not before[j] & earlier:
            found.append(tid)
        return found

    def lock_holds(self, obj: Obj) -> list[tuple[int, int, int]]:
        """Who held lock ``obj`` when: (acquiring step, releasing step, thread) for every hold, read from its
        ACQUIRE and RELEASE accesses (re-entrant acquires by the holder nest; a hold never released ends after the
        last step), in the order the holds ended. At the decision before step k, the lock was held by that thread
        when a < k <= r."""
        open_holds: dict[int, list[int]] = {}  # thread -> [acquiring step, depth]
        holds: list[tuple[int, int, int]] = []
        for index in bits_of(self.touched.get(obj, 0)):  # every step that touched it (a lax access is no ACQUIRE)
            tid = self.tids[index]
            for access in self.accesses[index]:
                if access.obj is not obj:
                    continue
                if access.kind == ACQUIRE:
                    found = open_holds.get(tid)
                    if found is None:
                        open_holds[tid] = [index, 1]
                    else:
                        found[1] += 1
                elif access.kind == RELEASE:
                    found = open_holds.get(tid)
                    if found is not None:
                        found[1] -= 1
                        if found[1] == 0:
                            del open_holds[tid]
                            holds.append((found[0], index, tid))
        for tid, (start, _depth) in sorted(open_holds.items()):
            holds.append((start, len(self.tids), tid))
        return holds

    def _holds(self, obj: Obj, holds: dict[Obj, list[tuple[int, int, int]]]) -> list[tuple[int, int, int]]:
        """``lock_holds(obj)``, cached in ``holds`` for one execution."""
        lock = holds.get(obj)
        if lock is None:
            lock = holds[obj] = self.lock_holds(obj)
        return lock

    def blocking_acquire(self, k: int) -> Obj | None:
        """The lock step ``k`` starts with a blocking acquire of (``Access.blocking``: its point's own access comes
        first), or None: such an acquire cannot run while another thread holds the lock, a try-acquire can."""
        accesses = self.accesses[k]
        first = accesses[0] if accesses else None
        if first is not None and first.kind == ACQUIRE and first.blocking:
            return first.obj
        return None

    def held_by_own_thread(self, obj: Obj, i: int, holds: dict[Obj, list[tuple[int, int, int]]]) -> bool:
        """Whether step ``i`` ran inside a hold of lock ``obj`` by its own thread, taken by a blocking acquire before
        it and released at or after it: a step that blocks on taking ``obj`` cannot run before ``i`` without running
        before that acquire too (had a try-acquire taken it, the try could have failed there)."""
        tid = self.tids[i]
        for start, end, holder in self._holds(obj, holds):
            if start < i <= end and holder == tid:
                return self.blocking_acquire(start) is not None
        return False

    def blocked_since(self, i: int, j: int, holds: dict[Obj, list[tuple[int, int, int]]]) -> list[int]:
        """Where a race (i, j) must really be reversed when j takes a lock: j's thread could not take it at the
        decision before i while another thread held it, so the order to try is j before that thread's acquire.
        ``holds`` caches ``lock_holds`` per lock for one execution."""
        found = []
        tid_j = self.tids[j]
        for access in self.accesses[j]:
            if access.kind != ACQUIRE:
                continue
            for start, end, tid in self._holds(access.obj, holds):
                if start < i <= end and tid != tid_j and start not in found:
                    found.append(start)
        return found


def at_the_block(steps: Sequence[StepRow], blocked: int) -> list[StepRow]:
    """A run that ran into a sleeping thread at step ``blocked``, as far as the search reads it: its steps before
    that, then what each thread was about to do there (its next step, as a pseudo-step). Past the block it repeats
    a class an earlier sibling covered; what the waiting threads were about to do still says where they could
    have gone first (as Flanagan and Godefroid analyse every state reached, the blocked one included)."""
    kept = [(tid, number, accesses) for tid, number, accesses in steps if 0 <= number < blocked]
    nexts: dict[int, StepRow] = {}
    for tid, number, accesses in steps:
        if (number >= blocked or number < 0) and tid not in nexts:
            nexts[tid] = (tid, -1, accesses)
    return kept + list(nexts.values())
