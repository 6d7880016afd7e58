"""optpatch: rewrites PyTorch/CUDA code for performance, and proves every rewrite first."""

__version__ = "0.1.0"
