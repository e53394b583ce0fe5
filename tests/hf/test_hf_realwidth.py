"""The Qwen2.5-Omni-3B shape (every width as released, depth cut): released format, `omni speak`, parity
with generate, stream = barrier, batched = alone, bf16, and (where a GPU is) CUDA."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import wave
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("yaml")

import hf_cards  # noqa: E402

from omni_cli.api import load  # noqa: E402
from omni_cli.backends.hf import realwidth_config as rw  # noqa: E402
from omni_cli.backends.hf.realwidth import ECHO_TEXT, PROMPT  # noqa: E402
from omni_cli.backends.hf.reference import GenerateReference  # noqa: E402
from omni_cli.engine import Engine  # noqa: E402
from omni_cli.spec.request import SpeakRequest  # noqa: E402
from omni_cli.spec.stream import AudioChunk  # noqa: E402

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
THINKER_MAX, TALKER_MAX = 12, 60
# ~14 codes: several vocoder chunks of 6 (BigVGAN at 1536 channels is slow), each with 2 codes of look-ahead,
# so the chunks before the last run before the codes are final (the last takes a rest shorter than that)
LONG_ECHO = "hello there, you"
NO_GPU = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine")


def greedy_card(directory: Path, name: str, **changes) -> Path:
    return hf_cards.greedy_card(directory, name, **{"thinker_max": THINKER_MAX, "talker_max": TALKER_MAX, **changes})


@pytest.fixture(scope="module")
def cards(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("realwidth_cards")


@pytest.fixture(scope="module")
def program(cards, realwidth_checkpoint):
    return load(str(greedy_card(cards, "whole")), settings={"model_path": str(realwidth_checkpoint)})


def run(program, request: SpeakRequest):
    return Engine(program).submit(request, collect=True).result()


def ended_by_itself(result, program) -> bool:
    talker = result.tokens["talker_decode"]
    return talker[-1] in program.components["talker"].eos_token_ids and len(talker) < TALKER_MAX


def test_checkpoint_has_the_released_format(realwidth_checkpoint):
    from safetensors import safe_open
    from transformers import AutoTokenizer

    index = json.loads((realwidth_checkpoint / "model.safetensors.index.json").read_text())
    shards = sorted(set(index["weight_map"].values()))
    assert len(shards) >= 2 and all((realwidth_checkpoint / s).is_file() for s in shards)
    with safe_open(str(realwidth_checkpoint / shards[0]), "pt") as f:
        assert {f.get_slice(k).get_dtype() for k in f.keys()} == {"BF16"}
    config = json.loads((realwidth_checkpoint / "config.json").read_text())
    text = config["thinker_config"]["text_config"]
    assert (text["vocab_size"], text["hidden_size"], text["num_attention_heads"], text["num_key_value_heads"]) == (
        151936, 2048, 16, 2)
    assert text["rope_parameters"]["mrope_section"] == [16, 24, 24]
    talker = config["talker_config"]
    assert (talker["vocab_size"], talker["embedding_size"], talker["hidden_size"]) == (8448, 2048, 896)
    t2w = config["token2wav_config"]
    assert (t2w["dit_config"]["hidden_size"], t2w["bigvgan_config"]["upsample_initial_channel"]) == (1024, 1536)
    tokenizer = AutoTokenizer.from_pretrained(str(realwidth_checkpoint))
    for token_id, token in rw.SPECIAL_TOKENS.items():
        assert tokenizer.convert_tokens_to_ids(token) == token_id
    spk = torch.load(realwidth_checkpoint / "spk_dict.pt", weights_only=True)
    assert {name: entry["bos_token"] for name, entry in spk.items()} == rw.VOICES
    assert all(e["cond"].shape == (1, 192) and e["ref_mel"].shape[2] == 80 for e in spk.values())


@pytest.mark.parametrize("mode,text", [("echo", ECHO_TEXT), ("chat", PROMPT)])
def test_greedy_run_equals_generate(program, realwidth_checkpoint, mode, text):
    thinker = program.components["thinker"]
    ours = run(program, SpeakRequest(text, mode=mode, voice="Chelsie"))
    prompt = thinker.encode(text, mode)
    forced = None if prompt.forced_ids is None else [*prompt.forced_ids, min(thinker.eos_token_ids)]
    reference = GenerateReference(str(realwidth_checkpoint), sorted(program.components["talker"].eos_token_ids),
                                  model=thinker.model)
    ref = reference.run(list(prompt.prefill_ids), voice="Chelsie", seed=0, thinker_max=THINKER_MAX,
                        talker_max=TALKER_MAX, forced=forced)
    assert ours.tokens["thinker_decode"] == ref.thinker_tokens
    assert ours.tokens["talker_decode"] == ref.talker_tokens
    assert ended_by_itself(ours, program)
    assert ours.samples.size == 480 * (len(ref.talker_tokens) - 1) > 0
    assert torch.equal(torch.from_numpy(ours.samples), torch.from_numpy(ref.samples))


def test_stream_equals_barrier_over_several_chunks(cards, realwidth_checkpoint):
    chunked = load(str(greedy_card(cards, "chunked", chunk_codes=6, first_chunk_codes=3, thinker_max=40,
                                     vocoder={"bigvgan_overlap_frames": 8, "chunk_future_frames": 4})),
                   settings={"model_path": str(realwidth_checkpoint)})
    engine = Engine(chunked)
    handle = engine.submit(SpeakRequest(LONG_ECHO, mode="echo", handoff="stream"), collect=True)
    chunks = [e for e in engine.events() if isinstance(e, AudioChunk) and e.num_samples]
    stream = handle.result()
    barrier = run(chunked, SpeakRequest(LONG_ECHO, mode="echo", handoff="barrier"))
    assert len(chunks) >= 3 and ended_by_itself(stream, chunked)
    assert stream.tokens == barrier.tokens
    assert np.array_equal(stream.samples, barrier.samples) and stream.samples.size > 0


def test_two_requests_batched_equal_alone(program):
    # equal token counts: the talker's decode steps and the whole-utterance DiT windows really batch
    requests = [SpeakRequest("hi there", mode="echo", request_id="a"),
                SpeakRequest("ih there", mode="echo", request_id="b", seed=3)]
    alone = [run(program, r) for r in requests]
    engine = Engine(program)
    sizes: dict[str, int] = {}
    engine.subscribe(lambda e: sizes.__setitem__(e.loop, max(sizes.get(e.loop, 0), e.batch_size))
                     if getattr(e, "batch_size", None) else None)
    handles = [engine.submit(r, collect=True) for r in requests]
    for _ in engine.events():
        pass
    assert sizes["talker_decode"] == 2 and sizes["vocoder"] == 2
    for a, t in zip(alone, [h.result() for h in handles], strict=True):
        assert a.tokens == t.tokens and a.samples.size == t.samples.size > 0
        assert float(np.max(np.abs(a.samples - t.samples))) <= program.card.batching.sample_tolerance


@pytest.mark.parametrize("mode,args", [("echo", [ECHO_TEXT]), ("chat", ["--mode", "chat", "--voice", "Ethan", PROMPT])])
def test_omni_speak_with_the_shipped_card(realwidth_checkpoint, tmp_path, mode, args):
    out = tmp_path / f"{mode}.wav"
    cmd = [sys.executable, "-m", "omni_cli.cli", "speak", "--card", "qwen2_5_omni", "--model-path",
           str(realwidth_checkpoint), "-q", "-o", str(out), *args]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr
    with wave.open(str(out)) as wav:
        # the sampled talker ends a step or two after the text: some codes, 480 samples each
        assert wav.getframerate() == 24000 and wav.getnframes() > 0 and wav.getnframes() % 480 == 0


def test_bfloat16_runs_thinker_and_talker_in_bf16_and_token2wav_in_float32(cards, realwidth_checkpoint, program):
    bf16 = load(str(greedy_card(cards, "whole_bf16")), settings={"model_path": str(realwidth_checkpoint),
                                                                  "dtype": "bfloat16"})
    parts = bf16.components
    assert {p.dtype for p in parts["thinker"].module.parameters()} == {torch.bfloat16}
    assert {p.dtype for p in parts["talker"].module.parameters()} == {torch.bfloat16}
    assert {p.dtype for p in parts["vocoder"].module.parameters()} == {torch.float32}
    for mode, text in (("echo", ECHO_TEXT), ("chat", PROMPT)):
        ours = run(bf16, SpeakRequest(text, mode=mode))
        assert ended_by_itself(ours, bf16) and ours.samples.size > 0 and np.isfinite(ours.samples).all()
        if mode == "echo":  # forced: the same reply as in float32 (the codes may differ: README)
            assert ours.tokens["thinker_decode"] == run(program, SpeakRequest(text, mode=mode)).tokens["thinker_decode"]


@NO_GPU
def test_cuda_greedy_tokens_equal_generate(cards, realwidth_checkpoint):
    on_gpu = load(str(greedy_card(cards, "whole_cuda")), settings={"model_path": str(realwidth_checkpoint),
                                                                    "device": "cuda"})
    thinker = on_gpu.components["thinker"]
    ours = run(on_gpu, SpeakRequest(ECHO_TEXT, mode="echo"))
    prompt = thinker.encode(ECHO_TEXT, "echo")
    reference = GenerateReference(str(realwidth_checkpoint), sorted(on_gpu.components["talker"].eos_token_ids),
                                  model=thinker.model)
    ref = reference.run(list(prompt.prefill_ids), voice="Chelsie", seed=0, thinker_max=THINKER_MAX,
                        talker_max=TALKER_MAX, forced=[*prompt.forced_ids, min(thinker.eos_token_ids)])
    # the DiT noise comes from the CPU generator on every device, generate's from CUDA's: codes only
    assert ours.tokens["thinker_decode"] == ref.thinker_tokens
    assert ours.tokens["talker_decode"] == ref.talker_tokens
    assert ours.samples.size == 480 * (len(ref.talker_tokens) - 1) > 0
