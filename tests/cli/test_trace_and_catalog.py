"""`--trace` files, `omni trace` (run, show, export --chrome), `omni cards` and `omni programs`."""

from __future__ import annotations

import json
from collections import defaultdict

from cli_helpers import stderr_lines

WORK_UNIT_KEYS = {"request_id", "loop", "kind", "step", "batch_size", "start_s", "dur_s"}
LOOPS = ["thinker_decode", "talker_decode", "vocoder"]


def make_trace(omni, home, lines=("Héllo wörld, ça va?", "Two", "Three and more")):
    result = omni("speak", "-", "-o", "out/", "-q", "--trace", "t.jsonl", input="\n".join(lines) + "\n")
    assert result.exit_code == 0, result.stderr
    return home / "t.jsonl"


def test_trace_file_schema(omni, home):
    path = make_trace(omni, home)
    text = path.read_text(encoding="utf-8")
    assert "Héllo wörld, ça va?" in text  # ensure_ascii=False
    records = [json.loads(line) for line in text.splitlines()]  # every line is JSON
    run = records[0]
    assert run["event"] == "run"
    assert {"card", "program", "settings", "version", "started_at"} <= set(run)
    assert run["card"] == "qwen2_5_omni_toy" and run["program"] == "speak" and run["loops"] == LOOPS
    units = [r for r in records if r["event"] == "work_unit"]
    assert units and all(WORK_UNIT_KEYS <= set(u) for u in units)
    assert {u["loop"] for u in units} == set(LOOPS) and max(u["batch_size"] for u in units) > 1
    phases = defaultdict(list)
    for r in records:
        if r["event"] == "request":
            phases[r["request_id"]].append(r["phase"])
    assert len(phases) == 3
    assert all(p[0] == "submitted" and p[-1] == "finished" and "first_audio" in p for p in phases.values())
    utterances = [r for r in records if r["event"] == "utterance"]
    assert [u["path"] for u in utterances] == ["out/0001.wav", "out/0002.wav", "out/0003.wav"]


def test_trace_show_draws_lanes_and_summary(omni, home):
    result = omni("trace", "show", make_trace(omni, home))
    assert result.exit_code == 0 and result.stderr == ""
    out = result.stdout
    lanes = [line for line in out.splitlines() if line.split(" ")[0] in LOOPS and set(line[16:]) & set("▒█▇")]
    assert [line.split(" ")[0] for line in lanes] == LOOPS
    for needle in ["first audio", "ar_prefill", "audio_chunk", "time to first audio", "real-time factor", "3 (finished)"]:
        assert needle in out, needle


def test_trace_text_runs_and_draws(omni, home):
    result = omni("trace", "Hello there", "--seed", "3")
    assert result.exit_code == 0, result.stderr
    assert "talker_decode" in result.stdout and "time to first audio" in result.stdout
    assert "Hello there" not in result.stdout  # stdout is the timeline's, not the text's


def test_chrome_export_has_one_track_per_loop_and_no_overlaps(omni, home):
    path = make_trace(omni, home)
    assert omni("trace", "export", path, "--chrome", "-o", "t.json").exit_code == 0
    document = json.loads((home / "t.json").read_text(encoding="utf-8"))
    events = document["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name" and e["pid"] == 1}
    assert sorted(names.values()) == sorted(LOOPS)
    tracks = defaultdict(list)
    for e in events:
        if e["ph"] == "X":
            tracks[(e["pid"], e["tid"])].append(e)
    loop_tracks = {names[tid]: evs for (pid, tid), evs in tracks.items() if pid == 1}
    assert set(loop_tracks) == set(LOOPS)
    units = [json.loads(line) for line in path.read_text().splitlines()]
    assert sum(len(v) for v in loop_tracks.values()) == sum(1 for u in units if u["event"] == "work_unit")
    for track in tracks.values():  # complete events on one track never overlap
        track.sort(key=lambda e: e["ts"])
        for a, b in zip(track, track[1:], strict=False):
            assert a["ts"] + a["dur"] <= b["ts"] + 1e-6, (a, b)
    assert omni("trace", "export", path, "--chrome", "-o", "t.json").exit_code == 2  # exists: needs --force


def test_trace_show_rejects_a_file_that_is_not_a_trace(omni, home):
    (home / "bad.jsonl").write_text('{"event": "run"}\nnot json\n')
    result = omni("trace", "show", "bad.jsonl")
    assert result.exit_code == 2 and stderr_lines(result.stderr) == ["omni: error: bad.jsonl:2: not JSON (Expecting value)"]


def test_trace_show_reads_a_trace_cut_off_mid_line(omni, home):
    text = make_trace(omni, home).read_text()
    (home / "cut.jsonl").write_text(text[: len(text) // 2])
    assert omni("trace", "show", "cut.jsonl").exit_code == 0


def test_cards_list_show_and_validate(omni, home):
    listed = omni("cards", "list")
    assert listed.exit_code == 0 and "qwen2_5_omni_toy" in listed.stdout and "numpy" in listed.stdout
    shown = omni("cards", "show", "qwen2_5_omni_toy")
    assert shown.exit_code == 0 and "voices: alto, tenor" in shown.stdout
    valid = omni("cards", "validate", "qwen2_5_omni_toy")
    assert valid.exit_code == 0 and valid.stdout.startswith("ok ")


def test_cards_validate_prints_every_issue_with_file_and_line(omni, home):
    from omni_cli.program import resolve

    text = resolve("cards", "qwen2_5_omni_toy").read_text()
    broken = text.replace("sample_rate: 24000", "sample_rate: fast").replace("chunk_codes: 10", "chunk_codez: 10")
    (home / "broken.yaml").write_text(broken)
    result = omni("cards", "validate", "broken.yaml")
    assert result.exit_code == 2
    lines = stderr_lines(result.stderr)
    issues, summary = lines[:-1], lines[-1]
    assert len(issues) >= 2 and all(line.startswith("broken.yaml:") for line in issues)
    assert any("sample_rate" in line for line in issues) and any("chunk_codez" in line for line in issues)
    assert summary == "omni: error: 1 of 1 card invalid"
    speak = omni("speak", "x", "--card", "broken.yaml")  # the same card in a run: one line
    assert speak.exit_code == 2 and len(stderr_lines(speak.stderr)) == 1


def test_programs_list_and_show(omni):
    assert "speak" in omni("programs", "list").stdout
    shown = omni("programs", "show", "speak").stdout
    assert "loop talker_decode" in shown and "[stream]" in shown


def test_every_help_has_examples(omni):
    for args in [[], ["speak"], ["trace"], ["trace", "run"], ["trace", "show"], ["trace", "export"], ["cards"],
                 ["cards", "validate"], ["programs"]]:
        result = omni(*args, "--help")
        assert result.exit_code == 0 and "omni " in result.stdout and result.stderr == "", args
    speak = omni("speak", "--help").stdout
    assert "aplay -f S16_LE -r 22050 -c 1" in speak and "sox -t raw -r 22050 -e signed -b 16 -c 1 - out.wav" in speak
    assert "24000 Hz for the Qwen2.5-Omni cards" in speak  # raw PCM is at the card's rate
    assert "--force" in speak and "0001.wav" in speak and "141" in speak


def test_every_shipped_card_goes_by_its_file_name_in_lists_shows_and_traces(omni, home):
    """Issue 18: the toy card's file is qwen2_5_omni_toy but lists and traces said qwen2_5_omni-toy."""
    from omni_cli.program import list_files

    stems = sorted(path.stem for path in list_files("cards"))
    listed = omni("cards", "list").stdout.splitlines()[1:]
    assert sorted(row.split()[0] for row in listed) == stems
    for stem in stems:
        assert omni("cards", "show", stem).stdout.split()[0] == stem
    run = json.loads(make_trace(omni, home, ("One",)).read_text(encoding="utf-8").splitlines()[0])
    assert run["card"] == "qwen2_5_omni_toy" == run["card_arg"]
