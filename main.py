"""The original design's door: `python main.py --algorithm ppo`, `python main.py --human-play
--difficulty hard`, `python main.py --tournament`, run from the repository's root as the design
writes them. The same CLI as `spacewar-ai`, `python -m spacewar_ai` and
`python spacewar_ai/main.py` (python puts this folder, and so the package, on the path)."""

from spacewar_ai.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
