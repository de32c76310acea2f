"""Workers for test_processes: like the package's own workers they import torch before any of
their code runs, and their code leaves a mark."""

import time

import torch  # noqa: F401

from spacewar_ai.util.processes import die_with_parent


def run(marker: str) -> None:
    with open(marker, "w") as f:
        f.write("ran")


def wait(marker: str) -> None:
    """A multiprocessing worker's start, as the package's workers do it, then a long wait."""
    die_with_parent()
    run(marker)
    time.sleep(600)
