"""A vocoder built alone (a worker's): token2wav's weights and the voices without the rest of the checkpoint,
the same tensors and so the same samples as the vocoder of a whole load."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from omni_cli.api import load  # noqa: E402
from omni_cli.backends.base import AUDIO_CHUNK, VocoderChunkInput  # noqa: E402
from omni_cli.backends.hf import build  # noqa: E402
from omni_cli.program.checks import component_params  # noqa: E402
from omni_cli.program.compiler import build_components  # noqa: E402


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_a_vocoder_built_alone_has_the_whole_loads_weights_voices_and_samples(tiny_checkpoint, dtype):
    settings = {"model_path": str(tiny_checkpoint), "dtype": dtype}
    steps = []
    alone = build(None, {}, settings, on_load=steps.append, only="vocoder")
    whole = build(None, {}, settings)
    assert list(alone) == ["vocoder"]
    mine, theirs = alone["vocoder"], whole["vocoder"]
    assert mine.module is not theirs.module and not hasattr(mine.module, "thinker")
    ours, reference = mine.module.state_dict(), theirs.module.state_dict()
    assert ours.keys() == reference.keys()
    assert all(torch.equal(ours[k], reference[k]) and ours[k].dtype == torch.float32 for k in ours)
    assert mine._voices.names() == theirs._voices.names()
    for name in mine._voices.names():
        a, b = mine._voices.get(name), theirs._voices.get(name)
        assert torch.equal(a.cond, b.cond) and torch.equal(a.ref_mel, b.ref_mel)
    # it read token2wav's tensors alone, and said so as it went
    weights = [s for s in steps if s.phase == "loading weights"]
    assert weights[-1].done == weights[-1].total == len(ours)
    assert whole["thinker"].model.num_parameters() > 0  # the whole load has what the alone one skipped
    codes = [int(c) for c in np.random.default_rng(3).integers(0, 120, 40)]

    def samples(vocoder):
        state = vocoder.new_state("Chelsie", seed=5)
        return vocoder.run(AUDIO_CHUNK, [VocoderChunkInput(state, codes, 0, len(codes), True)])[0].samples

    # The whole load's weights are views into the checkpoint's file, at offsets that are not 64-byte aligned;
    # the alone load copies each tensor. On a CPU whose convolution kernels take another path for unaligned
    # weights (seen on an AMD EPYC with AVX-512), the speaker encoder rounds differently in the last bit: so
    # the samples agree within the card's sample_tolerance as loaded, and bit for bit once the whole load's
    # weights are copied too (the same values, and then the same kernels)
    assert float(np.max(np.abs(samples(mine) - samples(theirs)))) <= 1e-5
    with torch.no_grad():
        for parameter in theirs.module.parameters():
            parameter.data = parameter.data.clone()
    theirs._features.clear()  # each voice's speaker-encoder output, made on first use: made again
    assert np.array_equal(samples(mine), samples(theirs))


def test_a_worker_builds_its_vocoder_alone_and_a_thinker_or_talker_with_the_whole_checkpoint(tiny_checkpoint):
    program = load("qwen2_5_omni", settings={"model_path": str(tiny_checkpoint)})
    card, params = program.card, component_params(program.card)
    settings = {"model_path": str(tiny_checkpoint)}
    names = {spec.role: name for name, spec in card.components.items()}
    assert list(build_components(card, params, settings, only=names["vocoder"])) == [names["vocoder"]]
    # the talker's hand-off reads the thinker's weights: a talker's worker builds every component
    assert set(build_components(card, params, settings, only=names["talker"])) == set(names.values())
