"""How many threads torch uses in each process that does torch work.

The networks are small, so extra threads buy little on an idle machine, and beside any other
work torch's threads spin-wait for each other and every call slows down
(`spacewar-ai --benchmark-threads` measures it). So every process that does torch work runs on
`DEFAULT_THREADS` unless told otherwise, in this order: `--torch-threads N` or `[train]
torch_threads` (0 means not set), then `SPACEWAR_TORCH_THREADS` or `OMP_NUM_THREADS`, then
`DEFAULT_THREADS`."""

from __future__ import annotations

import os
import sys

from .errors import UserError

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
            raise UserError(f"{name}={value!r}: torch threads must be a whole number >= 1 "
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
