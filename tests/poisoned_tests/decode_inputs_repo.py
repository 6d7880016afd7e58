"""A small repository for `optpatch apply --validate`, written out by the tests.

Persistent decode-step input buffers, allocated once and refilled every step.
`hidden` is refilled in full before it is read; only a prefix of `seq_lens`
is refilled, but `mean_seq_len` reads all of it, so turning its `zeros` into
`empty` is wrong, and its test fails under poisoned memory. OPT101 proposes
both as `validate` tier (attribute buffers with a full or prefix `copy_`).

It is kept as text rather than as files under tests/ so that this suite does
not collect its tests.
"""

from pathlib import Path

FILES = {
    "decoding/__init__.py": "",
    "decoding/inputs.py": '''\
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
''',
    "tests/test_inputs.py": '''\
import torch

from decoding.inputs import DecodeInputs


def test_pooled_hidden_state():
    inputs = DecodeInputs(max_num_seqs=4, hidden_size=3)
    inputs.prepare(torch.arange(12, dtype=torch.float32).reshape(4, 3), torch.tensor([5.0, 7.0, 1.0, 3.0]))
    torch.testing.assert_close(inputs.pooled(), torch.tensor([4.5, 5.5, 6.5]))


def test_mean_seq_len_with_free_slots():
    inputs = DecodeInputs(max_num_seqs=4, hidden_size=3)
    inputs.prepare(torch.zeros(4, 3), torch.tensor([6.0, 2.0]))
    torch.testing.assert_close(inputs.mean_seq_len(), torch.tensor(2.0))
''',
}


def write_decode_inputs(root: Path) -> Path:
    for name, text in FILES.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root
