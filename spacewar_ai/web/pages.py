"""The app's pages and the lists they show: the one page (index.html) at each page's path, the
pilots and difficulties to choose from, and the Tournaments page's data; what is read off disk
is scanned off the event loop and shared (files.Listing)."""

from __future__ import annotations

from pathlib import Path

from .files import Files, Listing
from .live import SPEEDS, public_message


def page_routes(files: Files, static: Path, pages: tuple[str, ...]) -> list:
    """The routes of `/`, each page of `pages`, `/api/pilots` and `/api/tournaments`."""
    from starlette.responses import FileResponse, JSONResponse, RedirectResponse
    from starlette.routing import Route

    def tournaments_page() -> dict:
        """The Tournaments page's data: the ratings file's rows and the tournaments."""
        try:
            ratings = files.ratings_rows()
        except ValueError as exc:
            ratings = {"file": str(files.ratings), "players": [], "error": public_message(exc)}
        return {"ratings": ratings, "tournaments": files.tournaments()}

    tournament_list, pilot_list = Listing(tournaments_page), Listing(files.pilots)

    async def page(request):
        return FileResponse(static / "index.html")

    async def home(request):
        return RedirectResponse("/play")

    async def api_pilots(request):
        from ..rating.difficulty import ladder

        levels = [{"value": "auto", "label": "auto: the level nearest even against you"}]
        levels += [{"value": f"{level.number:g}", "label": f"{level.label}, rated "
                    f"{level.rating:.0f}"} for level in ladder()]
        return JSONResponse({"pilots": await pilot_list.get(), "difficulties": levels,
                             "speeds": list(SPEEDS)})

    async def api_tournaments(request):
        return JSONResponse(await tournament_list.get())

    return [Route("/", home), *[Route(f"/{p}", page) for p in pages],
            Route("/api/pilots", api_pilots), Route("/api/tournaments", api_tournaments)]
