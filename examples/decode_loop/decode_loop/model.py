"""A small decoder: an embedding, a stack of MLP blocks, and the LM head (no attention: the step's shape is what matters)."""

import torch


class TinyDecoder(torch.nn.Module):
    def __init__(self, vocab: int, hidden: int, layers: int, device: torch.device, dtype: torch.dtype):
        super().__init__()
        generator = torch.Generator(device=device).manual_seed(0)  # made where it is used: a GPU run starts in a second

        def weight(*shape: int) -> torch.Tensor:
            return torch.randn(*shape, generator=generator, device=device, dtype=dtype) / shape[-1] ** 0.5

        self.embedding = weight(vocab, hidden)
        self.blocks = [weight(hidden, hidden) for _ in range(layers)]
        self.position_scale = weight(1, hidden)
        self.lm_head = weight(hidden, vocab)

    def hidden_states(self, input_ids: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        hidden = self.embedding.index_select(0, input_ids)
        hidden = hidden + positions.unsqueeze(1).to(hidden.dtype) * self.position_scale
        for block in self.blocks:
            hidden = hidden + torch.nn.functional.gelu(hidden @ block)
        return hidden
