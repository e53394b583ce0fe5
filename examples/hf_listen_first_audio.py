"""From the end of a spoken question to the first audio of its answer: ours, fed at real time, beside generate.

    python -m omni_cli.backends.hf.tiny ./tiny-omni
    python examples/hf_listen_first_audio.py ./tiny-omni [--seconds 2 10 20] [--rounds 1]

Ours: the chat program on the shipped card, the question pushed into an AudioSource in 20 ms pieces at real time
while the engine encodes each n_window block and prefills it; timed from the question's last sample to the first
AudioChunk. generate: Whisper's features and `Qwen2_5OmniForConditionalGeneration.generate` on the whole clip,
started when the clip has ended; its first audio is its whole waveform, so it is timed to its return. Both run the
same checkpoint in this process, one after the other, for each length and round; the ratios are printed beside
the targets (>= 10x sooner at 10 s; growing < 1.5x from the shortest to the longest question). The last column is
a written turn's own time to first audio on the same engine: the floor of ours, what is left once nothing of the
question remains to encode or prefill.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

import numpy as np

RATE = 16000
PIECE_S = 0.02


def question(seconds: float) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    return (0.3 * np.sin(2 * np.pi * 220 * t * (1 + 0.1 * np.sin(t))) + 0.01 * np.random.default_rng(0)
            .standard_normal(t.size)).astype(np.float32)


def ours(program, clip: np.ndarray, max_tokens: int, placement: str | None = None) -> float:
    from omni_cli.audio.source import AudioSource
    from omni_cli.build import engine_on
    from omni_cli.spec import SpeakRequest
    from omni_cli.spec.stream import AudioChunk

    source, ended = AudioSource(RATE), {}
    step = int(PIECE_S * RATE)

    def speak() -> None:  # the speaker: real time, by the wall clock
        start = time.perf_counter()
        for i in range(0, len(clip), step):
            source.push(clip[i:i + step])
            time.sleep(max(0.0, start + (i + step) / RATE - time.perf_counter()))
        ended["at"] = time.perf_counter()
        source.end()

    engine = engine_on(program, placement)
    try:
        handle = engine.submit(SpeakRequest("", mode="chat", max_tokens=max_tokens, audio=source))
        threading.Thread(target=speak, daemon=True).start()
        first = None
        for event in handle.stream():
            if first is None and isinstance(event, AudioChunk) and event.num_samples:
                first = time.perf_counter()
                handle.cancel()
    finally:
        engine.close()
    return first - ended["at"]


def text_turn(program, max_tokens: int) -> float:
    """A written turn from its submit to its first audio: the part of ours no encoding ahead can remove."""
    from omni_cli.engine import Engine
    from omni_cli.spec import SpeakRequest
    from omni_cli.spec.stream import AudioChunk

    handle = Engine(program).submit(SpeakRequest("hello there", mode="chat", max_tokens=max_tokens))
    start = time.perf_counter()
    for event in handle.stream():
        if isinstance(event, AudioChunk) and event.num_samples:
            handle.cancel()
            return time.perf_counter() - start
    raise RuntimeError("the text turn made no audio")


def generate(program, features, clip: np.ndarray, max_tokens: int, talker_max: int = 64) -> float:
    import torch

    thinker, encoder = program.roles["thinker"], program.roles["audio_encoder"]
    start = time.perf_counter()  # the clip has just ended: everything from here is after the speaker stopped
    feats = features(clip, sampling_rate=RATE, return_attention_mask=True, return_tensors="pt")
    prompt = thinker.listen_prompt("", True)
    ids = prompt.before_ids + [prompt.audio_id] * encoder.tokens_for(len(clip)) + prompt.after_ids
    with torch.no_grad():
        thinker.model.generate(torch.tensor([ids]), input_features=feats["input_features"],
                               feature_attention_mask=feats["attention_mask"], speaker="Chelsie",
                               thinker_max_new_tokens=max_tokens, talker_max_new_tokens=talker_max)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint")
    parser.add_argument("--seconds", type=float, nargs="+", default=[2.0, 10.0, 20.0])
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--max-tokens", type=int, default=8, help="the reply's thinker tokens (both sides)")
    parser.add_argument("--talker-max-tokens", type=int, default=64, help="generate's talker_max_new_tokens")
    parser.add_argument("--placement", default=None, help="ours: where components run (e.g. thread)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a card value for ours, as `omni --set` takes it (e.g. loops.vocoder.first_chunk_codes=[4])")
    args = parser.parse_args()

    import yaml
    from transformers import WhisperFeatureExtractor

    from omni_cli.api import load

    overrides = {key: yaml.safe_load(value) for key, value in (kv.split("=", 1) for kv in args.set)}
    program = load("qwen2_5_omni", "chat", settings={"model_path": args.checkpoint}, overrides=overrides)
    features = WhisperFeatureExtractor.from_pretrained(args.checkpoint)
    ours(program, question(1.0), args.max_tokens, args.placement)  # warm-up: first shapes, compiled files loaded
    generate(program, features, question(1.0), args.max_tokens, args.talker_max_tokens)
    rows = {}
    for _ in range(args.rounds):
        for seconds in args.seconds:
            clip = question(seconds)
            mine = ours(program, clip, args.max_tokens, args.placement)
            theirs = generate(program, features, clip, args.max_tokens, args.talker_max_tokens)
            rows.setdefault(seconds, []).append((mine, theirs, text_turn(program, args.max_tokens)))
    print(f"{'question':>9} {'ours: end -> first audio':>25} {'generate (whole clip)':>22} {'sooner':>8} "
          f"{'a text turn to first audio':>27}")
    medians = {}
    for seconds, runs in rows.items():
        mine, theirs, text = (statistics.median(r[i] for r in runs) for i in range(3))
        medians[seconds] = mine
        print(f"{seconds:>8.1f}s {mine * 1000:>22.0f} ms {theirs * 1000:>19.0f} ms {theirs / mine:>7.1f}x "
              f"{text * 1000:>24.0f} ms")
    shortest, longest = min(medians), max(medians)
    near = min(rows, key=lambda s: abs(s - 10.0))  # the 10 s question, or the length nearest it
    sooner = statistics.median(r[1] for r in rows[near]) / medians[near]
    print(f"growth {shortest:g} s -> {longest:g} s: {medians[longest] / medians[shortest]:.2f}x (target < 1.5x); "
          f"sooner at {near:g} s: {sooner:.1f}x (target >= 10x at 10 s)")


if __name__ == "__main__":
    main()
