"""Several utterances through one engine, each streamed into its own WAV file as its chunks arrive.

    python examples/speak_many.py out/ "Hello there." "Good morning." "How are you?"
    python examples/speak_many.py out/ "Hello." --card qwen2_5_omni --model-path ./tiny-omni

Every request's WorkUnits interleave (and batch) with the others'; each file is what the same
text spoken alone would give. Prints one line per request: when its first audio came, and how long
the whole utterance took, both from submission.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from omni_cli.api import load
from omni_cli.audio import open_audio_output
from omni_cli.engine import Engine
from omni_cli.spec import SpeakRequest
from omni_cli.spec.errors import SpecError
from omni_cli.spec.stream import AudioChunk, RequestDone


def main() -> None:
    try:
        speak_many()
    except (SpecError, OSError) as exc:  # a bad card or text, an output that cannot be written
        sys.exit(f"speak_many: {exc}")


def speak_many() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("texts", nargs="+")
    parser.add_argument("--card", default="qwen2_5_omni_toy")
    parser.add_argument("--model-path", help="checkpoint directory (hf cards)")
    args = parser.parse_args()

    settings = {"model_path": args.model_path} if args.model_path else None
    program = load(args.card, settings=settings)
    engine = Engine(program)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    writers = {}
    for i, text in enumerate(args.texts, start=1):
        handle = engine.submit(SpeakRequest(text, seed=i))
        writers[handle.request_id] = open_audio_output(args.out_dir / f"{i:04d}.wav", engine.sample_rate)

    for event in engine.events():  # drives the scheduler until every request is done
        if isinstance(event, AudioChunk):
            writers[event.request_id].write(event.samples)  # the file is valid after every chunk
        elif isinstance(event, RequestDone):
            writer = writers.pop(event.request_id)
            writer.close()
            m = event.metrics
            print(f"{event.request_id}: {event.status.value}, {m['audio_s']:.2f} s of audio, "
                  f"first audio after {m['ttfa_s'] * 1e3:.0f} ms, done after {m['latency_s'] * 1e3:.0f} ms "
                  f"-> {writer.target_name}")


if __name__ == "__main__":
    main()
