"""kernels.reference, the oracle of the CUDA kernels, checked on the CPU
against the plain loops of kernels.loops and against hand-computed
placements, for fp16, bf16 and fp32, with poisoned outputs."""

import math

import pytest
import torch

from kernels import cases, harness, loops, reference

WORKLOADS = cases.cpu_reference_sweep()


@pytest.mark.parametrize("dtype", cases.DTYPES, ids=lambda d: str(d).removeprefix("torch."))
@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda w: f"{w.kernel}[{w.shape}]")
def test_reference_matches_loops(workload, dtype):
    check = harness.check_workload(
        getattr(reference, workload.kernel), getattr(loops, workload.kernel), workload, dtype, torch.device("cpu")
    )
    assert check.ok, check.detail


@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda w: f"{w.kernel}[{w.shape}]")
def test_inputs_are_random_and_outputs_poisoned(workload):
    args = workload.make_args(torch.float32, torch.device("cpu"), cases.RandomSource(1))
    tensors = [t for t in torch.utils._pytree.tree_leaves(args) if t.is_floating_point()]
    finite = torch.cat([t[~t.isnan()].flatten() for t in tensors])
    assert finite.numel() > 0 and (finite != 0).float().mean() > 0.99
    for written in workload.written(args):
        assert written.isnan().any(), "the kernel's destination should start poisoned"


def test_poisoned_allocations_fill_empty_with_nan():
    with harness.poisoned_allocations():
        assert torch.empty(8).isnan().all()
        assert (torch.empty(4, dtype=torch.int64) == torch.iinfo(torch.int64).max).all()


def test_bitwise_equal_compares_bits():
    assert harness.bitwise_equal(torch.tensor([math.nan, 1.0]), torch.tensor([math.nan, 1.0]))
    assert not harness.bitwise_equal(torch.tensor([0.0]), torch.tensor([-0.0]))
    assert not harness.bitwise_equal(torch.tensor([1.0]), torch.tensor([1.0, 1.0]))
    assert not harness.bitwise_equal(torch.tensor([1.0], dtype=torch.float16), torch.tensor([1.0]))


def _one_token(dtype, slot):
    geometry = cases.TINY_GEOMETRY  # 2 heads of 16, blocks of 4 tokens
    key = torch.arange(1, 33, dtype=dtype).reshape(1, 2, 16)
    value = -key
    return geometry, key, value, torch.tensor([slot])


@pytest.mark.parametrize("dtype,x", [(torch.float32, 4), (torch.float16, 8), (torch.bfloat16, 8)])
def test_reshape_and_cache_places_elements_in_the_paged_layout(dtype, x):
    geometry, key, value, slots = _one_token(dtype, slot=6)  # block 1, offset 2
    key_cache = torch.full(geometry.paged_key_shape(3, dtype), math.nan, dtype=dtype)
    value_cache = torch.full(geometry.paged_value_shape(3), math.nan, dtype=dtype)
    reference.reshape_and_cache(key, value, key_cache, value_cache, slots)
    # head 1, dim 9 holds 1 + 16 + 9 = 26
    assert key_cache[1, 1, 9 // x, 2, 9 % x] == 26
    assert value_cache[1, 1, 9, 2] == -26
    assert key_cache.isnan().sum() == key_cache.numel() - 32
    assert value_cache.isnan().sum() == value_cache.numel() - 32


def test_reshape_and_cache_flash_places_elements_in_the_flash_layout():
    geometry, key, value, slots = _one_token(torch.bfloat16, slot=6)
    key_cache = torch.full(geometry.flash_shape(3), math.nan, dtype=torch.bfloat16)
    value_cache = key_cache.clone()
    reference.reshape_and_cache_flash(key, value, key_cache, value_cache, slots)
    assert key_cache[1, 2, 1, 9] == 26 and value_cache[1, 2, 1, 9] == -26
    assert key_cache.isnan().sum() == key_cache.numel() - 32


@pytest.mark.parametrize("op", [reference.reshape_and_cache, loops.reshape_and_cache])
def test_negative_slots_leave_the_cache_untouched(op):
    geometry, key, value, _ = _one_token(torch.float32, slot=0)
    key_cache = torch.rand(geometry.paged_key_shape(2, torch.float32))
    value_cache = torch.rand(geometry.paged_value_shape(2))
    before = key_cache.clone(), value_cache.clone()
    op(key, value, key_cache, value_cache, torch.tensor([-1]))
    assert torch.equal(key_cache, before[0]) and torch.equal(value_cache, before[1])


def test_copy_blocks_copies_every_layer_and_only_the_destinations():
    key_caches = [torch.rand(4, 2, 3) for _ in range(2)]
    value_caches = [torch.rand(4, 6) for _ in range(2)]
    before = [cache.clone() for cache in (*key_caches, *value_caches)]
    reference.copy_blocks(key_caches, value_caches, torch.tensor([[0, 3], [2, 1]]))
    for cache, original in zip((*key_caches, *value_caches), before):
        assert torch.equal(cache[3], original[0]) and torch.equal(cache[1], original[2])
        assert torch.equal(cache[0], original[0]) and torch.equal(cache[2], original[2])


def _reshape_and_cache_ignoring_x(key, value, key_cache, value_cache, slot_mapping):
    """A plausible bug: writing the key as if the cache were [.., x, block]."""
    tokens, blocks, offsets = reference._valid_slots(slot_mapping, key_cache.shape[3])
    flat = key[tokens].reshape(len(tokens), key.shape[1], -1, key_cache.shape[4])
    key_cache[blocks, :, :, offsets, :] = flat.flip(-1)
    value_cache[blocks, :, :, offsets] = value[tokens]


def test_the_check_catches_a_wrong_layout():
    workload = cases.reshape_and_cache_workload(cases.TINY_GEOMETRY, num_tokens=9)
    check = harness.check_workload(
        _reshape_and_cache_ignoring_x, loops.reshape_and_cache, workload, torch.float16, torch.device("cpu")
    )
    assert not check.ok and "differ" in check.detail


def test_the_check_catches_an_unwritten_destination():
    workload = cases.copy_blocks_workload(cases.TINY_GEOMETRY, num_layers=2, num_pairs=2)

    def copies_keys_only(key_caches, value_caches, block_mapping):
        reference.copy_blocks(key_caches, [], block_mapping)

    check = harness.check_workload(copies_keys_only, loops.copy_blocks, workload, torch.float32, torch.device("cpu"))
    assert not check.ok


def test_the_check_catches_a_returned_output_left_partly_unwritten():
    # What a zeros -> empty rewrite of gather_cache_flash would give if its kernel skipped padding tokens.
    workload = cases.gather_cache_flash_workload(cases.TINY_GEOMETRY, num_tokens=9)

    def skips_padding(key_cache, slot_mapping):
        _, block_size, num_heads, head_size = key_cache.shape
        out = torch.empty((slot_mapping.shape[0], num_heads, head_size), dtype=key_cache.dtype)
        tokens = torch.nonzero(slot_mapping >= 0).flatten()
        out[tokens] = reference.gather_cache_flash(key_cache, slot_mapping)[tokens]
        return out

    check = harness.check_workload(skips_padding, loops.gather_cache_flash, workload, torch.float32, torch.device("cpu"))
    assert not check.ok and "differ" in check.detail


def test_the_check_reports_a_crash():
    workload = cases.swap_blocks_workload(cases.TINY_GEOMETRY, "cpu->cpu", num_pairs=1)

    def raises(*_):
        raise RuntimeError("boom")

    check = harness.check_workload(raises, loops.swap_blocks, workload, torch.float32, torch.device("cpu"))
    assert not check.ok and "boom" in check.detail


def test_the_check_catches_inputs_read_before_written(monkeypatch):
    # What a wrong zeros -> empty rewrite of the input builder would cause.
    def half_filled(shape, dtype, device, rng, pin_memory=False):
        tensor = torch.empty(shape, dtype=dtype, device=device)
        tensor[: shape[0] // 2].uniform_(-1.0, 1.0, generator=rng.on(device))
        return tensor

    monkeypatch.setattr(cases, "random_tensor", half_filled)
    workload = cases.reshape_and_cache_flash_workload(cases.TINY_GEOMETRY, num_tokens=9)
    check = harness.check_workload(
        reference.reshape_and_cache_flash, loops.reshape_and_cache_flash, workload, torch.float32, torch.device("cpu")
    )
    assert not check.ok and "NaN" in check.detail
