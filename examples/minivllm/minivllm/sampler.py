"""Samples the next token per request, staging results through pinned host memory."""

import torch
from torch import zeros


class Sampler:
    def __init__(self, max_num_reqs: int, vocab_size: int):
        self.vocab_size = vocab_size
        # VALIDATE: pinned staging buffer, filled by a prefix copy_ in to_host.
        self.staging = torch.zeros(max_num_reqs, dtype=torch.float32, pin_memory=True)

    def to_host(self, probs: torch.Tensor) -> torch.Tensor:
        n = probs.shape[0]
        self.staging[:n].copy_(probs.max(dim=-1).values, non_blocking=True)
        return self.staging[:n]

    def apply_temperature(self, logits: torch.Tensor, temperature: torch.Tensor) -> torch.Tensor:
        # FIX: out= of torch.div writes the whole tensor.
        scaled = torch.zeros_like(logits)
        torch.div(logits, temperature.unsqueeze(1), out=scaled)
        return scaled

    def sample(self, probs: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        # FIX: exponential_ fills every element before anything reads it.
        noise = zeros(probs.shape, device=probs.device)
        noise.exponential_(generator=generator)
        return probs.div(noise).argmax(dim=-1)

    def penalties(self, logits: torch.Tensor, token_counts: torch.Tensor, penalty: float) -> torch.Tensor:
        # KEEP: accumulated into with +=, so the zeros are read.
        bias = torch.zeros_like(logits)
        bias += token_counts * penalty
        return logits - bias

    def top_k_mask(self, logits: torch.Tensor, k: int, keep_all: bool) -> torch.Tensor:
        # KEEP: written in one branch only; the other returns zeros.
        mask = torch.zeros_like(logits, dtype=torch.bool)
        if keep_all:
            mask.fill_(True)
        return mask

    def uniform_noise(self, num_reqs: int, device: torch.device) -> torch.Tensor:
        # UNSAFE (OPT102): drawn on the device, the random numbers differ: only with --unsafe-fixes.
        return torch.rand(num_reqs, self.vocab_size).to(device)
