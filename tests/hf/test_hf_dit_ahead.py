"""The DiT's velocity compiled ahead of time (`dit_ahead_of_time`, backends/hf/dit_aot.py): built once into the
cache and said so, loaded from it after, within float rounding of eager, only where it applies, and a vocoder
whose build fails still speaking."""

from __future__ import annotations

import math
import os
import stat
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_cards  # noqa: E402
from hf_cards import run_example  # noqa: E402
from test_hf_dit_compile import random_window, snr_db  # noqa: E402
from test_hf_token2wav import MIN_SNR_DB  # noqa: E402
from test_hf_token2wav import snr_db as samples_snr_db  # noqa: E402

from omni_cli.api import load  # noqa: E402
from omni_cli.backends.hf import build, dit_aot  # noqa: E402
from omni_cli.backends.hf.dit import ODESettings, WindowVelocity, sample_window  # noqa: E402
from omni_cli.backends.hf.params import VocoderParams  # noqa: E402
from omni_cli.engine import Engine  # noqa: E402
from omni_cli.spec import Located, SpecError, load_dataclass  # noqa: E402
from omni_cli.spec.request import SpeakRequest  # noqa: E402

BUILDING = "compiling the DiT ahead of time, once for this machine (into {})"


def _vocoder(checkpoint, cache, **params):
    """The card's vocoder with `params` (BigVGAN eager unless they say: test_hf_bigvgan_ahead.py), its compiled
    files kept in `cache`, and the phases its load reported."""
    params = {"bigvgan_ahead_of_time": False, **params}
    phases: list[str] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("OMNI_CLI_CACHE", str(cache))
        vocoder = build(None, {"vocoder": params}, {"model_path": str(checkpoint)},
                        on_load=lambda step: phases.append(step.phase))["vocoder"]
    return vocoder, phases


@pytest.fixture(scope="module")
def fresh(tiny_checkpoint, tmp_path_factory):
    """A vocoder loaded with an empty cache (it builds), then another with the same cache (it loads)."""
    cache = tmp_path_factory.mktemp("omni_cli_cache")
    first = _vocoder(tiny_checkpoint, cache, dit_ahead_of_time=True)
    second = _vocoder(tiny_checkpoint, cache, dit_ahead_of_time=True)
    hf_cards.share_with_the_run(cache, "dit-ahead-of-time")  # the shipped card's files: not compiled twice a run
    return cache, first, second


def test_the_first_load_builds_into_the_cache_and_says_so_the_next_only_loads(fresh):
    cache, (first, phases), (second, again) = fresh
    directory = cache / "dit-ahead-of-time"
    assert BUILDING.format(directory) in phases
    files = sorted(directory.iterdir())
    paths = first.ahead.paths
    assert sorted(paths) == ["blocks", "masks"]  # the card's two forms: masks under 5 blocks, blocks from there
    assert {f.name for f in files} == ({p.name for p in paths.values()} | {p.stem + ".lock" for p in paths.values()}
                                      | {p.name + ".sha256" for p in paths.values()})  # each file's digest beside it
    for form, path in paths.items():  # no partial file left; the code, not the weights (handed over at load)
        assert path.name.startswith(f"velocity-{form}-") and path.suffix == ".so"
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o644 and 0 < path.stat().st_size < 20 << 20
    assert not any("ahead of time" in phase for phase in again) and second.ahead.paths == paths
    assert first.ahead_failed == second.ahead_failed == {}


@pytest.mark.parametrize("windows, frames, form", [(1, 48, "masks"), (1, 46, "masks"), (1, 80, "masks"),
                                                    (3, 96, "masks"), (2, 72, "masks"), (1, 120, "blocks"),
                                                    (1, 122, "blocks"), (3, 168, "blocks"), (2, 250, "blocks")])
def test_windows_of_either_form_run_the_compiled_velocity_within_rounding_of_eager(fresh, windows, frames, form):
    _, (vocoder, _), _ = fresh
    noise, codes, cond, features = random_window(vocoder, windows, frames)
    velocity = WindowVelocity(vocoder.dit, codes, cond, features, vocoder.ode, vocoder.steps, vocoder.blocked_from,
                              None, vocoder.ahead)
    assert velocity.ahead is vocoder.ahead and velocity.ahead_form == form  # 5 blocks and more: blocks
    assert velocity.ahead_pad == (-frames % 24 if form == "blocks" else 0)  # padded to whole blocks

    def window(ahead):
        return sample_window(vocoder.dit, noise, codes, cond, features, vocoder.ode, vocoder.steps,
                             vocoder.blocked_from, None, ahead)

    with torch.no_grad():
        made, eager = window(vocoder.ahead), window(None)
    assert made.shape == eager.shape == (windows, vocoder.mel_dim, frames)
    # inductor orders some float sums differently: about 150 dB; a wrong mask, row or modulation is far below
    snr = snr_db(eager, made)
    assert snr != math.inf and snr > 120


def test_a_batch_of_one_row_stays_eager(fresh):
    _, (vocoder, _), _ = fresh
    state = vocoder.new_state(vocoder.voices()[0], seed=1)
    features = vocoder._voice_features(state.voice)
    codes = torch.zeros(1, 24, dtype=torch.long)
    unguided = ODESettings(vocoder.ode.num_steps, 0.0, vocoder.ode.sway_coefficient)
    velocity = WindowVelocity(vocoder.dit, codes, state.voice.cond, features[:1], unguided, None,
                              vocoder.blocked_from, None, vocoder.ahead)
    assert velocity.rows == 1 and velocity.ahead is None  # the files are made for two rows or more


@pytest.mark.parametrize("blocked_from, forms", [(5, ["masks", "blocks"]), (0, ["masks"]), (1, ["blocks"])])
def test_a_vocoder_builds_the_forms_its_windows_take(fresh, blocked_from, forms):
    _, (vocoder, _), _ = fresh
    assert dit_aot.forms_for(vocoder.dit, blocked_from) == forms


@pytest.mark.parametrize("guidance", [0.5, 0.0])
def test_the_example_it_is_exported_from_has_two_rows_with_guidance_or_without(fresh, guidance):
    _, (vocoder, _), _ = fresh
    settings = ODESettings(vocoder.ode.num_steps, guidance, vocoder.ode.sway_coefficient)
    voice = vocoder.new_state(vocoder.voices()[0]).voice
    features = vocoder._voice_features(voice)[:2 if settings.is_guided else 1]
    masks = len(set(dit_aot.layer_windows(vocoder.dit)))
    for form, frames, mask_shape in (("masks", 48, (1, 1, 48, 48)), ("blocks", 72, None)):
        example = dit_aot.example_inputs(vocoder.dit, voice.cond, features, settings, None, form)
        assert len(example) == 6 + masks + 6 * len(vocoder.dit.transformer_blocks) + 2
        assert [t.shape[:2] for t in example[:6]] == [(2, frames)] * 6  # rows: the exported size's smallest
        for mask in example[6:6 + masks]:  # [1, blocks, block, span * block] for blocks
            assert tuple(mask.shape) == mask_shape if mask_shape else (mask.shape[:3] == (1, 3, 24))


def test_the_key_follows_what_the_code_depends_on(fresh):
    _, (vocoder, _), _ = fresh
    dit = vocoder.dit
    key = dit_aot.package_key(dit, 1)
    assert key == dit_aot.package_key(dit, 1) == dit_aot.package_key(dit, 1, "masks")
    assert key != dit_aot.package_key(dit, 2)  # the loops are made for the threads they run with
    assert key != dit_aot.package_key(dit, 1, "blocks")
    before = dit.config.num_hidden_layers
    try:
        dit.config.num_hidden_layers = before + 1
        changed = dit_aot.package_key(dit, 1)
    finally:
        dit.config.num_hidden_layers = before
    assert changed != key and dit_aot.package_key(dit, 1) == key


def test_a_failed_build_leaves_the_dit_eager_and_the_load_says_why(tiny_checkpoint, tmp_path, monkeypatch):
    import torch._inductor

    def no_compiler(exported, package_path, **options):
        Path(package_path).write_bytes(b"half a file")
        raise RuntimeError("C++ compile error\nmore detail")

    monkeypatch.setattr(torch._inductor, "aoti_compile_and_package", no_compiler)
    vocoder, phases = _vocoder(tiny_checkpoint, tmp_path, dit_ahead_of_time=True)
    assert vocoder.ahead is None and vocoder.ahead_failed["DiT"] == "RuntimeError: C++ compile error"
    assert phases[-1] == ("the DiT runs uncompiled: its ahead-of-time file could not be built or loaded "
                          "(RuntimeError: C++ compile error)")
    assert [f.suffix for f in (tmp_path / "dit-ahead-of-time").iterdir()] == [".lock"]  # no partial file, no library


def test_off_the_vocoder_neither_builds_nor_loads(tiny_checkpoint, tmp_path):
    vocoder, phases = _vocoder(tiny_checkpoint, tmp_path, dit_ahead_of_time=False)
    assert vocoder.ahead is None and not (tmp_path / "dit-ahead-of-time").exists()
    assert not any("ahead of time" in phase for phase in phases)


def test_dit_ahead_of_time_is_a_checked_boolean_on_by_default():
    assert VocoderParams().dit_ahead_of_time is True
    assert load_dataclass(VocoderParams, Located({"dit_ahead_of_time": False}, "card.yaml")).dit_ahead_of_time is False
    with pytest.raises(SpecError, match="dit_ahead_of_time"):
        load_dataclass(VocoderParams, Located({"dit_ahead_of_time": "yes"}, "card.yaml"))


def test_a_streamed_utterance_with_both_compiled_stays_within_the_stated_snr_of_the_whole_eager_one(tiny_checkpoint,
                                                                                           tmp_path):
    def program(name, **changes):
        # the run's own cache (tests/conftest.py), where the cards that load both compiled parts keep them: built
        # there once for the run, not again in this file's fresh cache
        path = hf_cards.greedy_card(tmp_path, name, thinker_max=6, talker_max=90, **changes)
        return load(str(path), settings={"model_path": str(tiny_checkpoint)})

    request = SpeakRequest("hello there", mode="chat", voice="Chelsie", seed=3)
    whole = Engine(program("whole")).submit(request, collect=True).result()
    streamed_program = program("streamed", chunk_codes=96, first_chunk_codes=[12, 16],
                               vocoder={"dit_ahead_of_time": True, "bigvgan_ahead_of_time": True})
    vocoder = streamed_program.roles["vocoder"]
    assert vocoder.ahead is not None and vocoder.bigvgan_ahead is not None  # both parts compiled
    streamed = Engine(streamed_program).submit(request, collect=True).result()
    assert streamed.tokens == whole.tokens and streamed.samples.size == whole.samples.size > 0
    assert not np.array_equal(streamed.samples, whole.samples)
    assert samples_snr_db(whole.samples, streamed.samples) > MIN_SNR_DB


def test_the_example_times_both_and_says_how_close(fresh, tiny_checkpoint, monkeypatch):
    """examples/hf_dit_ahead.py, the README's measurement behind dit_ahead_of_time, loading the file built above."""
    monkeypatch.setenv("OMNI_CLI_CACHE", str(fresh[0]))
    lines = run_example("hf_dit_ahead.py", tiny_checkpoint, "--rounds", 1, "--repeats", 1,
                        "--windows", "1x48,2x130").splitlines()
    assert lines[0].startswith("loaded in ") and lines[0].endswith(".so") and lines[0].count(".so") == 2, lines
    assert [line.split()[3:6] for line in lines[1:]] == [["1", "x", "48"], ["2", "x", "130"]], lines
    for line in lines[1:]:
        before, after = (float(line.split(label)[1].split()[0]) for label in ("eager", "ahead of time"))
        snr = line.split("SNR")[1].split()[0]
        assert before > 0 and after > 0 and snr != "inf" and float(snr) > 100, line
