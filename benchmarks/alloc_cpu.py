"""CPU cost of torch.zeros versus torch.empty: the basis of OPT101's CPU impact class.

Usage: python benchmarks/alloc_cpu.py   (prints a table; one thread, best of 5)
"""

import timeit

import torch

SIZES_BYTES = (1024, 64 * 1024, 1024 * 1024, 64 * 1024 * 1024)


def best_of(function, number: int) -> float:
    return min(timeit.repeat(function, number=number, repeat=5)) / number


def main() -> None:
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, 1 thread")
    print(f"{'size':>10}  {'zeros (us)':>12}  {'empty (us)':>12}  {'saved (us)':>12}")
    for size in SIZES_BYTES:
        n = size // 4
        number = 20 if size >= 2**26 else 200
        zeros = best_of(lambda: torch.zeros(n), number) * 1e6
        empty = best_of(lambda: torch.empty(n), number) * 1e6
        print(f"{size // 1024:>8} KiB  {zeros:>12.2f}  {empty:>12.2f}  {zeros - empty:>12.2f}")


if __name__ == "__main__":
    main()
