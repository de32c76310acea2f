"""Videos: frames go to a temporary file that takes the chosen name only when it is complete, in
either format; a name the recorder cannot write is refused before the game starts."""

import numpy as np
import pytest

from spacewar_ai.game.recording import RecordingError, VideoRecorder, open_recorder
from tests.helpers import read_video_info


@pytest.mark.parametrize("suffix", [".gif", ".mp4"])
def test_a_video_appears_under_its_name_only_when_closed(tmp_path, suffix):
    path = tmp_path / f"game{suffix}"
    recorder = VideoRecorder(path, fps=12.5)
    for k in range(6):
        frame = np.zeros((48, 64, 3), dtype=np.uint8)
        frame[:, 8 * k:8 * k + 8] = 255  # a bar that moves, so frames differ
        recorder.add(frame)
    assert not path.exists()  # still being written under a temporary name
    assert recorder.close() == path and recorder.frames == 6
    frames, size = read_video_info(path)
    assert frames == 6 and size == (64, 48)
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_names_the_recorder_cannot_write_are_refused_before_any_frame(tmp_path):
    with pytest.raises(RecordingError, match="use a .mp4 or .gif file name"):
        VideoRecorder(tmp_path / "game.avi", fps=50)
    with pytest.raises(RecordingError, match="does not exist"):
        VideoRecorder(tmp_path / "missing" / "game.gif", fps=50)
    assert open_recorder(None, per_decision=True) is None
    assert open_recorder(tmp_path / "d.gif", per_decision=True).fps == 12.5  # 50 fps / 4 frames
