"""The command line: flags in, one mode, one call into the package. No game or learning logic.

Reached as `spacewar-ai`, `python -m spacewar_ai` or `python spacewar_ai/main.py`, with the same
flags; without a mode flag it trains. A flag the mode does not read is refused, and every bad
value is one line on stderr naming it and the fix, exit code 2. parser.py holds the machinery
(flags declared once, modes listing what they read), common.py the flags several modes share;
train.py, play.py, rate.py, data.py, llm.py, serve.py and bench.py the modes."""

from __future__ import annotations

import os
import sys

from ..util.errors import UserError
from ..util.progress import Interrupted
from .common import check_outputs
from .parser import MODES, PROG, build_parser, choose_mode

# Each module declares its modes and flags when imported; --help lists them in this order.
# isort: off
from . import train, play, rate, data, llm, serve, bench  # noqa: E402,F401
# isort: on

__all__ = ["MODES", "build_parser", "main"]


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    chosen = choose_mode(parser, args)
    try:
        from ..util.threads import configure_process

        configure_process(args.torch_threads or 0)
        check_outputs(args)
        return chosen.run(parser, args)
    except KeyboardInterrupt as exc:
        if not isinstance(exc, Interrupted):
            print("\ninterrupted: every file written so far is intact", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Output piped into `head` or similar: stop quietly, like other command-line tools.
        sys.stdout = open(os.devnull, "w")
        return 0
    except UserError as exc:  # every input problem (bad specs, files, configs); any other
        # exception is a bug, and goes on to be printed with its trace
        if os.environ.get("SPACEWAR_AI_TRACEBACK"):
            raise
        parser.error(str(exc))
    except RuntimeError as exc:
        from ..llm.clients import LLMError
        from ..training.online.rollouts import WorkersLost

        if not isinstance(exc, (LLMError, WorkersLost)):
            raise
        parser.exit(1, f"{PROG}: error: {exc}\n")
