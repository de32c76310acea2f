"""The checkers' queue (web/checks.py): served an address at a time, round robin, so a crowd of
addresses cannot starve one visitor; a check whose client has gone leaves the queue; a check
that only waits is charged its wall-clock time. The checks themselves run in real processes in
test_budgets.py and test_hostile_uploads.py."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spacewar_ai.web.checks import Checks, Gone
from spacewar_ai.web.guard import Limits


def test_waiting_checks_are_served_an_address_at_a_time():
    async def scenario():
        checks = Checks(Limits(checkers=1))
        lane = checks.lanes["replays"]
        await lane.turn("holder")  # the one checker is taken
        served = []

        async def wait(address):
            await lane.turn(address)
            served.append(address)
            lane.release()

        # A crowd address queues three checks before two other visitors queue one each.
        tasks = [asyncio.ensure_future(wait(a)) for a in
                 ("crowd", "crowd", "crowd", "honest", "other")]
        await asyncio.sleep(0)
        lane.release()
        await asyncio.gather(*tasks)
        return served, lane

    served, lane = asyncio.run(scenario())
    assert served == ["crowd", "honest", "other", "crowd", "crowd"]
    assert lane.free == 1 and not lane.waiting and not lane.turns


def test_a_check_whose_client_left_leaves_the_queue():
    class Left:
        """A request (or a page's WebSocket) whose client disconnects while its check waits."""

        def __init__(self, kind):
            self.kind = kind

        async def receive(self):
            await asyncio.sleep(0.05)
            return {"type": f"{self.kind}.disconnect"}

    async def scenario(kind, lane_name):
        checks = Checks(Limits(checkers=1))
        lane = checks.lanes[lane_name]
        await lane.turn("holder")
        with pytest.raises(Gone):
            await checks.run_for(Left(kind), "replay" if lane_name == "replays" else "spec",
                                 {}, "10.0.0.1")
        left = (checks.queued, dict(lane.waiting), list(lane.turns), dict(checks.checks.held))
        lane.release()  # the holder's checker goes back to the free ones, not to the gone
        return left, lane.free

    for kind, lane_name in (("http", "replays"), ("websocket", "quick")):
        left, free = asyncio.run(scenario(kind, lane_name))
        assert left == (0, {}, [], {}) and free == 1


def test_a_full_queue_makes_room_for_a_visitor_with_none_in_it():
    """The queue is full of a crowd's checks: a newcomer takes the place of the last waiting
    check of the address that has used the checkers most, which is refused as busy; nobody else
    loses one, and a crowd address cannot take a newcomer's place back."""
    from spacewar_ai.web.guard import Refused

    async def scenario():
        checks = Checks(Limits(checkers=1, checks_queued=3, checks_per_address=2))
        release = asyncio.Event()

        async def ask(kind, payload, visitor):  # a checker's work, held until released
            await release.wait()
            return visitor.encode()

        checks.lanes["replays"].ask = ask
        # The crowd has used the checkers this hour; the newcomer has not.
        for address, seconds in (("crowd1", 30.0), ("crowd2", 10.0)):
            checks.charge(address, seconds)
        crowd = [asyncio.ensure_future(checks.run("replay", {}, a))
                 for a in ("crowd1", "crowd1", "crowd2")]
        await asyncio.sleep(0)  # one runs, two wait: the queue holds its three
        honest = asyncio.ensure_future(checks.run("replay", {}, "honest"))
        late = asyncio.ensure_future(checks.run("replay", {}, "crowd3"))  # used more than honest
        checks.charge("crowd3", 20.0)
        await asyncio.sleep(0)
        release.set()
        return await asyncio.gather(*crowd, honest, late, return_exceptions=True), checks

    (first, bumped, other, honest, late), checks = asyncio.run(scenario())
    assert (first, other, honest) == (b"crowd1", b"crowd2", b"honest")
    assert isinstance(bumped, Refused) and bumped.status == 503
    # A crowd address with nothing queued but more used than the newcomer finds no room.
    assert isinstance(late, Refused) and late.status == 503
    assert checks.queued == 0 and checks.lanes["replays"].free == 1


def test_fresh_addresses_that_keep_asking_while_the_lane_is_full_rank_behind_a_newcomer():
    """A crowd of addresses that have used nothing: those refused as busy retry as places free,
    so the queue fills with addresses that asked while it was full. A newcomer, asking once,
    takes a place at its first try and is served next, while the crowd's next retry is refused
    and pushes none of its own out."""
    from spacewar_ai.web.guard import Refused

    async def scenario():
        checks = Checks(Limits(checkers=1, checks_queued=4))
        gate, served = asyncio.Queue(), []

        async def ask(kind, payload, visitor):  # a checker's work, one check per token
            await gate.get()
            served.append(visitor)
            return b"ok"

        async def settle():
            for _ in range(10):
                await asyncio.sleep(0)

        checks.lanes["replays"].ask = ask
        crowd = [f"198.18.{k // 250}.{k % 250}" for k in range(1000)]
        tasks = [asyncio.ensure_future(checks.run("replay", {}, a)) for a in crowd]
        await settle()
        refused = [t for t in tasks if t.done() and isinstance(t.exception(), Refused)]
        waiting, retried = [t for t in tasks if not t.done()], iter(crowd[4:])
        for _ in range(3):  # a check ends; a crowd address refused before takes its place
            gate.put_nowait(None)
            await settle()
            waiting.append(asyncio.ensure_future(checks.run("replay", {}, next(retried))))
            await settle()
        newcomer = asyncio.ensure_future(checks.run("replay", {}, "203.0.113.7"))
        late = asyncio.ensure_future(checks.run("replay", {}, next(retried)))
        await settle()
        for _ in range(8):
            gate.put_nowait(None)
        results = await asyncio.gather(*waiting, newcomer, late, return_exceptions=True)
        return len(refused), served, results

    refused, served, results = asyncio.run(scenario())
    assert refused == 1000 - 4
    *crowd, newcomer, late = results
    assert newcomer == b"ok" and isinstance(late, Refused) and late.status == 503
    assert sum(isinstance(r, Refused) for r in crowd) == 1  # the place the newcomer took
    assert served.index("203.0.113.7") == 4  # after the four checks that ran before it came


def test_a_visitor_refused_once_takes_the_place_of_one_refused_far_more_often():
    """Between addresses that have used nothing, one that has been refused as busy more than
    twice as often as the asker gives up its place; one refused about as often keeps it."""
    from spacewar_ai.web.guard import Refused

    async def scenario():
        checks = Checks(Limits(checkers=1, checks_queued=2))
        release = asyncio.Event()

        async def ask(kind, payload, visitor):
            await release.wait()
            return visitor.encode()

        checks.lanes["replays"].ask = ask
        running = asyncio.ensure_future(checks.run("replay", {}, "first"))
        checks.charge("hammering", refusals=3)
        waiting = asyncio.ensure_future(checks.run("replay", {}, "hammering"))
        await asyncio.sleep(0)
        checks.charge("patient", refusals=1)
        checks.charge("impatient", refusals=2)
        patient = asyncio.ensure_future(checks.run("replay", {}, "patient"))
        await asyncio.sleep(0)
        impatient = asyncio.ensure_future(checks.run("replay", {}, "impatient"))
        await asyncio.sleep(0)
        release.set()
        return await asyncio.gather(running, waiting, patient, impatient,
                                    return_exceptions=True)

    first, hammering, patient, impatient = asyncio.run(scenario())
    assert (first, patient) == (b"first", b"patient")
    assert isinstance(hammering, Refused) and isinstance(impatient, Refused)


def test_the_address_that_used_the_checkers_least_is_served_first():
    async def scenario():
        checks = Checks(Limits(checkers=1))
        lane = checks.lanes["replays"]
        checks.charge("crowd", 40.0)
        await lane.turn("holder")
        served = []

        async def wait(address):
            await lane.turn(address)
            served.append(address)
            lane.release()

        tasks = [asyncio.ensure_future(wait(a)) for a in ("crowd", "crowd", "honest")]
        await asyncio.sleep(0)
        lane.release()
        await asyncio.gather(*tasks)
        return served

    assert asyncio.run(scenario()) == ["honest", "crowd", "crowd"]


def test_an_upload_is_checked_at_once_beside_a_queue_full_of_costly_replays():
    """Replays keep their lane's checker and queue full, from addresses that have used no more
    than the uploader: the upload's check runs in the quick lane without waiting for them, and
    the replays' queue still refuses one more replay as busy."""
    from spacewar_ai.web.guard import Refused

    async def scenario():
        checks = Checks(Limits(checkers=1, quick_checkers=1, checks_queued=4))
        release = asyncio.Event()

        async def slow(kind, payload, visitor):  # a costly replay, held until released
            await release.wait()
            return b"frames"

        async def quick(kind, payload, visitor):
            return b"{}"

        checks.lanes["replays"].ask, checks.lanes["quick"].ask = slow, quick
        crowd = [asyncio.ensure_future(checks.run("replay", {}, f"crowd{k}")) for k in range(4)]
        await asyncio.sleep(0)
        with pytest.raises(Refused) as busy:
            await checks.run("replay", {}, "crowd9")
        upload = await asyncio.wait_for(checks.run("submission", {}, "honest"), 5)
        waiting = checks.queued
        release.set()
        await asyncio.gather(*crowd)
        return busy.value, upload, waiting

    busy, upload, waiting = asyncio.run(scenario())
    assert busy.status == 503 and "--limits checks_queued=4" in str(busy)
    assert upload == b"{}" and waiting == 4  # the crowd's four still there, the upload done


# --- every interleaving -----------------------------------------------------------------------
# A visitor's check arrives, a running check finishes, a check's client leaves (waiting or
# running), or the event loop takes some turns: any sequence of these, run through Checks.run
# with a checker that works until told to finish.
OPS = st.one_of(st.tuples(st.just("arrive"), st.integers(0, 4)),
                st.tuples(st.just("finish"), st.integers(0, 7)),
                st.tuples(st.just("leave"), st.integers(0, 7)),
                st.tuples(st.just("turns"), st.integers(1, 3)))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(checkers=st.integers(1, 2), ops=st.lists(OPS, max_size=40))
def test_no_order_of_arrivals_finishes_and_leavings_loses_a_checker(checkers, ops):
    from spacewar_ai.web.guard import Refused

    async def scenario():
        checks = Checks(Limits(checkers=checkers, checks_queued=4, checks_per_address=3))
        lane = checks.lanes["replays"]
        working: list[asyncio.Event] = []

        async def ask(kind, payload, visitor):  # a checker's work, until told to finish
            done = asyncio.Event()
            working.append(done)
            try:
                await done.wait()
            finally:
                working.remove(done)
            return b"ok"

        lane.ask = ask
        tasks = []
        for op, n in ops:
            if op == "arrive":
                tasks.append(asyncio.ensure_future(checks.run("replay", {}, f"10.0.0.{n}")))
            elif op == "finish" and working:
                working[n % len(working)].set()
            elif op == "leave" and any(not t.done() for t in tasks):
                alive = [t for t in tasks if not t.done()]
                alive[n % len(alive)].cancel()
            elif op == "turns":
                for _ in range(n):
                    await asyncio.sleep(0)
        # Every check left finishes, in turn; then the lane serves a fresh visitor.
        fresh = None
        for _ in range(10_000):
            if all(t.done() for t in tasks) and fresh is None:
                fresh = asyncio.ensure_future(checks.run("replay", {}, "10.0.0.9"))
            if fresh is not None and fresh.done():
                break
            for done in list(working):
                done.set()
            await asyncio.sleep(0)
        return tasks, lane, checks, fresh.result()

    tasks, lane, checks, fresh = asyncio.run(scenario())
    for t in tasks:
        assert t.cancelled() or isinstance(t.exception(), (Refused, type(None))), t.exception()
    assert fresh == b"ok"
    assert (lane.free, lane.running, lane.waiting, list(lane.turns), checks.queued) == (
        checkers, 0, {}, [], 0)


def test_a_dropped_check_pays_for_the_checker_it_ended():
    """A check whose client leaves while it runs ends its checker process, and the server
    starts another: its address is charged that start's CPU as well as the time it held the
    checker, so dropping checks costs the dropper, not the server."""
    import json
    import time

    from spacewar_ai.config import GameConfig

    class LeavesSoon:
        async def receive(self):
            await asyncio.sleep(0.3)
            return {"type": "http.disconnect"}

    settings = {**GameConfig().to_dict(), "max_episode_steps": 10**7, "frame_skip": 1000}
    long = json.dumps({"version": 1, "config": settings, "seed": 1, "players": ["a", "b"],
                       "actions": ["0" * 10_000] * 2, "result": {}}).encode()

    async def scenario():
        checks = Checks(Limits(checkers=1, check_seconds=300, replay_frames=10**8))
        checks.start()
        lane = checks.lanes["replays"]
        try:
            await lane.pool.idle[0]  # the checker is ready before the check is asked for
            started = lane.pool.start_cpu
            began = time.monotonic()
            with pytest.raises(Gone):
                await checks.run_for(LeavesSoon(), "replay", {"name": "long", "text": long},
                                     "198.51.100.7")
            return started, time.monotonic() - began, checks.cpu_used("198.51.100.7")
        finally:
            await checks.close()

    started, held, charged = asyncio.run(scenario())
    assert started > 0
    # Held for at most `held` seconds; the rest is the start of the checker that replaced it.
    assert charged >= started and charged > held


def test_a_newcomer_behind_a_crowd_of_a_thousand_is_served_at_its_first_try():
    """A thousand addresses, each having used the checkers a little, keep the lane's queue full
    and retry whenever refused: their retries do not push each other out, and a newcomer takes
    a place at its first try and is served next."""
    from spacewar_ai.web.guard import Refused

    async def scenario():
        checks = Checks(Limits(checkers=1, checks_queued=16))
        release = asyncio.Event()
        served = []

        async def ask(kind, payload, visitor):  # a checker's work, held until released
            await release.wait()
            served.append(visitor)
            return b"ok"

        checks.lanes["replays"].ask = ask
        crowd = [f"198.18.{k // 250}.{k % 250}" for k in range(1000)]
        for k, address in enumerate(crowd):
            checks.charge(address, 1.0 + (k % 7) * 0.1)  # about as much each
        tasks = [asyncio.ensure_future(checks.run("replay", {}, a)) for a in crowd[:16]]
        await asyncio.sleep(0)
        refused = 0
        for address in crowd[16:]:  # every other crowd address tries once: all refused
            # One let in would wait for the checker: it leaves after a moment.
            with contextlib.suppress(asyncio.TimeoutError):
                try:
                    await asyncio.wait_for(checks.run("replay", {}, address), 0.5)
                except Refused:
                    refused += 1
        newcomer = asyncio.ensure_future(checks.run("replay", {}, "203.0.113.7"))
        await asyncio.sleep(0)
        release.set()
        await asyncio.gather(*tasks, newcomer, return_exceptions=True)
        return refused, served, newcomer.result()

    refused, served, answer = asyncio.run(scenario())
    assert refused == 1000 - 16 and answer == b"ok"
    assert served.index("203.0.113.7") == 1  # after the check that was running


def test_addresses_with_nothing_in_the_hour_are_forgotten_a_pass_a_while(monkeypatch):
    """Past 10,000 addresses, those whose hour has run out are forgotten, in one pass, and not
    again within a minute however many refusals are charged meanwhile."""
    from spacewar_ai.web import checks as module

    clock = [1000.0]
    monkeypatch.setattr(module.time, "monotonic", lambda: clock[0])
    checks = Checks(Limits())
    for k in range(10_001):
        checks.charge(f"10.0.{k // 250}.{k % 250}", refusals=1)
    clock[0] += module.HOUR + 1  # the crowd's hour is over
    passes = []
    ledger = checks.ledger
    checks.ledger = lambda key: passes.append(key) or ledger(key)
    checks.charge("203.0.113.1", refusals=1)
    assert list(checks.spent) == ["203.0.113.1"] and len(passes) == 10_001
    for k in range(10_001):  # a new crowd, charged within the minute: no second pass
        checks.charge(f"10.1.{k // 250}.{k % 250}", refusals=1)
    assert len(passes) == 10_001 and len(checks.spent) == 10_002
