"""The hf backend's settings, loading errors, voices and import hygiene."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from omni_cli.backends.hf import PARAMS, HFParams, build  # noqa: E402
from omni_cli.loops.sampling import Sampler, apply_repetition_penalty  # noqa: E402
from omni_cli.spec import SpecError  # noqa: E402
from omni_cli.spec.card import SamplingSpec  # noqa: E402


def _issues(settings):
    with pytest.raises(SpecError) as info:
        HFParams.from_settings(settings)
    return [(i.key, i.message) for i in info.value.issues]


def test_settings_are_validated_strictly_and_all_at_once():
    issues = _issues({"model_path": "x", "dtype": "int8", "devcie": "cpu", "codec_bos_pad_in_prefill": "yes"})
    assert [k for k, _ in issues] == ["devcie", "dtype", "codec_bos_pad_in_prefill"]
    assert "unknown key (expected one of: attn_implementation, codec_bos_pad_in_prefill, device, dtype" in issues[0][1]
    assert issues[1][1] == "expected one of 'float32' | 'bfloat16' | 'float16', got 'int8'"
    assert issues[2][1] == "expected true/false, got string"
    assert _issues({}) == [("model_path", "the hf backend needs a checkpoint directory: pass --model-path DIR")]
    assert _issues({"model_path": "x", "num_threads": True}) == [("num_threads", "expected integer, got true/false")]
    assert _issues({"model_path": "x", "num_threads": 5000}) == [("num_threads", "must be at most 4096, got 5000")]
    settings = HFParams.from_settings({"model_path": "/m", "device": "cuda:1"})
    assert (settings.dtype, settings.device, settings.codec_bos_pad_in_prefill) == ("float32", "cuda:1", True)


def test_component_params_are_bounded_dataclasses():
    assert set(PARAMS) == {"thinker", "talker", "vocoder", "audio_encoder", "image_encoder"}
    numeric = [f for cls in PARAMS.values() for f in dataclasses.fields(cls) if f.type in ("int", "float")]
    assert numeric and all(f.metadata["max"] is not None for f in numeric)
    assert PARAMS["vocoder"](bigvgan_overlap_frames=41).problems() == [
        ("bigvgan_overlap_frames", "must be even (half of it is trimmed on each side)")
    ]


def test_build_names_what_is_wrong_with_the_checkpoint(tmp_path):
    # a directory that is not a checkpoint is bad input (SpecError, exit 2), said before torch loads
    with pytest.raises(SpecError, match="config.json is missing"):
        build(None, {}, {"model_path": str(tmp_path)})
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(SpecError, match="spk_dict.pt is missing"):
        build(None, {}, {"model_path": str(tmp_path)})
    with pytest.raises(SpecError, match="no such checkpoint directory"):
        build(None, {}, {"model_path": str(tmp_path / "absent")})
    with pytest.raises(SpecError, match="voice: unknown key"):
        build(None, {}, {"model_path": str(tmp_path), "voice": "Chelsie"})


@pytest.fixture(scope="module")
def parts(tiny_checkpoint):
    return build(None, {}, {"model_path": str(tiny_checkpoint)})


def test_voices_come_from_spk_dict(parts):
    assert parts["talker"].voices() == parts["vocoder"].voices() == ["Chelsie", "Ethan"]
    assert parts["vocoder"].new_state(None).voice.name == "Chelsie"  # generate's default speaker
    with pytest.raises(ValueError, match="unknown voice 'Nobody'; this checkpoint has: Chelsie, Ethan"):
        parts["vocoder"].new_state("Nobody")


def test_components_describe_themselves(parts):
    thinker, talker, vocoder = parts["thinker"], parts["talker"], parts["vocoder"]
    assert (thinker.role, talker.role, vocoder.role) == ("thinker", "talker", "vocoder")
    assert talker.suppress_token_ids == {121} and talker.eos_token_ids == {120, 122}
    assert (vocoder.sample_rate, vocoder.samples_per_code, vocoder.lookahead_codes) == (24000, 480, 12)
    # 2 layers x 2 kv heads x head_dim 8 (talker) / 32 / 4 (thinker) x K and V x 4 bytes
    assert talker.cache_bytes(10) == 10 * 2 * 2 * 2 * 8 * 4
    # ... plus, per thinker position, the last hidden state and input embedding the hand-off keeps (32 wide)
    assert thinker.cache_bytes(10) == 10 * (2 * 2 * 2 * 8 * 4 + 2 * 32 * 4)
    assert all(part.weight_bytes() > 10_000 for part in parts.values())
    assert talker.code_of(121) is None and talker.code_of(122) is None and talker.code_of(124) == 124


# `Qwen2_5OmniForConditionalGeneration.generate` (5.24) runs:
# - thinker: the thinker's generation config, which for Qwen2.5-Omni checkpoints has no processors:
#   greedy argmax unless `thinker_do_sample=True` is passed.
# - talker: repetition penalty 1.05 over the talker's whole id sequence (prefill codec ids included),
#   then codec BOS suppressed (-inf); with `talker_do_sample=True` (its default) then temperature 0.9,
#   top-k 40, top-p 0.8 and a multinomial draw. With `talker_do_sample=False` the penalty and the
#   suppression still apply before the argmax. `omni_cli.loops.sampling.Sampler` applies the same
#   float32 penalty and masks suppressed ids (checked against transformers' processors below).
def test_our_sampler_processes_logits_as_transformers_generate_does():
    import torch
    from transformers.generation.logits_process import RepetitionPenaltyLogitsProcessor, SuppressTokensLogitsProcessor

    rng = np.random.default_rng(0)
    for _ in range(50):
        logits = (rng.standard_normal(128) * rng.uniform(0.01, 50)).astype(np.float32)
        history = rng.integers(0, 128, size=int(rng.integers(1, 60))).tolist()
        ids = torch.tensor([history])
        want = RepetitionPenaltyLogitsProcessor(1.05)(ids, torch.from_numpy(logits.copy())[None])
        assert np.array_equal(apply_repetition_penalty(logits, history, 1.05), want[0].numpy())
        want = SuppressTokensLogitsProcessor([121])(ids, want)[0].numpy()
        greedy = Sampler(SamplingSpec(temperature=0.0, repetition_penalty=1.05), suppressed=[121], eos=[])
        assert greedy.choose(logits, np.random.default_rng(0), history, allow_eos=True) == int(np.argmax(want))


def test_package_imports_without_torch_and_build_says_what_to_install(tmp_path):
    for name in ("config.json", "spk_dict.pt"):  # a checkpoint directory, as far as can be told before torch
        (tmp_path / name).write_bytes(b"")
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import omni_cli.backends.hf as hf\n"
        "from omni_cli.backends.base import BackendUnavailable\n"
        f"try:\n    hf.build(None, {{}}, {{'model_path': {str(tmp_path)!r}}})\n"
        "except BackendUnavailable as exc:\n    print(exc)\n"
    )
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    # the command that works from this checkout, with the README's CPU torch pin (issue 18)
    assert done.stdout.strip() == f'the hf backend needs the hf extra: pip install torch==2.13.0 -e "{root}[hf]"'
    code = "import sys, omni_cli.backends.hf, omni_cli.backends.hf.params; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert done.stdout.strip() == "False"
