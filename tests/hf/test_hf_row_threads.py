"""A batched vocoder call's rows split over Python threads (backends/hf/rows.py): which calls split, that the
parts run at once and all finish, and that a split batch's samples are the unsplit batch's within tolerance."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from hf_cards import run_example  # noqa: E402

from omni_cli.backends.base import AUDIO_CHUNK, VocoderChunkInput  # noqa: E402
from omni_cli.backends.hf import build  # noqa: E402
from omni_cli.backends.hf.rows import MIN_ROW_FRAMES, RowThreads, choose_row_threads  # noqa: E402
from omni_cli.backends.hf.token2wav import bigvgan_calls  # noqa: E402


def test_bigvgan_calls_keep_each_thread_within_its_frames_in_as_few_even_calls_as_that_takes():
    assert bigvgan_calls(8, 240, 640, 2) == [(0, 4), (4, 8)]  # 2 rows a thread: 4 a call
    assert bigvgan_calls(8, 240, 640, 1) == [(0, 2), (2, 4), (4, 6), (6, 8)]
    assert bigvgan_calls(8, 194, 640, 2) == [(0, 4), (4, 8)]  # 6 a call would leave 2: four and four
    assert bigvgan_calls(7, 240, 640, 2) == [(0, 3), (3, 7)]
    assert bigvgan_calls(8, 88, 640, 2) == [(0, 8)]
    assert bigvgan_calls(3, 700, 640, 2) == [(0, 1), (1, 3)]  # past the cap: still a row a thread
    assert bigvgan_calls(1, 4000, 640, 2) == [(0, 1)]
    for rows in range(1, 20):
        for frames in (24, 88, 194, 240, 400, 700):
            calls = bigvgan_calls(rows, frames, 640, 2)
            assert calls[0][0] == 0 and calls[-1][1] == rows and all(b > a for a, b in calls)
            assert all(calls[i][1] == calls[i + 1][0] for i in range(len(calls) - 1))
            sizes = [b - a for a, b in calls]
            assert max(sizes) - min(sizes) <= 1 and max(sizes) <= 2 * max(1, 640 // frames)
            assert len(calls) == -(-rows // (2 * max(1, 640 // frames)))  # no more calls than the cap needs


def test_only_a_batch_with_enough_frames_for_each_thread_splits_and_rows_are_shared_evenly():
    rows = RowThreads(2, 1)
    dit, bigvgan = MIN_ROW_FRAMES["dit"], MIN_ROW_FRAMES["bigvgan"]
    assert rows.parts("dit", 8, 2 * dit // 8 - 1) == [(0, 8)]  # one thread's worth short of two
    assert rows.parts("dit", 8, 2 * dit // 8) == [(0, 4), (4, 8)]
    assert rows.parts("bigvgan", 1, 100 * bigvgan) == [(0, 1)]  # a request alone never splits
    assert rows.parts("bigvgan", 3, bigvgan) == [(0, 1), (1, 3)]
    assert RowThreads(1, 1).parts("bigvgan", 8, 100 * bigvgan) == [(0, 8)]
    assert RowThreads(4, 1).parts("bigvgan", 3, 100 * bigvgan) == [(0, 1), (1, 2), (2, 3)]
    assert RowThreads(4, 1).parts("bigvgan", 8, 3 * bigvgan // 8) == [(0, 2), (2, 5), (5, 8)]


def test_auto_gives_the_cores_over_the_intra_op_threads_and_a_count_given_wins():
    assert choose_row_threads(0, 1, cores=2) == 2
    assert choose_row_threads(0, 2, cores=2) == 1
    assert choose_row_threads(0, 4, cores=2) == 1
    assert choose_row_threads(3, 1, cores=2) == 3
    assert choose_row_threads(0, 1, cores=16, on_cpu=False) == 1  # a GPU's batch stays one call
    assert choose_row_threads(2, 1, cores=16, on_cpu=False) == 2


def test_parts_run_at_once_without_autograd_and_come_back_in_order():
    rows = RowThreads(2, 1)
    both_in = threading.Barrier(2, timeout=10)  # broken unless the two parts are in flight together
    seen = []

    def call(start, stop):
        both_in.wait()
        seen.append((threading.get_ident(), torch.is_grad_enabled()))
        return list(range(start, stop))

    with torch.no_grad():
        assert rows.map(call, [(0, 3), (3, 5)]) == [[0, 1, 2], [3, 4]]
    assert len({ident for ident, _ in seen}) == 2 and not any(grad for _, grad in seen)


def test_a_part_that_raises_is_raised_once_every_part_has_finished():
    rows = RowThreads(2, 1)
    finished = []

    def call(start, stop):
        if start == 0:
            raise ValueError("the first part failed")
        time.sleep(0.2)
        finished.append(start)
        return start

    with pytest.raises(ValueError, match="first part failed"):
        rows.map(call, [(0, 1), (1, 2)])
    assert finished == [1]  # the other part was not left running


@pytest.fixture(scope="module")
def vocoder(tiny_checkpoint):
    params = {"dit_num_steps": 4, "chunk_past_frames": 48, "chunk_future_frames": 24, "bigvgan_overlap_frames": 32,
              "bigvgan_seam": "lookahead", "row_threads": 2}
    return build(None, {"vocoder": params}, {"model_path": str(tiny_checkpoint)})["vocoder"]


def test_a_batch_of_first_chunks_split_over_two_threads_makes_the_unsplit_batchs_samples(vocoder, monkeypatch):
    codes = [[int(c) for c in np.random.default_rng(seed).integers(0, 120, 60)] for seed in range(8)]

    def first_chunks():  # eight requests' first chunks, codes [0, 36) with 12 of look-ahead, in one call
        inputs = [VocoderChunkInput(vocoder.new_state("Chelsie", seed=i), c, 0, 36, False) for i, c in enumerate(codes)]
        return [out.samples for out in vocoder.run(AUDIO_CHUNK, inputs)]

    split_calls = []
    run_parts = RowThreads.map

    def recorded(self, call, parts):
        split_calls.append(len(parts))
        return run_parts(self, call, parts)

    monkeypatch.setattr(RowThreads, "map", recorded)
    split = first_chunks()
    # the DiT's 8 x 96 frames in two parts; BigVGAN's 88 frames, up to 7 rows a thread (bigvgan_batch_frames:
    # 640 each): one call of all 8, four rows a thread
    assert split_calls == [2, 2]
    monkeypatch.setattr(vocoder, "rows", RowThreads(1, vocoder.threads.count))
    split_calls.clear()
    whole = first_chunks()
    assert split_calls == [1, 1, 1]  # one thread: up to 7 rows a call, so 4 and 4
    for a, b in zip(split, whole, strict=True):
        assert a.shape == b.shape and a.size == 36 * vocoder.samples_per_code
        assert float(np.max(np.abs(a - b))) <= 1e-5  # the card's sample_tolerance for batched windows


def test_the_row_threads_example_times_both_forms_of_each_shape(tiny_checkpoint):
    """examples/hf_row_threads.py, the README's measurement behind MIN_ROW_FRAMES, on two small shapes."""
    lines = run_example("hf_row_threads.py", tiny_checkpoint, "--rounds", 1, "--repeats", 1, "--small").splitlines()
    assert [line.split()[2:5] for line in lines] == [["dit", "8", "x"], ["bigvgan", "8", "x"]], lines
    for line in lines:
        one, two = (float(line.split(label)[1].split()[0]) for label in ("one thread", "2 threads"))
        assert one > 0 and two > 0 and "frames a thread" in line and "bit-equal" in line


def test_the_bigvgan_batch_example_times_each_cap_as_the_vocoder_would_call_it(tiny_checkpoint):
    """examples/hf_bigvgan_batch.py, the README's measurement behind bigvgan_batch_frames, on one small shape."""
    out = run_example("hf_bigvgan_batch.py", tiny_checkpoint, "--rounds", 1, "--repeats", 1, "--caps", "64,640",
                      "--shapes", "4x48").splitlines()
    assert len(out) == 1 and out[0].startswith("round 1  4 x  48 frames"), out
    # 64 frames a thread: 2 calls of 2 rows, 640: one call of 4; neither splits (under MIN_ROW_FRAMES a thread)
    assert "cap   64:" in out[0] and "(2 calls, 2 rows a thread)" in out[0], out
    assert "cap  640:" in out[0] and "(1 call, 4 rows a thread)" in out[0], out
    for cell in out[0].split("cap")[1:]:
        assert float(cell.split(":")[1].split("ms")[0]) > 0
