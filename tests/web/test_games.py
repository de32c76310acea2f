"""Live games in worker processes: limits on games and sandboxes in all."""

import asyncio


def test_games_and_sandboxes_in_all_are_limited():
    from spacewar_ai.web.games import LiveGame, Workers, _sandboxes
    from spacewar_ai.web.guard import Limits

    workers = Workers(Limits(games_in_all=3, games_per_client=2, sandboxes_in_all=2))
    assert _sandboxes({"mode": "watch", "a": "strategy:a.py", "b": "search:strategy:b.py"}) == 2
    with workers.holding("g1", LiveGame(None, "1.1.1.1", [], 2)):
        assert "sandboxes_in_all=2" in workers.refusal("2.2.2.2", 1)
        assert workers.refusal("2.2.2.2", 0) == ""  # a game without strategy files may start
        with workers.holding("g2", LiveGame(None, "1.1.1.1", [], 0)):
            assert "games_per_client=2" in workers.refusal("1.1.1.1", 0)
            with workers.holding("g3", LiveGame(None, "4.4.4.4", [], 0)):
                refused = workers.refusal("5.5.5.5", 0)
                assert refused.startswith("live games on the server") and "games_in_all=3" \
                    in refused
    # Every game that ended gave back what it held, however it ended.
    assert workers.refusal("1.1.1.1", 2) == "" and not workers.live
    asyncio.run(workers.close())  # games still waiting for a worker hold none to stop
