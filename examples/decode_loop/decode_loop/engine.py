"""One decode step of a serving engine: stage the scheduler's metadata, run the model, sample on the device.

The per-step path holds the sites optpatch fixes by default, each marked:
OPT101 (a buffer zeroed and then written in full), OPT102 (positions made
on the CPU and moved), OPT103 (the scheduler's lists copied from pageable
memory, which waits for the step still queued on the GPU).
"""

import torch

from decode_loop.model import TinyDecoder


class DecodeEngine:
    def __init__(self, model: TinyDecoder, batch: int, vocab: int, device: torch.device):
        self.model = model
        self.batch = batch
        self.vocab = vocab
        self.device = device
        # The next tokens live on the device: the host never waits for a sampled token.
        self.input_ids = torch.randint(0, vocab, (batch,), generator=torch.Generator().manual_seed(1)).to(device)
        self.context_lens = torch.empty(batch, dtype=torch.int64, device=device)

    def stage_context_lens(self, context_lens: list[int]) -> None:
        """The scheduler's per-request lengths, into the engine's device buffer."""
        if self.device.type == "cuda":
            # OPT103: a pageable copy waits for the queued step; pinned and non_blocking it does not, and the
            # only reader is the copy_ below, on the same stream.
            lens = torch.tensor(context_lens, dtype=torch.int64).cuda()
            self.context_lens.copy_(lens)
        else:
            self.context_lens.copy_(torch.tensor(context_lens, dtype=torch.int64))

    def step(self, step: int, context_lens: list[int]) -> None:
        self.stage_context_lens(context_lens)
        # OPT102: made on the CPU and copied (waiting for the queue); made on the device instead.
        positions = torch.arange(self.batch).to(self.device)
        positions = positions + step
        hidden = self.model.hidden_states(self.input_ids, positions)
        # OPT101: matmul writes every element of `logits`; zeroing it first is a wasted pass over memory.
        logits = torch.zeros(self.batch, self.vocab, device=self.device, dtype=hidden.dtype)
        torch.matmul(hidden, self.model.lm_head, out=logits)
        next_ids = logits.argmax(dim=-1)
        self.input_ids.copy_(torch.remainder(next_ids + self.context_lens, self.vocab))
