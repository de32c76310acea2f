import os

import pytest

# Real pygame surfaces without a display.
os.environ.setdefault("SDL_VIDEODRIVER", "dummy")
os.environ.setdefault("SDL_AUDIODRIVER", "dummy")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A tiny random-weight Llama model and tokenizer saved as a folder (tests/tiny_lm.py)."""
    from tests.tiny_lm import make_tiny_lm

    return make_tiny_lm(tmp_path_factory.mktemp("lm") / "tiny")
