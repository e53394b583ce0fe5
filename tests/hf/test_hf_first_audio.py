"""Issue 19, TTFA: the first chunk's DiT window vocoded in two BigVGAN calls (`first_audio_codes`), and the
time embedding's products kept between windows (`TimeModulation`). Neither adds a DiT window; the audio
after the first piece is the unsplit chunk's, sample for sample."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from hf_cards import run_example  # noqa: E402
from test_hf_bigvgan_seam import _streamed, _vocoder  # noqa: E402
from test_hf_token2wav import MIN_SNR_DB, random_codes, snr_db  # noqa: E402

import omni_cli.backends.hf.token2wav as token2wav  # noqa: E402
from omni_cli.backends.base import AUDIO_CHUNK, VocoderChunkInput  # noqa: E402
from omni_cli.backends.hf.dit import ODESettings, TimeModulation, sample_window, speaker_features  # noqa: E402

HOP = 480  # samples per code


@pytest.fixture(scope="module")
def vocoder(tiny_checkpoint):
    return _vocoder(tiny_checkpoint, "lookahead")


def _split(vocoder, codes, first: int = 8, window: int = 24, seed: int = 9) -> list[np.ndarray]:
    """[0, first) from the window of [0, window), then [first, window), then the shipped card's 48, 96, rest."""
    state, pieces = vocoder.new_state("Ethan", seed=seed), []
    have = window + vocoder.lookahead_codes
    pieces.append(vocoder.run(AUDIO_CHUNK, [VocoderChunkInput(state, codes[:have], 0, first, False, window)])[0].samples)
    pieces.append(vocoder.run(AUDIO_CHUNK, [VocoderChunkInput(state, codes[:have], first, window, False)])[0].samples)
    start = window
    for size in (48, 96, len(codes)):
        end = min(start + size, len(codes))
        have = min(len(codes), end + vocoder.lookahead_codes)
        pieces.append(vocoder.run(AUDIO_CHUNK, [VocoderChunkInput(state, codes[:have], start, end, have == len(codes))])[0]
                      .samples)
        start = end
        if end == len(codes):
            return pieces
    raise AssertionError("the sizes did not cover the codes")


def _counting_windows(monkeypatch) -> list[int]:
    rows = []
    made = token2wav.sample_window

    def counted(dit, noise, *args):
        rows.append(noise.shape[0])
        return made(dit, noise, *args)

    monkeypatch.setattr(token2wav, "sample_window", counted)
    return rows


def test_the_first_piece_comes_first_and_the_rest_is_the_unsplit_chunks_samples(vocoder, monkeypatch):
    codes = random_codes(200, seed=4)
    windows = _counting_windows(monkeypatch)
    whole_first = _streamed(vocoder, codes)  # 24, 48, 96, 32
    unsplit_windows = len(windows)
    split = _split(vocoder, codes)
    assert len(windows) == 2 * unsplit_windows  # the second piece ran no DiT window of its own
    assert [len(p) // HOP for p in split] == [8, 16, 48, 96, 32]
    unsplit, streamed = np.concatenate(whole_first), np.concatenate(split)
    assert streamed.shape == unsplit.shape
    # BigVGAN's second call reads the same mel the unsplit first chunk did: the same samples from frame 16 on
    assert np.array_equal(streamed[8 * HOP:], unsplit[8 * HOP:])
    # the first piece reads 16 frames of look-ahead past its end, not 32 more kept frames: within rounding
    assert not np.array_equal(streamed[:8 * HOP], unsplit[:8 * HOP])
    assert snr_db(unsplit[:8 * HOP], streamed[:8 * HOP]) > 120
    assert snr_db(vocoder.synthesize(codes, "Ethan", seed=9), streamed) > MIN_SNR_DB


def test_first_pieces_batch_with_other_requests_chunks(vocoder):
    codes = [random_codes(120, seed=s) for s in (1, 2)]
    alone = [_split(vocoder, c, seed=s) for c, s in zip(codes, (3, 4), strict=True)]
    states = [vocoder.new_state("Ethan", seed=s) for s in (3, 4)]
    have = 24 + vocoder.lookahead_codes
    firsts = vocoder.run(AUDIO_CHUNK, [VocoderChunkInput(st, c[:have], 0, 8, False, 24)
                                       for st, c in zip(states, codes, strict=True)])
    # one request's second piece (no DiT) beside the other's next chunk (a DiT window)
    second, other = vocoder.run(AUDIO_CHUNK, [VocoderChunkInput(states[0], codes[0][:have], 8, 24, False),
                                                VocoderChunkInput(states[1], codes[1][:have], 8, 24, False)])
    for got, want in zip([firsts[0].samples, firsts[1].samples, second.samples, other.samples],
                         [alone[0][0], alone[1][0], alone[0][1], alone[1][1]], strict=True):
        assert got.shape == want.shape and got.size
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)  # the card's sample_tolerance for batches
    assert second.noise_span is None and firsts[0].noise_span == (0, 72)  # the second piece drew no noise


def test_the_time_modulation_made_at_load_gives_the_same_mel(vocoder):
    dit, settings = vocoder.dit, ODESettings(num_steps=4)
    torch.manual_seed(0)
    features = speaker_features(dit, torch.randn(1, 40, dit.config.mel_dim), True)
    codes = torch.tensor([random_codes(36, seed=2)])
    noise, cond = torch.randn(1, 72, dit.config.mel_dim), torch.randn(1, dit.config.enc_emb_dim)
    steps = TimeModulation(dit, settings, noise.device, noise.dtype)
    assert steps.rows == 2 and len(steps._made) == 3 * 3 + 1  # 3 RK4 steps: 4 stages, each end the next start
    kept = steps.bytes
    assert kept > 0
    alone = sample_window(dit, noise, codes, cond, features, settings)  # computed at each evaluation
    looked_up = sample_window(dit, noise, codes, cond, features, settings, steps)
    assert torch.equal(alone, looked_up)
    batch = sample_window(dit, noise.repeat(3, 1, 1), codes.repeat(3, 1), cond.repeat(3, 1), features, settings, steps)
    assert steps.bytes == kept and len(steps._made) == 10  # 6 rows: computed for the window, not kept
    assert torch.equal(batch, sample_window(dit, noise.repeat(3, 1, 1), codes.repeat(3, 1), cond.repeat(3, 1),
                                            features, settings))


def test_the_first_audio_example_splits_the_waits_of_each_variant(tiny_checkpoint):
    """examples/hf_first_audio.py, the README's breakdown of a lone request's first audio, on short utterances:
    each variant's line names the three stages before first audio, one vocoder call among them."""
    import re

    stdout = run_example("hf_first_audio.py", tiny_checkpoint, "--requests", 1, "--rounds", 1, "--codes", 40)
    lines = [line for line in stdout.splitlines() if line.startswith("round")]
    assert [line.split()[2] for line in lines] == ["card", "two-piece", "hf-talker"], stdout
    for line in lines:
        found = re.search(r"thinker (\d+) units .* talker (\d+) units .* vocoder (\d+) units", line)
        assert found, line
        thinker, talker, vocoder_calls = map(int, found.groups())
        assert thinker >= 1 and talker >= 1 and vocoder_calls == 1, line
    assert "first_audio_codes 0; two-piece: 8" in stdout.splitlines()[0], stdout


def test_the_chunk_cadence_example_times_each_chunk_against_the_audio_before_it(tiny_checkpoint):
    """examples/hf_chunk_cadence.py, the README's reading of stalls beside RTF, on short utterances: a row per
    chunk, each gap over the audio before it, and the margins of the rows agree with the stall max printed.
    One request at a time, so the card's schedule from its smallest first chunk (beside another request the
    first chunk is 112 codes, the whole of an 80-code utterance: shared_first_codes, tests/test_first_audio.py)."""
    # the schedule pinned: on a loaded machine largest_when_slow would ask for 96 codes after a slow first chunk
    stdout = run_example("hf_chunk_cadence.py", tiny_checkpoint, "--concurrency", 1, "--codes", 80, "--rounds", 1,
                         "--set", "loops.vocoder.pace=schedule")
    lines = stdout.splitlines()
    stall = float(lines[1].split("stall max ")[1].split()[0])
    rows = [line.split() for line in lines[3:]]
    assert [int(row[0]) for row in rows] == list(range(len(rows))) and len(rows) >= 3, stdout
    audio = [float(row[1]) for row in rows]
    # 12 codes, 16, 24, the rest of 80-odd
    assert audio[:3] == [0.24, 0.32, 0.48] and 1.59 <= sum(audio) <= 1.70, audio
    assert rows[0][2:] == ["0.00", "-", "-", "-"]
    for row in rows[1:]:
        gap, ratio, before = float(row[3]), float(row[5]), float(rows[int(row[0]) - 1][1])
        # (the gap is printed to 0.01 s, so over 0.24 s of audio before it, its quotient can be 0.021 off)
        assert abs(ratio - gap / before) < 0.0051 / before + 0.0051, row
    # the longest wait is at least the worst median margin's
    assert stall >= max(0.0, -min(float(row[4]) for row in rows[1:])) - 0.01, stdout


def test_the_vocoder_calls_example_counts_the_last_chunk_taking_the_rest(tiny_checkpoint):
    """examples/hf_vocoder_calls.py, the README's figures for the last chunk taking the rest: 60 codes on the
    card's schedule are chunks of 12, 16 and 24 codes and a rest of 8, under the 12-code look-ahead, so the
    third chunk takes it: three calls, not four."""
    stdout = run_example("hf_vocoder_calls.py", tiny_checkpoint, "--utterances", 1, "--codes", 60,
                         "--set", "loops.vocoder.pace=schedule")  # (machine-independent, as above)
    fields = stdout.splitlines()[1].split()
    calls, vocoder_s, latency_s = float(fields[3]), float(fields[7]), float(fields[11])
    assert calls == 3 and 0 < vocoder_s <= latency_s, stdout
    first, last = stdout.splitlines()[2].split("first utterance ")[1].split("; its last ")
    assert len(first.split()) == len(last.split()) == 3, stdout  # each of the three calls, cold and warm
    # one chunk of 12 codes first and then 48: the rest after 12 + 48 is none, two calls
    stdout = run_example("hf_vocoder_calls.py", tiny_checkpoint, "--utterances", 1, "--codes", 60,
                         "--set", "loops.vocoder.first_chunk_codes=[12, 48]", "--set", "loops.vocoder.pace=schedule")
    assert float(stdout.splitlines()[1].split()[3]) == 2, stdout
