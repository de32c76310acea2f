"""The toolkit every child process of the package is spoken to with (util/processes.py): one
framing, one pool of children started ahead, one cap on a child's memory. Real pipes and real
processes."""

import asyncio
import io
import os
import subprocess
import sys
import threading
import time

import pytest

from spacewar_ai.util.processes import (
    FrameReader,
    FrameTooLong,
    NotReady,
    StartedAhead,
    frame,
    read_frame,
    read_frame_async,
    write_frame,
)

# A child that says it is ready, then answers each frame with the frame reversed and its pid.
ECHO = """
import os, sys
from spacewar_ai.util.processes import read_frame, say_ready, write_frame
out = os.fdopen(1, "wb")
say_ready(out)
while True:
    try:
        data = read_frame(sys.stdin.buffer)
    except EOFError:
        break
    write_frame(out, data[::-1] + b" " + str(os.getpid()).encode())
"""


def test_frames_arrive_whole_however_the_bytes_are_split():
    read_fd, write_fd = os.pipe()
    reader = FrameReader(read_fd)
    try:
        data = frame(b'{"type": "key"}') + frame(b"") + frame(b"x" * 100_000)
        os.write(write_fd, data[:5])
        assert reader.frames(0.05) == []  # half a length waits for the rest
        os.write(write_fd, data[5:40])  # two whole frames and a piece of the third
        assert reader.frames(0.05) == [b'{"type": "key"}', b""]
        # More than a pipe holds, and than one read takes: written while it is read.
        writer = threading.Thread(target=os.write, args=(write_fd, data[40:]))
        writer.start()
        got = []
        deadline = time.monotonic() + 60
        while not got and time.monotonic() < deadline:
            got = reader.frames(1.0)
        writer.join()
        assert got == [b"x" * 100_000]
        os.close(write_fd)
        began = time.monotonic()
        assert reader.frames(5.0) == [] and reader.closed
        assert time.monotonic() - began < 5.0  # a closed pipe answers at once
    finally:
        os.close(read_fd)


def test_a_frame_cut_short_is_the_end_and_a_long_one_is_refused_unread():
    written = io.BytesIO()
    write_frame(written, b"whole")
    assert written.getvalue() == frame(b"whole")
    assert read_frame(io.BytesIO(written.getvalue())) == b"whole"
    for cut in (frame(b"whole")[:3], frame(b"whole")[:-1]):
        with pytest.raises(EOFError):
            read_frame(io.BytesIO(cut))

    async def read(data: bytes, most: int) -> bytes:
        reader = asyncio.StreamReader()
        reader.feed_data(data)
        reader.feed_eof()
        return await read_frame_async(reader, most)

    assert asyncio.run(read(frame(b"12345"), 5)) == b"12345"
    with pytest.raises(FrameTooLong):
        asyncio.run(read(frame(b"123456"), 5))
    with pytest.raises(EOFError):
        asyncio.run(read(frame(b"12345")[:-2], 5))


def _echo(pool: StartedAhead):
    async def ask(proc, data: bytes) -> bytes:
        proc.stdin.write(frame(data))
        return await read_frame_async(proc.stdout, 1000)
    return ask


def test_a_pool_reuses_a_healthy_child_and_replaces_a_failed_one():
    async def scenario():
        pool = StartedAhead([sys.executable, "-c", ECHO], 1, 60, "an echo")
        pool.start()
        ask = _echo(pool)
        first = await pool.take()
        answer = await ask(first, b"abc")
        await pool.give_back(first, healthy=True)
        again = await pool.take()
        same = again is first and (await ask(again, b"xy")).startswith(b"yx ")
        await pool.give_back(again, healthy=False)  # ended, and another started
        fresh = await pool.take()
        other = fresh.pid != first.pid and first.returncode is not None
        await pool.give_back(fresh, healthy=True)
        await pool.close()
        return answer, same, other, fresh.returncode

    answer, same, other, code = asyncio.run(scenario())
    assert answer.startswith(b"cba ") and same and other
    assert code is not None  # closing the pool ends the children it keeps


def test_a_job_that_leaves_while_its_child_starts_leaves_the_child_to_the_next():
    async def scenario():
        pool = StartedAhead([sys.executable, "-c", ECHO], 1, 60, "an echo")
        pool.start()
        starting = pool.idle[0]
        job = asyncio.ensure_future(pool.take())
        await asyncio.sleep(0)
        job.cancel()  # the visitor left before the child said it was ready
        await asyncio.gather(job, return_exceptions=True)
        child = await pool.take()
        kept = (await starting) is child and child.returncode is None
        await pool.give_back(child, healthy=True)
        await pool.close()
        return kept, len(pool.idle)

    assert asyncio.run(scenario()) == (True, 0)


def test_a_single_use_pool_starts_the_next_child_as_one_is_taken():
    async def scenario():
        pool = StartedAhead([sys.executable, "-c", ECHO], 1, 60, "an echo", single_use=True)
        pool.start()
        first = await pool.take()
        spare = len(pool.idle)
        await pool.give_back(first, healthy=True)  # used once: ended, never taken again
        second = await pool.take()
        ended = first.returncode is not None and second.pid != first.pid
        await pool.give_back(second, healthy=True)
        await pool.close()
        return spare, ended

    assert asyncio.run(scenario()) == (1, True)


def test_a_child_that_does_not_say_it_is_ready_in_time_is_ended_in_one_line():
    async def scenario():
        pool = StartedAhead([sys.executable, "-c", "import time; time.sleep(60)"], 1, 0.5,
                            "the slow child")
        pool.start()
        proc_count = len(pool.idle)
        with pytest.raises(NotReady) as refused:
            await pool.take()
        await pool.close()
        return proc_count, str(refused.value)

    count, said = asyncio.run(scenario())
    assert count == 1 and said == "the slow child could not start; try again later"


def test_a_confined_child_meets_memory_error_past_its_cap():
    code = ("from spacewar_ai.util.processes import confine\n"
            "confine(memory_mb=600)\n"
            "try:\n    bytearray(800 * 2**20)\nexcept MemoryError:\n    print('refused')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.strip() == "refused", out.stderr[-500:]
