"""The DiT's velocity compiled (`dit_compile: true`, `DiTCompile`) against the eager function it compiles."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from hf_cards import run_example  # noqa: E402

from omni_cli.backends.hf import build  # noqa: E402
from omni_cli.backends.hf.dit import sample_window  # noqa: E402
from omni_cli.backends.hf.dit_compile import DiTCompile  # noqa: E402
from omni_cli.backends.hf.params import VocoderParams  # noqa: E402
from omni_cli.spec import Located, SpecError, load_dataclass  # noqa: E402


def snr_db(reference: torch.Tensor, other: torch.Tensor) -> float:
    error = float(((reference.double() - other.double()) ** 2).sum())
    return math.inf if error == 0 else 10 * math.log10(float((reference.double() ** 2).sum()) / error)


def random_window(vocoder, windows: int, frames: int) -> tuple:
    """`windows` rows of seeded noise and codes over `frames` mel frames, the first voice's cond for each row and
    its speaker features: a DiT window's inputs (`sample_window`'s noise, codes, cond, features)."""
    state = vocoder.new_state(vocoder.voices()[0], seed=1)
    generator = torch.Generator().manual_seed(windows * 1000 + frames)
    noise = torch.randn(windows, frames, vocoder.mel_dim, generator=generator)
    codes = torch.randint(0, 100, (windows, frames // vocoder.repeats), generator=generator)
    return noise, codes, state.voice.cond.expand(windows, -1), vocoder._voice_features(state.voice)


@pytest.fixture(scope="module")
def compiled(tiny_checkpoint):
    """The card's vocoder settings (guidance, blocks from 5) with the DiT compiled, and what its load said."""
    phases: list[str] = []
    # dit_ahead_of_time off: where its files load, they run the windows and dit_compile is not used
    vocoder = build(None, {"vocoder": {"dit_compile": True, "dit_ahead_of_time": False}}, {"model_path": str(tiny_checkpoint)},
                    on_load=lambda step: phases.append(step.phase))["vocoder"]
    return vocoder, phases


def test_with_the_ahead_of_time_files_loaded_dit_compile_is_not_used(fresh_ahead_vocoder):
    assert fresh_ahead_vocoder.compiled is None and fresh_ahead_vocoder.ahead is not None


@pytest.fixture(scope="module")
def fresh_ahead_vocoder(tiny_checkpoint):
    return build(None, {"vocoder": {"dit_compile": True, "bigvgan_ahead_of_time": False}},
                 {"model_path": str(tiny_checkpoint)})["vocoder"]


def test_the_load_compiles_and_says_so(compiled):
    vocoder, phases = compiled
    assert isinstance(vocoder.compiled, DiTCompile)
    assert vocoder.compiled.threads_overlap  # torch 2.13: its kernels let the GIL go (dit.py)
    assert phases[-1] == "compiling the DiT (cached after the first time)"
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] >= 3  # masks, whole blocks, padded blocks


@pytest.mark.parametrize("windows, frames", [(1, 72), (1, 46), (1, 130), (3, 168), (2, 96), (5, 250), (8, 264)])
def test_every_window_runs_the_code_compiled_at_load_with_the_eager_values(compiled, windows, frames):
    vocoder, _ = compiled
    noise, codes, cond, features = random_window(vocoder, windows, frames)

    def window(with_compiled):
        return sample_window(vocoder.dit, noise, codes, cond, features, vocoder.ode, vocoder.steps,
                             vocoder.blocked_from, vocoder.compiled if with_compiled else None)

    graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
    with torch.no_grad(), torch._dynamo.config.patch(error_on_recompile=True):  # a compile here is an error
        made = window(True)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] == graphs
    eager = window(False)
    assert made.shape == eager.shape == (windows, vocoder.mel_dim, frames)
    # inductor reorders float sums: about 150 dB; a wrong mask, block or modulation row is far below
    assert snr_db(eager, made) > 120


@pytest.mark.parametrize("blocked_from, guided, shapes", [
    (5, True, [(1, 72), (1, 120), (1, 122)]),
    (0, True, [(1, 72)]),
    (1, True, [(1, 24), (1, 26)]),
    (3, False, [(1, 48), (2, 48), (1, 72), (2, 72), (1, 74), (2, 74)]),
])
def test_the_warm_windows_reach_each_form(blocked_from, guided, shapes):
    assert DiTCompile.warm_shapes(24, blocked_from, guided) == shapes


def test_dit_compile_is_a_checked_boolean_off_by_default():
    assert VocoderParams().dit_compile is False
    assert load_dataclass(VocoderParams, Located({"dit_compile": True}, "card.yaml")).dit_compile is True
    with pytest.raises(SpecError, match="dit_compile"):
        load_dataclass(VocoderParams, Located({"dit_compile": "yes"}, "card.yaml"))


def test_the_compile_example_times_both_forms_and_says_how_close(tiny_checkpoint):
    """examples/hf_dit_compile.py, the README's measurement behind dit_compile, on one window and one batch."""
    lines = run_example("hf_dit_compile.py", tiny_checkpoint, "--rounds", 1, "--repeats", 1,
                        "--windows", "1x48,2x122").splitlines()
    assert lines[0].startswith("compiled at load in ") and lines[0].endswith("(kernels let the GIL go: True)"), lines
    assert [line.split()[3:6] for line in lines[1:]] == [["1", "x", "48"], ["2", "x", "122"], ["2", "x", "122"]], lines
    assert lines[3].split("frames")[1].startswith(" in two threads"), lines
    for line in lines[1:]:
        before, after = (float(line.split(label)[1].split()[0]) for label in ("eager", "compiled"))
        assert before > 0 and after > 0, line
    for line in lines[1:3]:
        snr = line.split("SNR")[1].split()[0]
        assert snr != "inf" and float(snr) > 100, line  # compiled: not the eager code, and within rounding of it
