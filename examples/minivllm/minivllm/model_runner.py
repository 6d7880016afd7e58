"""Runs the model for one decode step, with CUDA-graph capture for small batches."""

import torch


def round_up(x: int, multiple: int) -> int:
    return (x + multiple - 1) // multiple * multiple


class ModelRunner:
    def __init__(self, model, max_num_tokens: int, hidden_size: int, device: torch.device):
        self.model = model
        self.device = device
        self.hidden_size = hidden_size
        # KEEP: token ids are read by the embedding; garbage ids index out of bounds.
        self.input_ids = torch.zeros(max_num_tokens, dtype=torch.long, device=device)
        # KEEP: positions are an index tensor too.
        self.positions = torch.zeros(max_num_tokens, dtype=torch.int64, device=device)
        # VALIDATE: filled by a prefix copy_ in prepare_inputs; other methods may read the tail.
        self.seq_lens = torch.zeros(max_num_tokens, dtype=torch.float32, device=device)

    def prepare_inputs(self, token_ids: torch.Tensor, seq_lens: torch.Tensor) -> None:
        n = token_ids.numel()
        self.input_ids[:n].copy_(token_ids, non_blocking=True)
        self.seq_lens[:n].copy_(seq_lens, non_blocking=True)

    def capture_graph(self, batch_size: int) -> None:
        # KEEP: a dummy input run through the model for CUDA-graph capture.
        dummy_hidden = torch.zeros(batch_size, self.hidden_size, device=self.device)
        self.model(dummy_hidden)

    def forward(self, hidden: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        # FIX: torch.matmul writes every element of `out`.
        out = torch.zeros(hidden.shape[0], weight.shape[1], device=hidden.device, dtype=hidden.dtype)
        torch.matmul(hidden, weight, out=out)
        return out

    def gather_last_tokens(self, hidden: torch.Tensor, last_index: torch.Tensor) -> torch.Tensor:
        # FIX: every element is written by copy_ before anything reads it.
        last = torch.zeros_like(hidden[: last_index.numel()])
        last.copy_(hidden.index_select(0, last_index))
        return last

    def padded_logits(self, logits: torch.Tensor, num_reqs: int) -> torch.Tensor:
        # KEEP: padded rows beyond num_reqs are never written (cf. vLLM #37442).
        padded = torch.zeros(round_up(num_reqs, 8), logits.shape[1], device=logits.device)
        padded[:num_reqs] = logits[:num_reqs]
        return padded

    def decode_positions(self, num_tokens: int, device: torch.device) -> torch.Tensor:
        # FIX (OPT102): made on the CPU, then copied and synchronised; create it on the device.
        return torch.arange(num_tokens).to(device)

    def seq_lens_tensor(self, seq_lens: list[int]) -> torch.Tensor:
        # VALIDATE (OPT103): pinned and copied non_blocking, but the result is returned: the caller may read it
        # on another stream before the copy lands.
        return torch.tensor(seq_lens, dtype=torch.int32).cuda()

    def decode_inputs(self, token_ids: list[int]) -> None:
        # FIX (OPT103): a pageable copy waits for the queued decode step; pinned and non_blocking it does not,
        # and the only reader is the copy_ below, on the same stream.
        ids = torch.tensor(token_ids, dtype=torch.long).cuda()
        self.input_ids[: ids.numel()].copy_(ids)

    def decode_slot_offsets(self, num_blocks: int) -> torch.Tensor:
        # KEEP (OPT103): a list as long as a runtime size; converting it dominates, so pinning buys nothing.
        offsets = torch.tensor([block * 16 for block in range(num_blocks)]).cuda()
        return offsets.unsqueeze(0)

    def execute_model(self, kv_caches: list[torch.Tensor], block_mapping: torch.Tensor) -> None:
        # Copy-on-write of the cache blocks forked sequences share, before each step (csrc/cache_ops.cu).
        torch.ops.minivllm.copy_blocks([cache[0] for cache in kv_caches], [cache[1] for cache in kv_caches],
                                       block_mapping)
