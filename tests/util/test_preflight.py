"""Checks before work: memory for the counts, outputs that can be written, files read whole
only when they are regular files of a sane size. Each refusal names the culprit and the fix."""

import os
import threading

import pytest

from spacewar_ai.util.preflight import (
    available_memory,
    check_games,
    fits_in_memory,
    read_bounded,
    writable,
)


def test_a_count_larger_than_the_free_memory_is_refused_with_its_flag():
    free = available_memory()
    assert free is not None and free > 0
    with pytest.raises(ValueError, match=r"--eval-episodes 1,000,000,000,000 needs about .* "
                                         r"free; lower --eval-episodes"):
        check_games("--eval-episodes", 10**12)
    check_games("--eval-episodes", 200)  # a usual count passes
    with pytest.raises(ValueError, match="lower it"):
        fits_in_memory("[dqn] buffer_size", free * 2, "lower it")


def test_outputs_are_tried_where_they_will_go_and_nothing_stays(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the project: folders are made for outputs inside it
    a_file = tmp_path / "a.txt"
    a_file.write_text("x")
    with pytest.raises(ValueError, match="is a file; give a folder"):
        writable(a_file, "--checkpoint-dir", folder=True)
    with pytest.raises(ValueError, match="is a folder; give a file name inside it"):
        writable(tmp_path, "--results")
    with pytest.raises(ValueError, match="a.txt is a file, so nothing can be written under it"):
        writable(a_file / "deeper" / "out.jsonl", "--results")
    writable(tmp_path / "new" / "folders" / "out.jsonl", "--results")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt"]  # not even the folders
    # Outside the project, a missing folder is refused, not made (at the root, say).
    elsewhere = tmp_path.parent / f"{tmp_path.name}-elsewhere" / "out.jsonl"
    with pytest.raises(ValueError, match="-elsewhere does not exist; make it first"):
        writable(elsewhere, "--results")
    assert not elsewhere.parent.exists()
    writable(tmp_path.parent / "out.jsonl", "--results")  # an existing folder is fine anywhere


def test_only_regular_files_of_a_sane_size_are_read(tmp_path):
    with pytest.raises(ValueError, match="not a regular file"):
        read_bounded("/dev/zero", "config file")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    done = []
    reader = threading.Thread(target=lambda: done.append(_refusal(fifo)), daemon=True)
    reader.start()
    reader.join(30)  # a FIFO with no writer must not block the read
    assert done and "not a regular file" in done[0]
    big = tmp_path / "big.json"
    big.write_bytes(b"0" * 2048)
    with pytest.raises(ValueError, match="big.json: 2.0 KB, more than the 1.0 KB"):
        read_bounded(big, "ratings file", 1024)
    link = tmp_path / "link.json"
    link.symlink_to(big)
    assert read_bounded(link, "ratings file") == b"0" * 2048
    with pytest.raises(ValueError, match="missing.json: cannot be read"):
        read_bounded(tmp_path / "missing.json", "ratings file")


def _refusal(path) -> str:
    try:
        read_bounded(path, "config file")
    except ValueError as exc:
        return str(exc)
    return ""
