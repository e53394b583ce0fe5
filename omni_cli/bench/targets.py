"""The targets table: each goal as (what, measured, goal, met), from one run's figures."""

from __future__ import annotations

from typing import Any

from .workload import BenchResult


def _by_label(results: list[BenchResult]) -> dict[str, dict[str, Any]]:
    return {r.label: r.summary() for r in results}


def _row(target: str, value: float | None, goal: str, met: bool | None, fmt: str) -> dict[str, Any]:
    return {"target": target, "measured": "-" if value is None else fmt.format(value), "value": value,
            "goal": goal, "met": None if met is None else bool(met)}


def targets(results: list[BenchResult], reference: tuple[list[BenchResult], dict[str, Any]] | None,
            timings: dict[str, float]) -> list[dict[str, Any]]:
    """Each target (the toy card's suite, the `generate` reference, start-up) as (what, measured, goal, met),
    computed from this run's figures."""
    s = _by_label(results)
    rows: list[dict[str, Any]] = []

    def add(target: str, value: float | None, goal: str, met: bool | None, fmt: str) -> None:
        rows.append(_row(target, value, goal, met, fmt))

    if s:  # the standard suite ran
        growth = s["stream-10x"]["ttfa_p50_s"] / s["stream"]["ttfa_p50_s"]
        add("TTFA growth, 10x longer text (stream)", growth, "< 1.5x", growth < 1.5, "{:.2f}x")
        gain = s["barrier"]["ttfa_p50_s"] / s["stream"]["ttfa_p50_s"]
        codes = s["barrier"]["audio_s_total"] / s["barrier"]["workload_num_requests"] * 50
        add(f"TTFA barrier / stream (~{codes:.0f}-code utterances)", gain, ">= 5x", gain >= 5, "{:.1f}x")
        conc = [k for k in s if k.startswith("concurrency-") and k != "concurrency-1"]
        rows += engine_targets(s, "concurrency-1", conc)
        if conc:
            scale = s[conc[0]]["audio_s_per_wall_s"] / s["concurrency-1"]["audio_s_per_wall_s"]
            add(f"audio s per wall s, {conc[0]} / concurrency-1", scale, "(no target)", None, "{:.2f}x")
    if reference:
        rows += reference_targets(*reference)
    if "speak_s" in timings:
        add("omni speak, process start to file closed", timings["speak_s"], "< 1 s", timings["speak_s"] < 1.0, "{:.2f} s")
        add("omni --help", timings["help_s"], "< 0.3 s", timings["help_s"] < 0.3, "{:.2f} s")
    return rows


def engine_targets(s: dict[str, dict[str, Any]], alone: str, together: list[str]) -> list[dict[str, Any]]:
    """The targets for the engine itself: its own time as a share of the wall time (a share, since
    machines differ) and TTFA over the first chunk's critical path, alone and at concurrency N."""
    rows = []
    for label, share_goal, path_goal in [(alone, 0.05, 1.2)] + [(c, 0.03, 2.0) for c in together]:
        share = s[label]["overhead_share"]
        rows.append(_row(f"engine overhead, share of wall time per WorkUnit ({label})", share, f"< {share_goal:.0%}",
                         None if share is None else share < share_goal, "{:.1%}"))
        ratio = s[label]["ttfa_over_critical_p50"]
        rows.append(_row(f"TTFA / first chunk's critical path, p50 ({label})", ratio, f"<= {path_goal}x",
                         None if ratio is None else ratio <= path_goal, "{:.2f}x"))
    return rows


def reference_targets(results: list[BenchResult], outputs: dict[str, Any]) -> list[dict[str, Any]]:
    """The targets of ours against `generate` one request after another, from reference_suite's run."""
    r = _by_label(results)
    many = next((k for k in r if k.startswith("ours-") and k != "ours-1"), None)  # none with --concurrency 1
    one, ref = r["ours-1"], r["generate"]
    rows = []
    ttfa = ref["ttfa_p50_s"] / one["ttfa_p50_s"]
    rows.append(_row("TTFA p50, generate / ours (chat, greedy, concurrency 1)", ttfa, ">= 10x", ttfa >= 10,
                     "{:.1f}x"))
    latency = one["latency_p50_s"] / ref["latency_p50_s"]
    rows.append(_row("latency p50, ours / generate (concurrency 1)", latency, "<= 1.05x", latency <= 1.05, "{:.2f}x"))
    rows.append(_row("stall max, player starting at first audio (ours-1)", one["stall_max_s"], "0 s",
                     one["stall_max_s"] <= 0, "{:.3f} s"))
    if many is not None:
        # at concurrency N a player can only be served without a gap once audio is made faster than it plays
        rtf = r[many]["rtf_p50"]
        stall, when = r[many]["stall_max_s"], "0 s once RTF p50 < 1" + ("" if rtf is None else f" (here {rtf:.2f})")
        rows.append(_row(f"stall max, player starting at first audio ({many})", stall, when,
                         None if rtf is None or rtf >= 1 else stall <= 0, "{:.3f} s"))
        # against generate on the cores ours-N used (suites.reference_suite: a second run where those are more)
        wide = outputs.get("generate_wide_threads")
        against = r[f"generate, {wide} threads"] if wide else ref
        thr = r[many]["audio_s_per_wall_s"] / against["audio_s_per_wall_s"]
        rows.append(_row(f"audio s per wall s, {many} / generate one by one" + (f" ({wide} threads)" if wide else ""),
                         thr, ">= 3x", thr >= 3, "{:.1f}x"))
    n = outputs["requests"]
    labels = ("ours-1",) if many is None else ("ours-1", many)
    for label in labels:
        same = outputs[label]["same_tokens"]
        rows.append(_row(f"requests whose tokens and codes equal generate's ({label})", same, f"{n} of {n}",
                         same == n, "{:d}"))
    if "load" in outputs:  # each side's fresh load in this process (loads.py: what it includes)
        load = outputs["load"]
        rows.append(_row("load time, ours / generate (torch imported, files cached)",
                         load["ours"]["s"] / load["generate"]["s"], "(reported)", None, "{:.2f}x"))
    for label in labels:
        rows.append(_row(f"waveform vs generate, worst request ({label}, chunked token2wav)",
                         outputs[label]["min_snr_db"], "(reported)", None, "{:.0f} dB SNR"))
    # the engine's own targets on a real model: the same engine, components that cost what models cost
    return rows + engine_targets(r, "ours-1", [] if many is None else [many])


def across_rounds(rounds: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """One row per target from several rounds' rows (the same targets in the same order, each judged in its
    own round): measured is the median round's figure, then the lowest and highest, as each round printed
    them ("9.8x (8.1x to 10.4x)"; with an even count, the lower of the middle two, so it is a figure some
    round measured); `met` is True only where every round that judged it met it, with `met_rounds` and
    `judged_rounds` counting them (both 0 where no round judged it, `met` None)."""
    rows = []
    for same in zip(*rounds, strict=True):
        if len({row["target"] for row in same}) != 1:
            raise ValueError(f"rounds disagree on their targets: {sorted({row['target'] for row in same})}")
        measured = sorted((row for row in same if row["value"] is not None), key=lambda row: row["value"])
        judged = [row["met"] for row in same if row["met"] is not None]
        row = dict(same[0])
        if len({r["goal"] for r in same}) > 1:  # a goal that names a round's own figure ("... (here 1.04)")
            row["goal"] = row["goal"].rsplit(" (", 1)[0] + " (in each round)"
        if measured:
            middle, low, high = measured[(len(measured) - 1) // 2], measured[0], measured[-1]
            row["value"] = middle["value"]
            row["measured"] = middle["measured"] + ("" if low["measured"] == high["measured"]
                                                    else f" ({low['measured']} to {high['measured']})")
        row["met"] = None if not judged else all(judged)
        row["met_rounds"], row["judged_rounds"] = sum(judged), len(judged)
        rows.append(row)
    return rows
