"""The design's entry point: `python spacewar_ai/main.py`, the same CLI as `spacewar-ai` and
`python -m spacewar_ai`. The flags and the modes live in spacewar_ai/cli/."""

import os
import sys

if __package__ in (None, ""):
    # Run as a file (python spacewar_ai/main.py): make the package importable.
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from spacewar_ai.cli import build_parser, main  # noqa: E402

__all__ = ["build_parser", "main"]

if __name__ == "__main__":
    raise SystemExit(main())
