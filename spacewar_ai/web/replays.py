"""The app's replays: the list of those saved under the project (scanned off the event loop,
files.Listing) and a replay's frames, from a saved file or an upload, replayed in a checker
process (web.checks), never in the server's. An answer's bytes count against
`answers_mb_in_all` until they are sent (`HeldAnswer`)."""

from __future__ import annotations

import asyncio

from .checks import Checks, Gone
from .files import Files, Listing, still_there
from .guard import (
    Limits,
    Quota,
    Refused,
    TooLarge,
    TooSlow,
    failure,
    refusal,
    visitor,
)


def replay_routes(files: Files, limits: Limits, checks: Checks) -> tuple[list, Quota]:
    """The routes of `/api/replays` and `/api/replay`, and the budget of answers in flight."""
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    replay_list = Listing(files.replays)
    answers = Quota(limits, None, "answers_mb_in_all")

    async def api_replays(request):
        listed = await replay_list.get()
        return JSONResponse({"replays": await asyncio.to_thread(still_there, files.root,
                                                                listed)})

    async def api_replay(request):
        """A replay's frames, replayed in a checker process (web.checks), never here."""
        try:
            who = visitor(request.scope)
            if request.method == "POST":
                body = await checks.body_for("replay", request, who, "upload_bytes",
                                             "the replay")
                name = request.query_params.get("name", "the uploaded file")[:200]
                payload = {"text": body, "name": name}
            else:
                rel = request.query_params.get("path", "")[:300]
                payload = {"path": str(files.replay(rel)), "name": rel}
            data = await checks.run_for(request, "replay", payload, who)
            size = -(-len(data) // 2**20)  # in whole MB
            refused = answers.refusal(who, size)
            if refused is not None:
                raise refused
        except Gone:
            return Response(status_code=499)  # nobody is left to read it
        except (TooLarge, TooSlow, Refused) as exc:  # each knows its status
            return refusal(exc, exc.status)
        except (ValueError, OSError) as exc:  # ReplayError is a ValueError
            return refusal(exc)
        except Exception as exc:  # never a traceback to a visitor
            return failure(exc, "this replay")
        return HeldAnswer(data, who, size)

    class HeldAnswer(Response):
        """An answer whose bytes count against `answers_mb_in_all` until they are sent, or its
        reader is cut off at `answer_seconds`. It is sent in pieces: uvicorn waits for a slow
        reader's socket to drain before it takes the next piece, so once the last is taken
        little of the answer is left in its buffers."""

        PIECE = 2**16

        def __init__(self, data: bytes, who: str, size: int):
            super().__init__(data, media_type="application/json")
            self.who, self.size = who, size
            answers.take(who, size)

        async def __call__(self, scope, receive, send):
            try:
                await send({"type": "http.response.start", "status": self.status_code,
                            "headers": self.raw_headers})
                body, piece = self.body, self.PIECE
                for at in range(0, max(len(body), 1), piece):
                    await send({"type": "http.response.body", "body": body[at:at + piece],
                                "more_body": at + piece < len(body)})
            finally:
                answers.give(self.who, self.size)

    return [Route("/api/replays", api_replays),
            Route("/api/replay", api_replay, methods=["GET", "POST"])], answers
