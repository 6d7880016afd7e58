"""optpatch's bundled paged KV-cache kernels (CUDA), their pure-PyTorch
reference, and the harness that builds, checks and times them."""
