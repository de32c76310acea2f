"""Videos of games: `.mp4` through imageio-ffmpeg, `.gif` through imageio (Pillow).

Frames are (H, W, 3) uint8 arrays, exactly what `render_mode="rgb_array"` returns. Both writers
stream frame by frame, so a long game is never held in memory, and the file appears under its
name only when complete (written to a temporary name, then renamed).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from ..util.errors import UserError

FORMATS = (".mp4", ".gif")


class RecordingError(UserError):
    """Recording cannot start; the message says what to install or change."""


def _ffmpeg_exe() -> str:
    try:
        import imageio_ffmpeg
    except ImportError:
        raise RecordingError("recording .mp4 needs ffmpeg: pip install imageio-ffmpeg (or record "
                             "a .gif instead)") from None
    try:
        exe = imageio_ffmpeg.get_ffmpeg_exe()
    except RuntimeError as exc:
        raise RecordingError(f"recording .mp4 needs ffmpeg, which was not found ({exc}); "
                             "pip install imageio-ffmpeg, or record a .gif instead") from None
    if not os.path.isfile(exe):
        raise RecordingError(f"recording .mp4 needs ffmpeg, but {exe} does not exist (check "
                             "IMAGEIO_FFMPEG_EXE); pip install imageio-ffmpeg, or record a .gif")
    return exe


class VideoRecorder:
    """`add(frame)` for each frame, then `close()`. fps is the playback rate."""

    def __init__(self, path, fps: float):
        self.path = Path(path)
        suffix = self.path.suffix.lower()
        if suffix not in FORMATS:
            raise RecordingError(f"--record {self.path}: use a .mp4 or .gif file name")
        if not self.path.parent.exists():
            raise RecordingError(f"--record {self.path}: the folder {self.path.parent} does not "
                                 "exist")
        self.fps = float(fps)
        self.frames = 0
        self.size: tuple[int, int] | None = None
        self._tmp = self.path.with_name(f".{self.path.stem}.partial{suffix}")
        self._writer = None
        self._kind = suffix
        if suffix == ".mp4":
            self._exe = _ffmpeg_exe()  # fail before the game starts, not at the first frame
        else:
            try:
                import imageio.v2  # noqa: F401
            except ImportError:
                raise RecordingError("recording .gif needs imageio and Pillow: pip install "
                                     "imageio pillow") from None

    def add(self, frame: np.ndarray) -> None:
        frame = np.ascontiguousarray(frame, dtype=np.uint8)
        if self._writer is None:
            self._open(frame.shape[1], frame.shape[0])
        if self._kind == ".mp4":
            self._writer.send(frame)
        else:
            self._writer.append_data(frame)
        self.frames += 1

    def _open(self, width: int, height: int) -> None:
        self.size = (width, height)
        if self._kind == ".mp4":
            import imageio_ffmpeg

            os.environ.setdefault("IMAGEIO_FFMPEG_EXE", self._exe)
            # yuv420p needs even sides; macro_block_size=1 keeps ours as they are (640 is even).
            self._writer = imageio_ffmpeg.write_frames(
                str(self._tmp), (width, height), fps=self.fps, codec="libx264",
                pix_fmt_out="yuv420p", macro_block_size=1, output_params=["-preset", "veryfast"],
                ffmpeg_log_level="error")
            self._writer.send(None)  # start the generator
        else:
            import imageio.v2 as imageio

            self._writer = imageio.get_writer(str(self._tmp), mode="I",
                                              duration=1000.0 / self.fps, loop=0)

    def close(self) -> Path | None:
        """Finish the file; returns its path, or None when no frame was added."""
        if self._writer is None:
            return None
        writer, self._writer = self._writer, None
        writer.close()
        os.replace(self._tmp, self.path)
        return self.path


def open_recorder(path, per_decision: bool, config=None) -> VideoRecorder | None:
    """The recorder for --record PATH (None without one): one frame per decision for games
    played at the decision pace (demo, evaluate, replays), else one per frame (human play)."""
    if not path:
        return None
    from ..config import GameConfig

    cfg = config if config is not None else GameConfig()
    return VideoRecorder(path, cfg.fps / cfg.frame_skip if per_decision else cfg.fps)
