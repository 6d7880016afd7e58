import torch

from minivllm.kv_cache import KVCacheManager


def test_swap_in_round_trips():
    manager = KVCacheManager(1, 4, 2, 1, 8, torch.float32, torch.device("cpu"))
    blocks = torch.randn(3, 2, 8)
    assert torch.equal(manager.swap_in(blocks, torch.device("cpu")), blocks)


def test_scattered_writes_leave_the_rest_zero():
    # KEEP: compared in full against a zero reference after scattered writes.
    cache = torch.zeros(16)
    cache[torch.tensor([1, 5, 9])] = 1.0
    expected = torch.zeros(16)
    expected[[1, 5, 9]] = 1.0
    assert torch.equal(cache, expected)
