"""BigVGAN with its activations' constants made once and, in float32 on a CPU, their filters as multiply-add
chains (issue 19): bit-equal samples to transformers' forward at any batch and length, at 1 and 2 threads
and in bf16 (where the convolutions stay), with no depthwise convolution left on the chains' path."""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from hf_cards import run_example  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from omni_cli.backends.hf.bigvgan import LeanBigVGAN, _FirActivation  # noqa: E402


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


@pytest.mark.parametrize("fir", [None, False], ids=["chains", "convolutions"])
@pytest.mark.parametrize("batch,frames,threads", [(1, 5, 1), (1, 48, 1), (3, 37, 1), (1, 224, 1), (2, 64, 2)])
def test_lean_bigvgan_gives_transformers_samples_bit_for_bit(bigvgan, batch, frames, threads, fir):
    before = {k: v.clone() for k, v in bigvgan.state_dict().items()}
    lean = LeanBigVGAN(bigvgan, fir=fir)
    mel = torch.randn(batch, bigvgan.config.mel_dim, frames, generator=torch.Generator().manual_seed(frames)) * 3 - 4
    was = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with torch.no_grad():
            ours, theirs = lean(mel), bigvgan(mel)
    finally:
        torch.set_num_threads(was)
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
    lean = LeanBigVGAN(module)
    assert not isinstance(lean.post, _FirActivation)  # bf16 keeps the convolutions
    with torch.no_grad():
        assert torch.equal(lean(mel), module(mel))


class _CountConvolutions(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.count += func is torch.ops.aten.convolution.default
        return func(*args, **(kwargs or {}))


def test_chains_leave_only_the_models_own_convolutions(bigvgan):
    # float32 on a CPU takes the chains: the convolutions left are conv_pre, the upsampling layers, the
    # residual blocks' and conv_post; the 2 x 109 depthwise filters are gone
    lean = LeanBigVGAN(bigvgan)
    assert isinstance(lean.post, _FirActivation)
    own = 2 + len(bigvgan.ups) + sum(len(block.convs1) + len(block.convs2) for block in bigvgan.resblocks)
    activations = 1 + sum(len(block.activations) for block in bigvgan.resblocks)
    counts = []
    for forward in (lean, LeanBigVGAN(bigvgan, fir=False)):
        with torch.no_grad(), _CountConvolutions() as convs:
            forward(torch.zeros(1, bigvgan.config.mel_dim, 8))
        counts.append(convs.count)
    assert counts == [own, own + 2 * activations], (counts, own, activations)


def test_lean_bigvgan_runs_far_fewer_ops_per_call(bigvgan):
    # the convolutions' path: the constants made once halve the ops (the chains trade ops for speed)
    lean, mel = LeanBigVGAN(bigvgan, fir=False), torch.zeros(1, bigvgan.config.mel_dim, 8)
    counts = []
    for forward in (bigvgan, lean):
        with torch.no_grad(), _CountOps() as ops:
            forward(mel)
        counts.append(ops.count)
    theirs, ours = counts
    assert ours < 0.7 * theirs, (ours, theirs)  # measured: about half


def test_the_vocoder_ab_example_finds_both_changes_exact(tiny_checkpoint):
    """examples/hf_vocoder_ab.py, the README's measurement of the chains and the float masks, on short inputs."""
    lines = run_example("hf_vocoder_ab.py", tiny_checkpoint, "--rounds", 1, "--repeats", 1, "--small").splitlines()
    assert [line.split("  ")[1].split()[0] for line in lines] == ["BigVGAN", "BigVGAN", "DiT", "DiT"], lines
    assert "modules" in lines[3] and "lean evaluation" in lines[3], lines[3]
    assert all(line.endswith("bit-equal True") for line in lines), lines
