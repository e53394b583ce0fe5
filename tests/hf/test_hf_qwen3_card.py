"""The qwen3_omni card on the tiny Qwen3-Omni checkpoint equals Qwen3OmniMoeForConditionalGeneration.generate:
thinker tokens, talker codes of every codebook group, waveform; alone, batched, and through `omni speak`."""

from __future__ import annotations

import os
import subprocess
import sys
import wave
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
from hf_cards import qwen3_card  # noqa: E402

from omni_cli.api import load  # noqa: E402
from omni_cli.backends.hf.qwen3_reference import generate_reference  # noqa: E402
from omni_cli.backends.hf.qwen3_tiny import PROMPT  # noqa: E402
from omni_cli.engine import Engine  # noqa: E402
from omni_cli.spec.request import SpeakRequest  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
THINKER_MAX, TALKER_MAX = 12, 40
# streamed Code2Wav against generate's whole-utterance decode: measured 9e-8 (tests/hf/test_hf_qwen3_code2wav.py)
STREAMED_BOUND = 1e-6
# prompts of other lengths, asked beside each other: their decode steps share ragged batches
TEXTS = (PROMPT, "a longer question than the first one?", "ok")


def greedy_card(directory: Path, name: str, chunk_codes: int | None = None) -> Path:
    """The shipped card made comparable with generate(talker_do_sample=False): greedy talker keeping its
    repetition penalty, generate's caps; chunk_codes 0: one whole-utterance chunk."""
    return qwen3_card(directory, name, thinker_max=THINKER_MAX, talker_max=TALKER_MAX, chunk_codes=chunk_codes)


@pytest.fixture(scope="module")
def cards(tmp_path_factory):
    return tmp_path_factory.mktemp("qwen3_cards")


@pytest.fixture(scope="module")
def program(cards, qwen3_checkpoint):
    return load(str(greedy_card(cards, "streamed")), settings={"model_path": str(qwen3_checkpoint)})


@pytest.fixture(scope="module")
def references(program):
    """generate's run of each text, alone, on the program's own model (generate keeps no state between calls that
    our steps read)."""
    thinker = program.components["thinker"]
    eos = min(thinker.eos_token_ids)
    return [generate_reference(thinker.model, thinker.encode(text, "chat").prefill_ids, voice="Chelsie",
                               thinker_max=THINKER_MAX, talker_max=TALKER_MAX, thinker_eos=eos) for text in TEXTS]


class FrameSpy:
    """The frames the talker's steps complete, per request cache, in order (wrapping the component's run)."""

    def __init__(self, talker):
        self.talker, self.run, self.frames = talker, talker.run, {}
        self.caches = []  # held, so a finished request's cache id is never reused by the next request's
        talker.run = self

    def __call__(self, kind, inputs):
        outputs = self.run(kind, inputs)
        for inp, out in zip(inputs, outputs, strict=True):
            if getattr(out, "extra", None) is not None:
                if id(inp.cache) not in self.frames:
                    self.caches.append(inp.cache)
                self.frames.setdefault(id(inp.cache), []).append(out.extra)
        return outputs

    def close(self):
        del self.talker.run


def run_requests(program, texts, **engine_options):
    """The texts as requests of one engine, all at once; their results, frames, and the talker's batch sizes."""
    spy, batches = FrameSpy(program.components["talker"]), []
    try:
        engine = Engine(program, **engine_options)
        engine.subscribe(lambda e: batches.append(e.batch_size) if getattr(e, "kind", None) == "ar_token"
                         and e.loop == "talker_decode" else None)
        handles = [engine.submit(SpeakRequest(t, mode="chat", voice="Chelsie", request_id=f"r{i}"), collect=True)
                   for i, t in enumerate(texts)]
        for _ in engine.events():
            pass
        frames = list(spy.frames.values())  # caches in the order the requests' talkers made their first frame
    finally:
        spy.close()
    return [h.result() for h in handles], frames, batches


def assert_equals_generate(result, frames, ref, bound=STREAMED_BOUND):
    assert result.error is None, result.error
    assert result.tokens["thinker_decode"] == ref.thinker_tokens
    assert result.tokens["talker_decode"] == ref.talker_tokens
    assert frames == ref.frames
    assert result.samples.shape == ref.samples.shape
    assert float(np.max(np.abs(result.samples - ref.samples))) <= bound


def test_builder_writes_nothing_to_stderr(qwen3_build):
    assert qwen3_build.stderr == ""


def test_alone_equals_generate(program, references):
    (result,), (frames,), _ = run_requests(program, TEXTS[:1])
    ref = references[0]
    # a real utterance: the thinker stopped at its EOS, the talker at codec EOS, frames of varied codes
    assert ref.thinker_tokens[-1] in program.components["thinker"].eos_token_ids
    assert ref.talker_tokens[-1] in program.components["talker"].eos_token_ids and len(ref.frames) > 10
    assert all(len(set(group)) > 3 for group in zip(*ref.frames, strict=True))  # every codebook group varies
    assert result.samples.size > 0 and float(np.sqrt(np.mean(ref.samples ** 2))) > 0.01
    assert_equals_generate(result, frames, ref)


def test_one_whole_chunk_equals_generate(cards, qwen3_checkpoint, references):
    program = load(str(greedy_card(cards, "whole", chunk_codes=0)), settings={"model_path": str(qwen3_checkpoint)})
    (result,), (frames,), _ = run_requests(program, TEXTS[:1])
    assert_equals_generate(result, frames, references[0])


def test_batched_requests_equal_generate_alone(program, references):
    results, frames, batches = run_requests(program, TEXTS)
    assert max(batches) > 1  # the talker's frames (and their code predictor) really ran as batches
    assert len(frames) == len(TEXTS) and len({len(r.frames) for r in references}) > 1
    for result, ref in zip(results, references, strict=True):
        # batched forwards round differently from one row (~1e-7 in the logits), not enough to change a
        # greedy code; the waveform is each request's own frames, streamed
        assert_equals_generate(result, ref.frames if ref.frames in frames else None, ref)


def test_omni_speak_writes_generate_s_waveform(cards, qwen3_checkpoint, references, tmp_path):
    out = tmp_path / "out.wav"
    cmd = [sys.executable, "-m", "omni_cli.cli", "speak", "--card", str(greedy_card(cards, "cli")), "--model-path",
           str(qwen3_checkpoint), "--mode", "chat", "--voice", "Chelsie", "-q", "-o", str(out), PROMPT]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    with wave.open(str(out)) as wav:
        assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) == (24000, 1, 2)
        written = np.frombuffer(wav.readframes(wav.getnframes()), dtype="<i2").astype(np.float32) / 32767
    expected = references[0].samples
    assert written.shape == expected.shape and np.max(np.abs(written - expected)) <= 1.5 / 32767


def test_stream_and_barrier_hand_offs_give_the_same_outputs(program):
    spy = FrameSpy(program.components["talker"])
    try:
        runs = {mode: Engine(program).submit(SpeakRequest(PROMPT, mode="chat", handoff=mode), collect=True).result()
                for mode in ("barrier", "stream")}
    finally:
        spy.close()
    barrier, stream = runs["barrier"], runs["stream"]
    assert stream.tokens == barrier.tokens and len(stream.tokens["talker_decode"]) > 10
    assert stream.samples.size > 0 and np.array_equal(stream.samples, barrier.samples)
    first, second = spy.frames.values()
    assert first == second


def test_bfloat16_equals_generate_in_bfloat16(cards, qwen3_checkpoint):
    from transformers import Qwen3OmniMoeForConditionalGeneration

    from omni_cli.backends.hf.loading import quiet_transformers

    settings = {"model_path": str(qwen3_checkpoint), "dtype": "bfloat16"}
    program = load(str(greedy_card(cards, "bf16")), settings=settings)
    (result,), (frames,), _ = run_requests(program, TEXTS[:1])
    with quiet_transformers():
        model = Qwen3OmniMoeForConditionalGeneration.from_pretrained(str(qwen3_checkpoint), dtype=torch.bfloat16)
    thinker = program.components["thinker"]
    ref = generate_reference(model.eval(), thinker.encode(PROMPT, "chat").prefill_ids, voice="Chelsie",
                             thinker_max=THINKER_MAX, talker_max=TALKER_MAX, thinker_eos=min(thinker.eos_token_ids))
    assert thinker.module.dtype == torch.bfloat16 and len(ref.frames) > 10
    assert_equals_generate(result, frames, ref)
