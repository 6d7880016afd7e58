"""A function's source from its name: one pattern of named alternatives (`_NAMED`) answers as the patterns one by
one, in order, did."""

from __future__ import annotations

import re

import pytest

from optpatch.call_graph import Definition
from optpatch.frequency import _ONE_TIME_NAMES, _STEP, FrequencySource, source_of


def _one_by_one(name: str) -> FrequencySource | None:
    if _STEP.match(name):
        return FrequencySource.STEP_METHOD
    for source, pattern in _ONE_TIME_NAMES:
        if pattern.match(name):
            return source
    return None


NAMES = [
    "step", "train_step", "_step", "decode", "_decode_tokens", "prefill_chunk", "generate", "_generate", "sample",
    "forward_impl", "_forward", "attn_forward", "schedule", "prepare_model_inputs", "_prepare_input",
    "test_it", "setUp", "tearDownClass", "__init__", "__post_init__", "__set_name__", "from_pretrained", "from_hf_hub",
    "load", "_load", "load_state_dict", "_load_checkpoint_shard", "load_weights", "_load_from_state_dict",
    "warmup", "WarmUp", "_WARM_UP_kernels", "do_warm_up", "capture_graph", "cuda_graph_capture", "main", "_main",
    "cli", "parse_args", "save_checkpoint", "_save_model_weights", "setup", "_setup_optimizer", "set_up", "build",
    "_build", "build_", "build_model", "_init_weights", "init_", "_init_cache", "initialize", "initialise_state",
    "reset_parameters", "register_buffer_x", "register_forward_hook", "_register_hooks_later", "configure_optimizers",
    "forward", "backward", "__call__", "compute", "", "x", "loader", "steps", "step_", "Step", "decoder",
    "prepare_inputs_for_generation", "_reorder_cache", "prepare_inputs_for_generation_x",
]


@pytest.mark.parametrize("name", NAMES)
def test_one_pattern_answers_as_the_patterns_in_turn(name):
    assert source_of(Definition(name, 1, 2)) is _one_by_one(name)


def test_only_the_warm_up_pattern_ignores_case():
    # The merged pattern scopes each pattern's flags to its own alternative: `Step` is no step, `WarmUp` a warm-up.
    assert source_of(Definition("Step", 1, 2)) is None
    assert source_of(Definition("WarmUp", 1, 2)) is FrequencySource.WARMUP
    assert any(pattern.flags & re.IGNORECASE for _, pattern in _ONE_TIME_NAMES)


@pytest.mark.parametrize("name", ["prepare_inputs_for_generation", "_update_model_kwargs_for_generation", "_reorder_cache"])
def test_the_hooks_generation_calls_every_token_are_step_methods(name):
    """transformers' `generate` calls these once a token: a model's, or one a PEFT wrapper installs on it."""
    assert source_of(Definition(name, 1, 2)) is FrequencySource.STEP_METHOD
