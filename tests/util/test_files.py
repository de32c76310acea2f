"""Writes a kill cannot tear: a temporary file beside the target, flushed and renamed, what
killed writers left behind cleared, and the package's shipped files found."""

import os
import time

import pytest

from spacewar_ai.util.files import (
    SHIPPED_DIR,
    STALE_TEMP_SECONDS,
    atomic_write_bytes,
    hide_paths,
    remove_stale_temps,
)


def test_a_write_is_whole_or_absent_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "deep" / "state.json"
    atomic_write_bytes(target, lambda f: f.write(b"first"))
    assert target.read_bytes() == b"first"
    assert oct(target.stat().st_mode & 0o777) == oct(0o666 & ~_umask())  # as any other file

    def dies_halfway(f):
        f.write(b"sec")
        raise KeyboardInterrupt  # a kill in the middle of the write

    with pytest.raises(KeyboardInterrupt):
        atomic_write_bytes(target, dies_halfway)
    assert target.read_bytes() == b"first"
    assert [p.name for p in target.parent.iterdir()] == ["state.json"]


def test_a_write_removes_what_a_killed_writer_of_the_same_file_left(tmp_path):
    stale = tmp_path / ".state.json.dead1.tmp"
    live = tmp_path / ".state.json.live2.tmp"  # a writer at work right now
    other = tmp_path / ".other.json.dead3.tmp"
    for p in (stale, live, other):
        p.write_bytes(b"{")
    long_ago = time.time() - STALE_TEMP_SECONDS - 60
    for p in (stale, other):
        os.utime(p, (long_ago, long_ago))
    atomic_write_bytes(tmp_path / "state.json", lambda f: f.write(b"{}"))
    assert (tmp_path / "state.json").read_bytes() == b"{}"
    assert not stale.exists() and live.exists() and other.exists()


def test_a_run_clears_its_own_folders_temporaries_when_it_starts(tmp_path):
    (tmp_path / "league").mkdir()
    left = [tmp_path / ".latest.pt.x1.tmp", tmp_path / "league" / ".u000010.pt.x2.tmp"]
    for p in left:
        p.write_bytes(b"partial")
    kept = tmp_path / "best.pt"
    kept.write_bytes(b"weights")
    assert sorted(remove_stale_temps(tmp_path)) == sorted(left)
    assert not any(p.exists() for p in left) and kept.exists()


def test_the_shipped_files_are_where_the_package_says():
    assert (SHIPPED_DIR / "ppo_spacewar.pt").is_file()
    assert (SHIPPED_DIR / "hard_model.pt").is_file()
    assert sorted(p.name for p in (SHIPPED_DIR / "lm").iterdir()) == ["dagger", "grpo", "sft"]
    assert len(list((SHIPPED_DIR / "panel").glob("*.py"))) == 6


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_words_for_a_visitor_show_a_file_by_its_name_alone():
    said = ("player 'onnx:/srv/app/runs/arena/submissions/6-ab.onnx': not readable; see "
            "'/home/u/x.toml' and runs/replays/a.json at 1/50 s, from ~/notes/a.txt")
    assert hide_paths(said) == ("player 'onnx:6-ab.onnx': not readable; see 'x.toml' and "
                                "runs/replays/a.json at 1/50 s, from ~/notes/a.txt")


def test_printable_text_is_one_short_line_a_terminal_shows_as_it_is():
    from spacewar_ai.util.files import printable

    assert printable("KeyError: '\x1b[2J\x07boom'\nnext") == "KeyError: '\\x1b[2J\\x07boom'\\nnext"
    assert printable("x" * 500) == "x" * 197 + "..." and printable("ok é") == "ok é"
    assert printable("strategy:\x1b]0;owned\x07.py", 120) == "strategy:\\x1b]0;owned\\x07.py"
