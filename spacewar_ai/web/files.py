"""The project files the browser app may read: every path confined to the folder the server
started in, and pilot specs whose files are of the kind the spec says, so no other file (a key,
a config) is ever opened as a pilot and quoted back in an error."""

from __future__ import annotations

import asyncio
import heapq
import json
import os
import time
from pathlib import Path
from typing import Any

from ..game.replays import replay_files
from ..util.errors import UserError

REPLAYS_LISTED = 500  # the Replays page's list, newest first
TOURNAMENTS_LISTED = 50  # the Tournaments page's, newest first
RUNS_LISTED = 40  # the runs whose best.pt the pilot lists offer, by name
TOURNAMENT_REPLAYS = 40  # the saved games a tournament lists (the Replays page has the newest)
TOURNAMENT_FILE_BYTES = 2**20  # a tournament's standings or crosstable as read for the page
LIST_SECONDS = 5.0  # a listing serves the requests of this long before a new scan

# The endings a file named by a spec must have, by the spec's prefix ("" = a checkpoint path).
# The file endings each kind of spec (pilots/spec.py) may name here.
SPEC_SUFFIXES = {"strategy": (".py",), "onnx": (".onnx",), "sb3": (".zip",), "ppo": (".pt",),
                 "dqn": (".pt",), "checkpoint": (".pt",), "pretrained": (".pt",)}


def _lm_files(path: Path) -> bool:
    """Whether `path` is what an lm: spec may name: a GGUF file, or a model's or adapter's
    folder."""
    if path.is_file():
        return path.suffix.lower() == ".gguf"
    return (path / "config.json").is_file() or (path / "adapter_config.json").is_file()


# --- files the app may read --------------------------------------------------------------------
class Files:
    """The folders the app reads, all under `root` (the folder the server started in)."""

    def __init__(self, root: Path, checkpoint_dir: str | Path = "checkpoints",
                 ratings_file: str | Path | None = None):
        self.root = Path(root).resolve()
        self.runs = self.root / "runs"
        self.checkpoints = (self.root / checkpoint_dir).resolve()
        self.ratings = (self.root / ratings_file).resolve() if ratings_file else \
            self.checkpoints / "ratings.json"

    def inside(self, path: str | Path, under: Path | None = None) -> Path:
        """The path resolved, if it lies under `under` (default the root); else ValueError."""
        base = under or self.root
        full = (self.root / path).resolve()
        if not full.is_relative_to(base):
            raise UserError(f"{path}: outside {base.relative_to(self.root) if base != self.root else 'this project'}"
                            "; only the project's own files can be opened here")
        return full

    def check_spec(self, spec: str) -> str:
        """A pilot spec whose files lie in the project and are of the kind the spec says (a
        strategy file ends in .py, a checkpoint in .pt, ...), so that no other file (a key, a
        config) is ever opened as a pilot and quoted back in an error."""
        from ..pilots.onnx_check import check_onnx_file
        from ..pilots.spec import map_files, parse_spec, spec_files

        spec = str(spec).strip()[:500]
        if not spec:
            raise UserError("no pilot given: choose one from the list or type a spec")
        parsed = parse_spec(spec)
        for part in parsed.parts if parsed.is_planner else (parsed,):
            if part.kind == "lm":
                self._local_lm(part.target)
            for path in spec_files(part):
                full = self.root / path
                if part.kind == "lm":
                    if full.exists() and not _lm_files(self.inside(path)):
                        raise UserError(f"{path.name}: an lm: model is a .gguf file or a "
                                        "folder a model or an adapter was saved into")
                    continue
                # Only an existing file can be quoted back; a mistyped spec gets make_pilot's word.
                if full.exists() and path.suffix.lower() not in SPEC_SUFFIXES[part.kind]:
                    raise UserError(f"{path.name}: a {part.kind} file ends in "
                                    f"{' or '.join(SPEC_SUFFIXES[part.kind])}")
                if part.kind == "onnx" and full.is_file():
                    check_onnx_file(self.inside(path), path.name)  # as the arena checks it
        return map_files(parsed, self.inside).text

    def _local_lm(self, model: str) -> None:
        """Refuse an lm: spec whose base model is not on this server: a hub id (which the game
        worker would download), or an adapter whose record names one. The spec is named as the
        page gave it, never the record's words."""
        from ..lm.models import SMOLLM2, LMError, resolve_lm

        try:
            base, _ = resolve_lm(model)
        except LMError:
            return  # make_pilot names what is wrong; its paths are checked like any other
        # A path that exists is judged with the spec's other files (inside the project or not).
        if base.strip().lower() != SMOLLM2 and not (self.root / Path(base).expanduser()).exists():
            raise UserError(f"lm:{model[:80]}: only language models on this server fly here "
                            f"({SMOLLM2}, or a model or adapter folder inside the project); a "
                            "hub id is never downloaded for a page")

    def replay(self, rel: str) -> Path:
        """The replay file `rel` names (a path as /api/replays lists them): a .json file in a
        replays/ folder under runs/; ValueError otherwise, naming `rel` as given."""
        rel = str(rel)[:300]
        try:
            full = self.inside(rel, self.runs)
        except ValueError:
            full = None
        if full is None or full.suffix != ".json" or full.parent.name != "replays":
            raise UserError(f"{rel}: not a replay of this server (the Replays page lists them)")
        if not full.is_file():
            raise UserError(f"{rel}: no such replay (the Replays page lists them)")
        return full

    @property
    def live_replays(self) -> Path:
        """Where live games save their rounds, kept within the server's retention."""
        return self.runs / "live" / "replays"

    def replays(self) -> list[dict[str, Any]]:
        """The newest REPLAYS_LISTED replays under runs/, newest first: one scan of their
        folders (a directory read and one stat a file), which the app runs off its event loop
        and shares among the requests of a few seconds (Listing). Links are left out, so
        nothing listed leads out of runs/."""
        folders = [self.live_replays, self.runs / "replays",
                   *sorted(self.runs.glob("tournaments/*/replays"))]
        found = [(modified, name, str(folder.relative_to(self.root)))
                 for folder in folders
                 if not folder.is_symlink() and folder.resolve().is_relative_to(self.runs)
                 for modified, name, _ in replay_files(folder)]
        return [{"path": f"{folder}/{name}", "name": name}
                for _, name, folder in heapq.nlargest(REPLAYS_LISTED, found)]

    def tournaments(self) -> list[dict[str, Any]]:
        """The newest TOURNAMENTS_LISTED tournaments, each with its standings, its crosstable
        (each read within TOURNAMENT_FILE_BYTES), how many games it saved and the first
        TOURNAMENT_REPLAYS of them. One pass over each folder, run off the event loop (Listing),
        so the answer's size and a request's time do not grow with the files on disk."""
        from ..util.preflight import read_bounded

        folder = self.runs / "tournaments"
        try:
            with os.scandir(folder) as entries:
                names = heapq.nlargest(TOURNAMENTS_LISTED, (
                    e.name for e in entries if e.is_dir(follow_symlinks=False)))
        except (FileNotFoundError, NotADirectoryError):
            names = []
        out = []
        for name in names:
            try:
                standings = json.loads(read_bounded(folder / name / "standings.json",
                                                    "standings", TOURNAMENT_FILE_BYTES))
                table = folder / name / "crosstable.md"
                crosstable = read_bounded(table, "crosstable", TOURNAMENT_FILE_BYTES).decode(
                    "utf-8", "replace") if table.is_file() else ""
            except ValueError:  # unreadable, too large, or not JSON
                continue
            saved = [n for _, n, _ in replay_files(folder / name / "replays")]
            out.append({"name": name, "standings": standings, "crosstable": crosstable,
                        "saved": len(saved),
                        "replays": [f"runs/tournaments/{name}/replays/{n}"
                                    for n in heapq.nsmallest(TOURNAMENT_REPLAYS, saved)]})
        return out

    def ratings_rows(self) -> dict[str, Any]:
        from ..rating.ratings import RatingsFile, rated_games

        rows = []
        data = RatingsFile(self.ratings).data
        for identity, p in data["players"].items():
            games = rated_games(p)
            rows.append({"name": p.get("name", identity), "identity": identity,
                         "rating": p.get("rating"), "ci95": p.get("ci95"), "games": games})
        rows.sort(key=lambda r: -(r["rating"] or 0.0))
        return {"file": str(self.ratings.relative_to(self.root))
                if self.ratings.is_relative_to(self.root) else str(self.ratings), "players": rows}

    def pilots(self) -> list[str]:
        """The pilots a page offers: the scripted ones, the shipped networks and LM pilots, and
        the first RUNS_LISTED runs' best.pt (by name): one pass over the checkpoint folder, run
        off the event loop and shared (Listing)."""
        from ..pilots.scripted import SCRIPTED_SPECS

        try:
            with os.scandir(self.checkpoints) as entries:
                runs = heapq.nsmallest(RUNS_LISTED, (
                    e.name for e in entries if e.is_dir(follow_symlinks=False)
                    and (self.checkpoints / e.name / "best.pt").is_file()))
        except (FileNotFoundError, NotADirectoryError):
            runs = []
        found = [str((self.checkpoints / name / "best.pt").relative_to(self.root))
                 for name in runs]
        return [*SCRIPTED_SPECS, "pretrained", "search:pretrained",
                "search:heuristic:hard+heuristic:hard", *shipped_lm_pilots(), *found]


def shipped_lm_pilots() -> list[str]:
    """The shipped language-model pilots, in bfloat16 (the fast path), where this server can
    fly them: the lm extra and SmolLM2 installed; else none."""
    import importlib.util

    from ..lm.models import LMError, shipped_adapters, smollm2_file

    if importlib.util.find_spec("transformers") is None or importlib.util.find_spec("peft") is None:
        return []
    try:
        smollm2_file()
    except LMError:
        return []
    return [f"lm:{name}@bf16" for name in shipped_adapters()]


class Listing:
    """What `scan()` lists of the files on disk (`Files.replays`, `Files.tournaments`), scanned in
    a thread (never on the event loop) at most once every LIST_SECONDS, however many requests
    ask. Only the first request waits for a scan; after it, each is answered from the last scan
    at once, and one that finds it stale starts the next in the background, so no request's
    time grows with the files on disk."""

    def __init__(self, scan):
        self._scan = scan
        self.listed: Any = None
        self.at = -LIST_SECONDS
        self.scan: asyncio.Task | None = None

    async def get(self) -> Any:
        if time.monotonic() - self.at >= LIST_SECONDS and (self.scan is None or
                                                           self.scan.done()):
            self.scan = asyncio.ensure_future(self._rescan())
        if self.listed is None:
            await asyncio.shield(self.scan)
        return self.listed

    async def _rescan(self) -> None:
        self.listed = await asyncio.to_thread(self._scan)
        self.at = time.monotonic()


def still_there(root: Path, listed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The replays of a listing whose files are still there: a live game's retention may have
    removed some since the scan (one stat a listed file, in a thread)."""
    return [r for r in listed if (root / r["path"]).is_file()]
