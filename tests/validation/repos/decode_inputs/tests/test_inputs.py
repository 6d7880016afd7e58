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
