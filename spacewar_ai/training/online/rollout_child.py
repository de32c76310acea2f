"""A rollout worker in a process of its own (`python -m
spacewar_ai.training.online.rollout_child PARENT_PID`), started by rollouts.ChildWorker for
`--rollout-workers N --backend local`.

It reads frames on stdin (rollouts.pickled: a pickle in util.processes' framing): first the
worker's arguments, then one `RolloutWorker.play` request per rollout; it answers each on stdout
with ("rollout", the rollout) or ("error", the exception's last line). It ends when stdin
closes, and dies with the learner (the parent-death signal). Anything else that prints (a
library's warning) goes to stderr: stdout carries the frames only. Ctrl-C is ignored here: the
learner stops at a safe point and closes its workers.
"""

from __future__ import annotations

import signal
import sys
import traceback


def _last_line() -> str:
    """The exception being handled, as its traceback's last line ("ValueError: ...")."""
    return traceback.format_exc().strip().splitlines()[-1]


def main(parent: int) -> None:
    from ...util.processes import die_with_parent, protocol_streams, write_frame
    from .rollouts import RolloutWorker, pickled, read_pickled

    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    requests, answers = protocol_streams()
    worker, failed = None, ""
    try:
        worker = RolloutWorker(*read_pickled(requests), own_process=True)
    except EOFError:
        return
    except Exception:  # noqa: BLE001 - each request is answered with it
        failed = _last_line()
    while True:
        try:
            request = read_pickled(requests)
        except EOFError:
            return
        try:
            answer = ("error", failed) if worker is None else ("rollout", worker.play(*request))
        except Exception:  # noqa: BLE001 - the learner raises it, in one line
            answer = ("error", _last_line())
        try:
            write_frame(answers, pickled(answer))
        except BrokenPipeError:
            return


if __name__ == "__main__":
    main(int(sys.argv[1]))
