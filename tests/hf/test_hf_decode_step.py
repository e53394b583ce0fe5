"""`TalkerStep` (decode.py, issue 19): one request's talker decode step without transformers' per-call wrapping
gives the module's logits and cache, tensor for tensor."""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from omni_cli.api import load  # noqa: E402
from omni_cli.backends.hf.ar import decode_positions  # noqa: E402
from omni_cli.backends.hf.decode import TalkerStep  # noqa: E402


@pytest.fixture(scope="module")
def talker(tiny_checkpoint):
    return load("qwen2_5_omni", settings={"model_path": str(tiny_checkpoint)}).roles["talker"]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_a_step_equals_the_modules_step_for_step(talker, dtype):
    module = copy.deepcopy(talker.module).to(dtype)
    assert TalkerStep.applies(module)
    step = TalkerStep(module)
    width = module.thinker_to_talker_proj.in_features
    torch.manual_seed(0)
    ours, theirs = talker.new_cache(), talker.new_cache()
    prompt = torch.randn(1, 9, width, dtype=dtype)
    positions = torch.arange(9).view(1, 1, -1).expand(3, 1, -1)
    with torch.no_grad():
        for cache in (ours, theirs):
            module(inputs_embeds=prompt, position_ids=positions, cache=cache.kv, use_cache=True)
            cache.num_positions = 9
        for _ in range(12):
            embeds = torch.randn(1, 1, width, dtype=dtype)
            at = decode_positions(ours, 1, torch.device("cpu"))
            got = step(embeds, at, ours.kv)
            want = module(inputs_embeds=embeds, position_ids=at, cache=theirs.kv, use_cache=True).logits
            ours.num_positions += 1
            theirs.num_positions += 1
            assert got.dtype == want.dtype == torch.float32
            assert torch.equal(got, want)
    for layer in range(len(module.model.layers)):
        assert torch.equal(ours.kv.layers[layer].keys, theirs.kv.layers[layer].keys)
        assert torch.equal(ours.kv.layers[layer].values, theirs.kv.layers[layer].values)


def test_a_kernel_it_does_not_unwrap_keeps_the_module(talker):
    module = copy.deepcopy(talker.module)
    module.model.config._attn_implementation = "eager"
    assert not TalkerStep.applies(module)
