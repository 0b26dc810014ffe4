"""Load a machine the way issue #20's load check asks: one core kept busy and memory held, until stopped.

    python scripts/busy_machine.py --gib 4 --seconds 7200 &   # then run `make test` beside it

The memory is written page by page so the kernel really backs it (an untouched allocation costs nothing).
It stops by itself after --seconds, or at SIGTERM/SIGINT. Standard library only, so it runs before any install.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time

PAGE = 4096


def hold_memory(gib: float) -> bytearray:
    """A buffer of `gib` GiB with every page written."""
    block = bytearray(int(gib * 2**30))
    for offset in range(0, len(block), PAGE):
        block[offset] = 1
    return block


def spin(until: float) -> int:
    """Busy arithmetic on this process's one thread until `until` (time.monotonic); returns the loop count."""
    count = 0
    while time.monotonic() < until:
        for _ in range(100_000):
            count += 1
    return count


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=4.0, help="memory to hold, in GiB (default 4)")
    parser.add_argument("--seconds", type=float, default=7200.0, help="stop after this long (default 2 h)")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    held = hold_memory(args.gib)
    print(f"busy_machine: holding {len(held) / 2**30:.1f} GiB and one busy core for {args.seconds:.0f} s", flush=True)
    try:
        spin(time.monotonic() + args.seconds)
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
