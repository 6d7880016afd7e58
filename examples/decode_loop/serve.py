"""Run the decode loop and print its speed: `python serve.py [--steps N]` (CUDA when available, else a small CPU run).

Prints `decode: <tokens/s> tokens/s, <ms> ms/step` once, after every step has finished on the device.
"""

import argparse
import time

import torch

from decode_loop.engine import DecodeEngine
from decode_loop.model import TinyDecoder

# (batch, hidden, layers, vocab, dtype): a serving-sized step on a GPU (2.5 GB of weights read a step:
# bound by memory, as decode is, not by Python's launches), a small one on a CPU.
SIZES = {"cuda": (64, 8192, 16, 32000, torch.float16), "cpu": (8, 256, 2, 4096, torch.float32)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=None, help="decode steps timed (default: 300 on CUDA, 100 on CPU)")
    parser.add_argument("--warmup", type=int, default=10, help="steps run first, untimed")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    args = parser.parse_args()
    device = torch.device(args.device)
    batch, hidden, layers, vocab, dtype = SIZES[device.type]
    steps = args.steps or (300 if device.type == "cuda" else 100)
    if device.type == "cpu":
        torch.set_num_threads(1)  # one core's speed, steady whatever else the machine runs
    engine = DecodeEngine(TinyDecoder(vocab, hidden, layers, device, dtype), batch, vocab, device)
    lens = [100 + request for request in range(batch)]

    def run(count: int, first: int) -> None:
        for step in range(first, first + count):
            engine.step(step, [length + step for length in lens])

    run(args.warmup, 0)
    synchronize(device)
    started = time.perf_counter()
    run(steps, args.warmup)
    synchronize(device)
    seconds = time.perf_counter() - started
    print(f"decode: {batch * steps / seconds:,.1f} tokens/s, {seconds / steps * 1e3:.3f} ms/step "
          f"({steps} steps, batch {batch}, {device.type})")


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


if __name__ == "__main__":
    main()
