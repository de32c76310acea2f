"""The checkers' queue (web/checks.py): served an address at a time, round robin, so a crowd of
addresses cannot starve one visitor; a check whose client has gone leaves the queue; a check
that only waits is charged its wall-clock time. The checks themselves run in real processes in
test_budgets.py and test_hostile_uploads.py."""

from __future__ import annotations

import asyncio

import pytest

from spacewar_ai.web.checks import Checks, Gone
from spacewar_ai.web.guard import Limits


def test_waiting_checks_are_served_an_address_at_a_time():
    async def scenario():
        checks = Checks(Limits(checkers=1))
        await checks._turn("holder")  # the one checker is taken
        served = []

        async def wait(address):
            await checks._turn(address)
            served.append(address)
            checks._release()

        # A crowd address queues three checks before two other visitors queue one each.
        tasks = [asyncio.ensure_future(wait(a)) for a in
                 ("crowd", "crowd", "crowd", "honest", "other")]
        await asyncio.sleep(0)
        checks._release()
        await asyncio.gather(*tasks)
        return served, checks

    served, checks = asyncio.run(scenario())
    assert served == ["crowd", "honest", "other", "crowd", "crowd"]
    assert checks.free == 1 and not checks.waiting and not checks.turns


def test_a_check_whose_client_left_leaves_the_queue():
    class Left:
        """A request whose client disconnects while its check waits."""

        async def receive(self):
            await asyncio.sleep(0.05)
            return {"type": "http.disconnect"}

    async def scenario():
        checks = Checks(Limits(checkers=1))
        await checks._turn("holder")
        with pytest.raises(Gone):
            await checks.run_for(Left(), "replay", {}, "10.0.0.1")
        left = (checks.queued, dict(checks.waiting), list(checks.turns), dict(checks.checks.held))
        checks._release()  # the holder's checker goes back to the free ones, not to the gone
        return left, checks.free

    left, free = asyncio.run(scenario())
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

        checks._ask = ask
        # The crowd has used the checkers this hour; the newcomer has not.
        for address, seconds in (("crowd1", 30.0), ("crowd2", 10.0)):
            checks._charge(address, seconds)
        crowd = [asyncio.ensure_future(checks.run("replay", {}, a))
                 for a in ("crowd1", "crowd1", "crowd2")]
        await asyncio.sleep(0)  # one runs, two wait: the queue holds its three
        honest = asyncio.ensure_future(checks.run("replay", {}, "honest"))
        late = asyncio.ensure_future(checks.run("replay", {}, "crowd3"))  # used more than honest
        checks._charge("crowd3", 20.0)
        await asyncio.sleep(0)
        release.set()
        return await asyncio.gather(*crowd, honest, late, return_exceptions=True), checks

    (first, bumped, other, honest, late), checks = asyncio.run(scenario())
    assert (first, other, honest) == (b"crowd1", b"crowd2", b"honest")
    assert isinstance(bumped, Refused) and bumped.status == 503
    # A crowd address with nothing queued but more used than the newcomer finds no room.
    assert isinstance(late, Refused) and late.status == 503
    assert checks.queued == 0 and checks.free == 1


def test_the_address_that_used_the_checkers_least_is_served_first():
    async def scenario():
        checks = Checks(Limits(checkers=1))
        checks._charge("crowd", 40.0)
        await checks._turn("holder")
        served = []

        async def wait(address):
            await checks._turn(address)
            served.append(address)
            checks._release()

        tasks = [asyncio.ensure_future(wait(a)) for a in ("crowd", "crowd", "honest")]
        await asyncio.sleep(0)
        checks._release()
        await asyncio.gather(*tasks)
        return served

    assert asyncio.run(scenario()) == ["honest", "crowd", "crowd"]
