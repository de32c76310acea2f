"""A worker for test_processes: like the package's own workers it imports torch before any of
its code runs, and its code leaves a mark."""

import torch  # noqa: F401


def run(marker: str) -> None:
    with open(marker, "w") as f:
        f.write("ran")
