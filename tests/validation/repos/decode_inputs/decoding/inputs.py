"""Persistent input buffers for a decode step, allocated once and reused every step."""

import torch


class DecodeInputs:
    def __init__(self, max_num_seqs: int, hidden_size: int, device: str = "cpu"):
        self.max_num_seqs = max_num_seqs
        self.hidden = torch.zeros(max_num_seqs, hidden_size, device=device)
        self.seq_lens = torch.zeros(max_num_seqs, dtype=torch.float32, device=device)

    def prepare(self, hidden: torch.Tensor, seq_lens: torch.Tensor) -> None:
        """Stage one step: `hidden` is padded to the full batch, `seq_lens` covers the live sequences only."""
        self.hidden.copy_(hidden)
        self.seq_lens[: seq_lens.shape[0]].copy_(seq_lens)

    def pooled(self) -> torch.Tensor:
        return self.hidden.mean(dim=0)

    def mean_seq_len(self) -> torch.Tensor:
        # Free slots count as sequences of length zero.
        return self.seq_lens.sum() / self.max_num_seqs
