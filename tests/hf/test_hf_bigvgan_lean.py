"""BigVGAN with its activations' constants made once (issue 19, no work done twice): bit-equal samples to
transformers' forward, at any batch and length and in bf16, with about half the tensor ops per call."""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from omni_cli.backends.hf.bigvgan import LeanBigVGAN  # noqa: E402


class _CountOps(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += 1
        return func(*args, **(kwargs or {}))


@pytest.fixture(scope="module")
def bigvgan(tiny_checkpoint):
    from transformers import Qwen2_5OmniForConditionalGeneration

    model = Qwen2_5OmniForConditionalGeneration.from_pretrained(tiny_checkpoint).eval()
    return model.token2wav.code2wav_bigvgan_model


@pytest.mark.parametrize("batch,frames", [(1, 5), (1, 48), (3, 37)])
def test_lean_bigvgan_gives_transformers_samples_bit_for_bit(bigvgan, batch, frames):
    before = {k: v.clone() for k, v in bigvgan.state_dict().items()}
    lean = LeanBigVGAN(bigvgan)
    mel = torch.randn(batch, bigvgan.config.mel_dim, frames, generator=torch.Generator().manual_seed(frames)) * 3 - 4
    with torch.no_grad():
        ours, theirs = lean(mel), bigvgan(mel)
    assert ours.shape == theirs.shape == ((frames * 240,) if batch == 1 else (batch, frames * 240))
    assert torch.equal(ours, theirs)
    assert float(theirs.abs().max()) > 1e-3  # a signal, not zeros on both sides
    after = bigvgan.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)  # the module is left as it was


def test_lean_bigvgan_is_bit_equal_in_bf16_too(bigvgan):
    # (transformers and we run token2wav in float32 whatever the checkpoint's dtype; the constants follow
    # the module's dtype all the same)
    module = copy.deepcopy(bigvgan).to(torch.bfloat16)
    mel = (torch.randn(1, module.config.mel_dim, 20, generator=torch.Generator().manual_seed(2)) - 3).bfloat16()
    with torch.no_grad():
        assert torch.equal(LeanBigVGAN(module)(mel), module(mel))


def test_lean_bigvgan_runs_far_fewer_ops_per_call(bigvgan):
    lean, mel = LeanBigVGAN(bigvgan), torch.zeros(1, bigvgan.config.mel_dim, 8)
    counts = []
    for forward in (bigvgan, lean):
        with torch.no_grad(), _CountOps() as ops:
            forward(mel)
        counts.append(ops.count)
    theirs, ours = counts
    assert ours < 0.7 * theirs, (ours, theirs)  # measured: about half
