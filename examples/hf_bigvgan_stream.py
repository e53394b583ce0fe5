"""BigVGAN as a stream (`bigvgan_seam: stream`) against the shipped chunked decode and one whole decode.

    python -m omni_cli.backends.hf.tiny ./tiny-omni
    python examples/hf_bigvgan_stream.py ./tiny-omni [--rounds 3] [--codes 200] [--requests 4]
    python examples/hf_bigvgan_stream.py --released-width [--rounds 2] [--codes 100]

BigVGAN alone: one seeded mel of `--codes` codes (2 mel frames each) cut into the shipped card's chunks, decoded
four ways in turn each round (the order rotating): `chunked`, as `bigvgan_seam: lookahead` calls it (each
chunk with `bigvgan_overlap_frames / 2` frames before it and as many after it); `stream`, each chunk pushed
once into the carried state, the last flushing (`bigvgan_stream_fill: false`); `filled`, as the card runs it
(the first chunks, within the stream's look-ahead, made as `chunked` makes them, then the stream from frame 0);
`whole`, one forward. Per way: mel frames decoded over the
utterance's own, CPU and wall seconds per utterance (medians over the rounds), their ratio to the chunked
decode's, the samples' SNR against the whole decode, and the chunk whose call first returns samples.

Then the engine: `--requests` greedy chat utterances of `--codes` codes each, the shipped card and the card with
`bigvgan_seam: stream`, alternated each round: TTFA, latency and stall max (medians over the rounds), and the
mel frames BigVGAN read per utterance over its own (read from each request's vocoder state).

`--released-width`: BigVGAN alone at Qwen2.5-Omni's released shape (1536 channels, random weights, eager
activations), no checkpoint needed, no engine part.
"""

from __future__ import annotations

import argparse
import statistics
import time


def bigvgan_alone(vocoder, sizes: list[int], codes: int, rounds: int) -> None:
    import numpy as np
    import torch

    from omni_cli.backends.hf.bigvgan_stream import look_ahead

    frames = codes * 2
    mel = torch.randn(1, vocoder.mel_dim, frames, generator=torch.Generator().manual_seed(0)) * 2 - 5
    bounds, start = [], 0
    for size in sizes:
        if start >= frames:
            break
        bounds.append((start, min(frames, start + 2 * size)))
        start = bounds[-1][1]
    half = vocoder.overlap_frames // 2

    def chunked() -> tuple[list, int]:
        out, read = [], 0
        for a, b in bounds:
            lo, hi = max(0, a - half), min(frames, b + half)
            wave = vocoder.vocode(mel[:, :, lo:hi]).reshape(-1)
            out.append(wave[(a - lo) * vocoder.hop:(b - lo) * vocoder.hop].numpy())
            read += hi - lo
        return out, read

    def stream() -> tuple[list, int]:
        slots, out = vocoder.stream.start(), []
        for a, b in bounds:
            wave, slots = vocoder.stream.push(slots, mel[:, :, a:b], b == frames)
            out.append(wave[0].numpy())
        return out, frames

    def filled() -> tuple[list, int]:  # as the card runs it: chunks within the look-ahead made as chunked does
        delay = look_ahead(vocoder.stream)
        slots, out, read, sent, pushed, made = vocoder.stream.start(), [], 0, 0, 0, 0
        for _, b in bounds:
            if pushed == 0 and b < frames and b - delay <= sent:
                lo, hi = max(0, sent - half), min(frames, b + half)
                wave = vocoder.vocode(mel[:, :, lo:hi]).reshape(-1)
                out.append(wave[(sent - lo) * vocoder.hop:(b - lo) * vocoder.hop].numpy())
                read, sent = read + hi - lo, b
                continue
            wave, slots = vocoder.stream.push(slots, mel[:, :, pushed:b], b == frames)
            read, pushed = read + b - pushed, b
            skip = max(0, sent * vocoder.hop - made)
            made += wave.shape[-1]
            out.append(wave[0, skip:].numpy())
        return out, read

    def whole() -> tuple[list, int]:
        return [vocoder.vocode(mel).reshape(-1).numpy()], frames

    ways = {"chunked": chunked, "stream": stream, "filled": filled, "whole": whole}
    cpu: dict[str, list[float]] = {w: [] for w in ways}
    wall: dict[str, list[float]] = {w: [] for w in ways}
    made: dict[str, tuple] = {}
    with torch.no_grad():
        for way in ways.values():
            way()  # each call shape's first run sets it up
        for round_ in range(rounds):
            names = list(ways)[round_ % len(ways):] + list(ways)[:round_ % len(ways)]
            for name in names:
                c, w = time.process_time(), time.perf_counter()
                made[name] = ways[name]()
                cpu[name].append(time.process_time() - c)
                wall[name].append(time.perf_counter() - w)
    reference = made["whole"][0][0]
    print(f"BigVGAN alone: {codes} codes ({frames} mel frames), chunks of {[b - a for a, b in bounds]} frames, "
          f"{rounds} rounds, the order rotating")
    base_cpu, base_wall = statistics.median(cpu["chunked"]), statistics.median(wall["chunked"])
    for name in ways:
        pieces, read = made[name]
        samples = np.concatenate(pieces)
        snr = 10 * np.log10(np.sum(reference ** 2) / max(np.sum((reference - samples) ** 2), 1e-30))
        first = next(i for i, p in enumerate(pieces) if len(p))
        print(f"  {name:<8} frames decoded {read / frames:.3f}x  cpu {statistics.median(cpu[name]):.3f} s "
              f"({statistics.median(cpu[name]) / base_cpu:.2f}x chunked)  wall {statistics.median(wall[name]):.3f} s "
              f"({statistics.median(wall[name]) / base_wall:.2f}x)  SNR vs whole {snr:.1f} dB  first samples: call {first}")


def engine(checkpoint: str, codes: int, requests: int, rounds: int) -> None:
    from dataclasses import replace

    from omni_cli.api import load
    from omni_cli.bench import Workload, greedy_variant, run_workload

    caps = {"thinker": 12, "talker": codes + 1}
    programs = {}
    for name, seam in (("card", None), ("stream", "stream")):
        overrides = {"components.vocoder.params.bigvgan_seam": seam} if seam else None
        programs[name] = greedy_variant(load("qwen2_5_omni", settings={"model_path": checkpoint}, overrides=overrides),
                                        caps, talker_min=codes)
    read: dict[str, list[float]] = {name: [] for name in programs}
    for name, program in programs.items():
        vocoder = program.roles["vocoder"]
        run = vocoder.run

        def counted(kind, inputs, run=run, name=name, vocoder=vocoder):
            outs = run(kind, inputs)
            for inp in inputs:
                if inp.state.is_finished:
                    read[name].append(inp.state.bigvgan_frames / (len(inp.codes) * vocoder.repeats))
            return outs

        vocoder.run = counted
    work = Workload(num_requests=requests, text_chars=60, mode="chat")
    for program in programs.values():
        run_workload(program, replace(work, num_requests=1))  # warm-up
    results: dict[str, list[dict]] = {name: [] for name in programs}
    for round_ in range(rounds):
        for name in (list(programs) if round_ % 2 == 0 else list(programs)[::-1]):
            results[name].append(run_workload(programs[name], work, name).summary())
    print(f"engine: {requests} greedy chat utterances of {codes} codes a round, {rounds} rounds alternated")
    for name, runs in results.items():
        def med(key, runs=runs):
            return statistics.median(r[key] for r in runs)
        print(f"  {name:<7} TTFA {med('ttfa_p50_s') * 1e3:6.0f} ms  latency {med('latency_p50_s'):.3f} s  stall max "
              f"{med('stall_max_s') * 1e3:4.0f} ms  BigVGAN frames read / utterance's {statistics.median(read[name]):.3f}x")


def released_width():
    """A stand-in for the vocoder: the released BigVGAN shape, its lean forward and its stream."""
    from types import SimpleNamespace

    import torch
    from transformers.models.qwen2_5_omni.configuration_qwen2_5_omni import Qwen2_5OmniBigVGANConfig
    from transformers.models.qwen2_5_omni.modeling_qwen2_5_omni import Qwen2_5OmniToken2WavBigVGANModel

    from omni_cli.backends.hf.bigvgan import LeanBigVGAN
    from omni_cli.backends.hf.bigvgan_stream import BigVGANStream

    torch.manual_seed(0)
    module = Qwen2_5OmniToken2WavBigVGANModel(Qwen2_5OmniBigVGANConfig()).eval()
    lean = LeanBigVGAN(module)
    return SimpleNamespace(mel_dim=module.config.mel_dim, overlap_frames=32, hop=240, vocode=lean,
                           stream=BigVGANStream(lean))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", nargs="?")
    parser.add_argument("--released-width", action="store_true")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--codes", type=int, default=200)
    parser.add_argument("--requests", type=int, default=4)
    parser.add_argument("--skip-engine", action="store_true")
    args = parser.parse_args()

    import torch

    from omni_cli.api import load
    from omni_cli.backends.hf import build

    torch.set_num_threads(1)
    if args.released_width:
        bigvgan_alone(released_width(), [12, 16, 24, 48, 96], args.codes, args.rounds)
        return
    if not args.checkpoint:
        parser.error("a checkpoint directory, or --released-width")
    program = load("qwen2_5_omni", settings={"model_path": args.checkpoint})
    card = program.card
    loop = card.loop_for_role("vocoder")
    params = dict(card.components["vocoder"].params, bigvgan_seam="stream")
    vocoder = build(None, {"vocoder": params}, {"model_path": args.checkpoint})["vocoder"]
    bigvgan_alone(vocoder, [loop.chunk_size(i) for i in range(64)], args.codes, args.rounds)
    if not args.skip_engine:
        engine(args.checkpoint, args.codes, args.requests, args.rounds)


if __name__ == "__main__":
    main()
