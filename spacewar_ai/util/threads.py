"""How many threads torch uses in each process that does torch work.

The networks here are small (two layers of 256 units, batches of at most a few thousand rows):
one matrix product takes a fraction of a millisecond, so extra threads buy little even on an
idle machine, and as soon as anything else runs (a second run, a test suite, a browser) torch's
threads spin-wait for each other and every torch call slows down several times.
`spacewar-ai --benchmark-threads` measures each torch path both ways, idle and beside a CPU hog
on every core; docs/performance.md has its table.

So every process that does torch work (training of every algorithm, evaluation, tournaments and
their workers, Ray tasks, PBT members, search at play time, the browser app) runs torch on
`DEFAULT_THREADS` unless told otherwise, in this order:

1. `--torch-threads N` or `[train] torch_threads = N` (0, the default, means "not set here");
2. the environment: `SPACEWAR_TORCH_THREADS=N`, else OpenMP's own `OMP_NUM_THREADS=N`;
3. `DEFAULT_THREADS`.
"""

from __future__ import annotations

import os
import sys

DEFAULT_THREADS = 1
ENV_VAR = "SPACEWAR_TORCH_THREADS"
_ENV_VARS = (ENV_VAR, "OMP_NUM_THREADS")


def torch_threads(requested: int = 0) -> int:
    """The number of threads torch should use: `requested` if > 0, else the environment's
    setting, else DEFAULT_THREADS. A malformed environment value is refused with the name of
    the variable and the fix (ValueError)."""
    if requested and requested > 0:
        return int(requested)
    for name in _ENV_VARS:
        value = os.environ.get(name, "").strip()
        if not value:
            continue
        if not value.isdigit() or int(value) < 1:
            raise ValueError(f"{name}={value!r}: torch threads must be a whole number >= 1 "
                             f"(unset it for the default, {DEFAULT_THREADS})")
        return int(value)
    return DEFAULT_THREADS


def configure_process(requested: int = 0) -> int:
    """For a command's process, before torch is imported: resolve the thread count (see
    torch_threads) and put it in the environment, where torch reads it at import and every
    process this one starts (Ray workers, PBT members) inherits it."""
    n = torch_threads(requested)
    for name in _ENV_VARS:
        os.environ[name] = str(n)
    if "torch" in sys.modules:
        use_torch_threads(n)
    return n


def use_torch_threads(requested: int = 0) -> int:
    """Set torch's intra-op threads for this process (see torch_threads) and return the
    number. Cheap, and safe to call again: each process that does torch work calls it once
    before its first torch call."""
    import torch

    n = torch_threads(requested)
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return n


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, which a container or `taskset`
    narrows), not the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1
