"""BigVGAN's activations compiled ahead of time (`bigvgan_ahead_of_time`, backends/hf/bigvgan_aot.py): one file
for all of them, built once into the cache and said so, the samples within float rounding of the eager chains,
and a vocoder whose build fails still speaking."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from hf_cards import run_example, share_with_the_run  # noqa: E402
from test_hf_dit_compile import snr_db  # noqa: E402

from omni_cli.backends.hf import build  # noqa: E402
from omni_cli.backends.hf.bigvgan import LeanBigVGAN, _FirActivation  # noqa: E402
from omni_cli.backends.hf.bigvgan_aot import CompiledActivation, FusedActivation  # noqa: E402
from omni_cli.backends.hf.params import VocoderParams  # noqa: E402
from omni_cli.spec import Located, SpecError, load_dataclass  # noqa: E402

BUILDING = "compiling the BigVGAN ahead of time, once for this machine (into {})"


def _vocoder(checkpoint, cache, **params):
    """The card's vocoder with the DiT eager and `params`, its files in `cache`, and the phases its load said."""
    phases: list[str] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OMNI_CLI_CACHE", str(cache))
        vocoder = build(None, {"vocoder": {"dit_ahead_of_time": False, **params}}, {"model_path": str(checkpoint)},
                        on_load=lambda step: phases.append(step.phase))["vocoder"]
    return vocoder, phases


@pytest.fixture(scope="module")
def fresh(tiny_checkpoint, tmp_path_factory):
    cache = tmp_path_factory.mktemp("omni_cli_cache")
    built = cache, _vocoder(tiny_checkpoint, cache), _vocoder(tiny_checkpoint, cache)
    share_with_the_run(cache, "bigvgan-ahead-of-time")  # the shipped card's file: not compiled twice a run
    return built


def test_the_first_load_builds_one_file_for_every_activation_the_next_only_loads(fresh):
    cache, (first, phases), (second, again) = fresh
    directory = cache / "bigvgan-ahead-of-time"
    assert BUILDING.format(directory) in phases
    assert first.bigvgan_ahead is not None and first.bigvgan_ahead.path.parent == directory
    assert {f.suffix for f in directory.iterdir()} == {".so", ".lock", ".sha256"} and len(list(directory.iterdir())) == 3
    assert not any("ahead of time" in phase for phase in again) and second.bigvgan_ahead.path == first.bigvgan_ahead.path
    activations = first.vocode.activations()
    assert len(activations) == 109 and all(isinstance(a, CompiledActivation) for a in activations)
    assert first.ahead_failed == {}


@pytest.mark.parametrize("rows, frames", [(1, 40), (1, 7), (3, 88), (2, 240)])
def test_the_compiled_activations_give_the_eager_samples_to_float_rounding(fresh, rows, frames):
    _, (vocoder, _), _ = fresh
    eager = LeanBigVGAN(vocoder.bigvgan)
    mel = torch.randn(rows, vocoder.mel_dim, frames, generator=torch.Generator().manual_seed(frames)) * 3 - 4
    with torch.no_grad():
        compiled, reference = vocoder.vocode(mel), eager(mel)
    assert compiled.shape == reference.shape and float(reference.abs().max()) > 1e-3
    snr = snr_db(reference, compiled)
    assert snr != math.inf and snr > 110  # about 130 dB; a wrong edge, tap or snake factor is far below


@pytest.mark.parametrize("channels, length", [(2, 5), (16, 300), (64, 41)])
def test_the_exported_expressions_are_the_chains_arithmetic(fresh, channels, length):
    """FusedActivation run eagerly against _FirActivation: the module export compiles computes the same thing."""
    _, (vocoder, _), _ = fresh
    fir = next(a for a in LeanBigVGAN(vocoder.bigvgan).activations() if a.alpha.shape[1] == channels)
    assert isinstance(fir, _FirActivation)
    hidden = torch.randn(2, channels, length, generator=torch.Generator().manual_seed(length))
    with torch.no_grad():
        assert torch.allclose(FusedActivation(fir)(hidden, fir.alpha, fir.inv_beta), fir(hidden), atol=1e-5, rtol=0)


def test_one_file_serves_only_activations_whose_filters_all_match(fresh):
    """The file bakes one activation's taps in: a BigVGAN whose activations differ there keeps the eager chains."""
    from omni_cli.backends.hf import bigvgan_aot

    _, (vocoder, _), _ = fresh
    lean = LeanBigVGAN(vocoder.bigvgan)
    assert bigvgan_aot.applies(lean)
    odd = lean.activations()[3]
    phase, offset, tap = odd.down_terms[0]
    odd.down_terms[0] = (phase, offset, tap * 2)
    assert not bigvgan_aot.applies(lean)
    assert not bigvgan_aot.applies(LeanBigVGAN(vocoder.bigvgan, fir=False))  # the convolutions' form


def test_a_failed_build_leaves_the_activations_eager_and_the_load_says_why(tiny_checkpoint, tmp_path, monkeypatch):
    import torch._inductor

    def no_compiler(exported, package_path, **options):
        Path(package_path).write_bytes(b"half a file")
        raise RuntimeError("C++ compile error\nmore detail")

    monkeypatch.setattr(torch._inductor, "aoti_compile_and_package", no_compiler)
    vocoder, phases = _vocoder(tiny_checkpoint, tmp_path)
    assert vocoder.bigvgan_ahead is None and vocoder.ahead_failed == {"BigVGAN": "RuntimeError: C++ compile error"}
    assert ("the BigVGAN runs uncompiled: its ahead-of-time file could not be built or loaded (RuntimeError: C++ "
            "compile error)") in phases
    assert all(isinstance(a, _FirActivation) for a in vocoder.vocode.activations())
    assert [f.suffix for f in (tmp_path / "bigvgan-ahead-of-time").iterdir()] == [".lock"]  # no partial file


def test_off_the_vocoder_keeps_the_eager_chains(tiny_checkpoint, tmp_path):
    vocoder, phases = _vocoder(tiny_checkpoint, tmp_path, bigvgan_ahead_of_time=False)
    assert vocoder.bigvgan_ahead is None and not (tmp_path / "bigvgan-ahead-of-time").exists()
    assert all(isinstance(a, _FirActivation) for a in vocoder.vocode.activations())


def test_bigvgan_ahead_of_time_is_a_checked_boolean_on_by_default():
    assert VocoderParams().bigvgan_ahead_of_time is True
    assert load_dataclass(VocoderParams, Located({"bigvgan_ahead_of_time": False}, "c.yaml")).bigvgan_ahead_of_time is False
    with pytest.raises(SpecError, match="bigvgan_ahead_of_time"):
        load_dataclass(VocoderParams, Located({"bigvgan_ahead_of_time": 1}, "card.yaml"))


def test_the_example_times_both_and_says_how_close(fresh, tiny_checkpoint, monkeypatch):
    """examples/hf_bigvgan_ahead.py, the README's measurement behind bigvgan_ahead_of_time."""
    monkeypatch.setenv("OMNI_CLI_CACHE", str(fresh[0]))
    lines = run_example("hf_bigvgan_ahead.py", tiny_checkpoint, "--rounds", 1, "--repeats", 1,
                        "--calls", "1x40,2x64").splitlines()
    assert lines[0].startswith("loaded in ") and lines[0].endswith(".so"), lines
    assert [line.split()[3:6] for line in lines[1:]] == [["1", "x", "40"], ["2", "x", "64"], ["2", "x", "64"]], lines
    assert "in two threads" in lines[3], lines
    for line in lines[1:]:
        before, after = (float(line.split(label)[1].split()[0]) for label in ("eager", "ahead of time"))
        assert before > 0 and after > 0, line
    for line in lines[1:3]:
        snr = line.split("SNR")[1].split()[0]
        assert snr != "inf" and float(snr) > 100, line
