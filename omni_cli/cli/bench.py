"""`omni bench`: run the standard workloads and print the figures side by side, as ratios."""

from __future__ import annotations

import json
import sys

import typer

from ..defaults import CARD_ENV
from . import options as o

HELP = """Measure time to first audio, latency, throughput and scheduler overhead.

Runs the same workloads through one engine in one process — stream vs barrier hand-offs, a text
and one ten times longer, concurrency 1 vs N — and prints each target as a ratio measured in this
run. With --reference (an hf card and its --model-path) it instead runs chat-mode utterances of
--codes codec tokens through our engine (greedy, streaming) and through Hugging Face `generate`
one request after another on the same checkpoint (each side first makes one utterance untimed, as
`omni serve` warms up before it listens), checks that both make the same tokens, and prints our
figures beside generate's and the targets beside the ratios of this run, and each side's
load time: a fresh load of the weights in this process, generate's (from_pretrained and its
tokenizer) first, then ours (the card compiled, weights, tokenizer, voices, an engine made), both
after the card's own load, so torch is imported and the files are in the OS cache for both. A
machine shared with others moves these figures by tens of percent from run to run: --rounds N runs the
whole comparison N times, each round judged on its own, and prints each target's median round, its
range and in how many rounds it was met (loads: N alternated pairs, each side's fastest). On hf cards
it first says the torch intra-op threads each component ran with and where each count came from.
`generate` gets the cores ours used: the widest component's threads, and where the concurrent run
split the vocoder's batches over more cores, a second `generate` run with that many threads for the
throughput ratio.

"stall max" is the longest a player that starts at a request's first audio and plays in real time
would have waited for a chunk, over all requests (0: no gap; chunks are timed when the engine
hands them out, after the tick that made them).

Runs the toy card unless --card (or OMNI_CARD) names another: the workloads
measure the token cascade. `python -m omni_cli.backends.hf.tiny ./tiny-omni`
writes a tiny random checkpoint for --reference.
"""


def bench(
    card: str = typer.Option("qwen2_5_omni_toy", "--card", "-c", metavar="NAME|PATH", envvar=CARD_ENV,
                             help="card name or path"),
    model_path: str | None = typer.Option(None, "--model-path", help="checkpoint directory (hf cards)"),
    set_: o.Set = None,
    requests: int = typer.Option(8, "--requests", min=1, max=10_000, help="utterances per configuration"),
    concurrency: int = typer.Option(8, "--concurrency", min=1, max=1024, help="requests in flight at once"),
    chars: int = typer.Option(60, "--chars", min=1, max=20_000, help="characters of the short text"),
    reference: bool = typer.Option(False, "--reference", help="instead: ours beside HF generate (hf cards only)"),
    codes: int = typer.Option(200, "--codes", min=1, max=8192, help="--reference: codec tokens per utterance"),
    processes: bool = typer.Option(True, "--processes/--no-processes", help="time `omni --help` and `omni speak` as processes"),
    as_json: bool = typer.Option(False, "--json", help="one JSON object per line instead of tables"),
    placement: str | None = typer.Option(None, "--placement", metavar="KIND,KIND",
                                         help="instead: these placements (thread, process, ray) beside inline: "
                                              "throughput, same audio, and each executor's cost per call; with "
                                              "--reference: where ours runs (KIND or NAME=KIND,..., e.g. "
                                              "vocoder=process:2; default: the card's placement)"),
    rounds: int = typer.Option(1, "--rounds", min=1, max=100, help="--placement: alternate the placements' timed runs "
                               "this many times, keeping each one's fastest; --reference: that many rounds of the "
                               "whole comparison, each judged on its own (a target's median round, its range, and "
                               "in how many rounds it was met), and each side's load the fastest of as many"),
    rollout: bool = typer.Option(False, "--rollout", help="instead: overhead per WorkUnit served and rolled out "
                                 "(recording every step), best of 3 alternated runs at concurrency 1 and N"),
) -> None:
    from ..api import load
    from ..bench import process_timings, standard_suite

    settings = {"model_path": model_path} if model_path else None
    overrides = o.overrides(set_)
    program = load(card, None, settings, overrides)
    if rollout:
        _render_recording(program, requests, chars, concurrency, as_json)
        return
    if placement is not None and not reference:
        _render_placement(program, placement, requests, chars, concurrency, as_json, rounds)
        return
    ref, results = None, []
    if reference:
        ref = _reference(program, card, placement, requests, chars, concurrency, codes, rounds)
    else:
        results = standard_suite(program, num_requests=requests, short_chars=chars, concurrency=concurrency,
                                 on_progress=_progress)
    if processes:
        sys.stderr.write("omni: bench: timing `omni --help` and `omni speak` as processes (best of 3)\n")
    timings = process_timings(card, model_path=model_path, overrides=set_ or []) if processes else {}
    _report(program, results, ref, timings, placement, as_json)


def _reference(program, card: str, placement: str | None, requests: int, chars: int, concurrency: int, codes: int,
               rounds: int):
    """--reference: ours beside Hugging Face generate (bench/suites.py's reference_suite)."""
    from ..bench import reference_suite

    if any(comp.backend != "hf" for comp in program.card.components.values()):
        raise typer.BadParameter(f"compares with Hugging Face generate, so it needs an hf card, not {card!r} "
                                 "(e.g. --card qwen2_5_omni --model-path DIR)", param_hint="--reference")
    if placement is not None:  # a bad one is a usage error (exit 2), said before any run
        from ..build import placement_for

        placement_for(program, placement)
    return reference_suite(program, num_requests=requests, short_chars=chars, concurrency=concurrency,
                           talker_codes=codes, load_rounds=rounds, placement=placement or "card", rounds=rounds,
                           on_progress=_progress)


def _report(program, results: list, ref, timings: dict, placement: str | None, as_json: bool) -> None:
    """The workloads' figures and the targets as ratios: JSON lines, or tables and a few labelled lines."""
    from ..bench import targets
    from ..engine.executors import threads_as_placed

    if ref and "rounds" in ref[1]:  # each round judged on its own, then one row per target over them
        from dataclasses import replace

        from ..bench.targets import across_rounds

        rows = across_rounds([targets([], one, timings) for one in ref[1]["rounds"]])
        ref_results = [replace(r, label=f"{r.label}, round {i}") for i, (res, _) in enumerate(ref[1]["rounds"], 1)
                       for r in res]
    else:
        rows = targets(results, ref, timings)
        ref_results = ref[0] if ref else []
    threads = threads_as_placed(program, placement if ref else None)
    generate_threads = ref[1].get("generate_threads") if ref else None
    generate_wide = ref[1].get("generate_wide_threads") if ref else None
    where = placement_line(program, placement) if ref else None
    if as_json:
        for r in results + ref_results:
            typer.echo(json.dumps(r.summary(), ensure_ascii=False))
        for row in rows:
            typer.echo(json.dumps(row, ensure_ascii=False))
        if ref:
            typer.echo(json.dumps({"load": ref[1]["load"]}))
        if threads:
            typer.echo(json.dumps({"threads": threads, "generate_threads": generate_threads}
                                  | ({"generate_wide_threads": generate_wide} if generate_wide else {})))
        if where:
            typer.echo(json.dumps({"placement": where}))
        return
    from .fit import labelled_line, terminal_width

    width = terminal_width()  # these lines, like the tables, fit a terminal; a pipe gets each on one line
    if threads:
        typer.echo(labelled_line(threads_line(threads, generate_threads, generate_wide), width))
    if ref:
        from ..bench.loads import load_line

        typer.echo(labelled_line(load_line(ref[1]["load"]), width))
    if where:
        typer.echo(labelled_line(where, width))
    _render(results + ref_results, rows)


def placement_line(program, override: str | None) -> str:
    """Where each component of ours ran: the card's placement, or --placement's over it."""
    from ..build import placement_for

    specs = placement_for(program, override)
    source = "card" if override is None else "--placement"
    return "placement: " + ", ".join(f"{name} {spec.executor}" + (f" x{spec.workers}" if spec.workers > 1 else "")
                                     for name, spec in specs.items()) + f" ({source})"


def threads_line(threads: dict[str, dict], generate_threads: int | None, generate_wide: int | None = None) -> str:
    """The intra-op threads each component ran with, and where each count came from (backends/hf/threads.py);
    generate's, and its second count, beside ours-N, where ours-N used more cores (its rows split)."""
    parts = ", ".join(f"{name} {t['count']} ({t['source']})" + (f", rows split over {t['rows']}" if "rows" in t else "")
                      + (f" in each of {t['workers']} workers" if "workers" in t else "") for name, t in threads.items())
    return (f"intra-op threads: {parts}" + ("" if generate_threads is None else f"; generate {generate_threads}")
            + (f", and {generate_wide} beside the concurrent run" if generate_wide else ""))


def _progress(label: str, index: int, total: int, what: str) -> None:
    """One line on stderr as each configuration starts (rather than long silence, minutes with
    --reference): the tables stay alone on stdout."""
    from .fit import labelled_line, terminal_width

    sys.stderr.write(labelled_line(f"omni: bench {index}/{total}: {label} ({what})", terminal_width(sys.stderr)) + "\n")
    sys.stderr.flush()


def _render(results, rows) -> None:
    from rich.console import Console
    from rich.table import Table

    from .fit import column_groups, terminal_width

    width = terminal_width()
    columns = ("configuration", "TTFA p50", "TTFA p95", "latency p50", "RTF p50", "stall max", "audio s / wall s",
               "WU / s", "overhead µs/WU", "reserved MiB")
    cells = []
    for r in results:
        s = r.summary()
        cells.append((s["label"], _ms(s["ttfa_p50_s"]), _ms(s["ttfa_p95_s"]), _ms(s["latency_p50_s"]),
                      _num(s["rtf_p50"], 3), _ms(s["stall_max_s"]), _num(s["audio_s_per_wall_s"], 1),
                      _num(s["work_units_per_s"], 0), _num(s["overhead_us_per_unit"], 1), _num(s["peak_reserved_mib"], 1)))
    # an 80-column terminal gets two tables, each led by the configuration, not ten squeezed columns
    # whose names and figures rich would cut to "stre…"
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    groups = column_groups(widths, width)
    # a pipe or file gets the full table, as wide as its cells and rules need
    console = Console(width=width or max(140, sum(widths) + 3 * len(widths) + 1))
    for part, group in enumerate(groups, 1):
        title = "workloads" if len(groups) == 1 else f"workloads ({part} of {len(groups)})"
        table = Table(title=title, show_lines=False)
        for i in (0, *group):
            table.add_column(columns[i], justify="left" if i == 0 else "right", no_wrap=True)
        for row in cells:
            table.add_row(*(row[i] for i in (0, *group)))
        console.print(table)
    goals = Table(title="targets (measured in this run)")
    for col in ("target", "measured", "goal", "met"):
        goals.add_column(col)
    for row in rows:
        met = "-" if row["met"] is None else ("yes" if row["met"] else "NO")
        if row.get("judged_rounds"):  # several rounds: in how many it was met
            met = f"{'yes' if row['met'] else 'NO'}, {row['met_rounds']} of {row['judged_rounds']}"
        goals.add_row(row["target"], row["measured"], row["goal"], met)
    console.print(goals)


def _render_placement(program, kinds: str, requests: int, chars: int, concurrency: int, as_json: bool,
                      rounds: int) -> None:
    from ..bench.placement import placement_suite
    from ..spec.placement import EXECUTORS

    wanted = [k.strip() for k in kinds.split(",") if k.strip()]
    unknown = [k for k in wanted if k not in EXECUTORS]
    if unknown or not wanted:
        raise typer.BadParameter(f"expected executors from {', '.join(EXECUTORS)}, got {kinds!r}",
                                 param_hint="--placement")
    rows = placement_suite(program, wanted, num_requests=requests, short_chars=chars, concurrency=concurrency,
                           rounds=rounds)
    if as_json:
        for row in rows:
            typer.echo(json.dumps(row))
        return
    typer.echo(f"placements: {requests} utterances at concurrency {concurrency}; per call: one thinker token, "
               "one call in flight (medians)")
    typer.echo(f"  {'placement':<9}{'audio/wall':>11}{'x inline':>9}{'same':>6}{'call us':>9}"
               f"{'comp us':>9}{'overhead us':>12}{'bytes/call':>11}{'driver B/WU':>12}")
    for r in rows:
        typer.echo(f"  {r['placement']:<9}{r['audio_s_per_wall_s']:>11.1f}{r['vs_inline']:>9.2f}"
                   f"{'yes' if r['same_audio'] else 'NO':>6}{r['call_us']:>9.0f}{r['component_us']:>9.0f}"
                   f"{r['overhead_us']:>12.0f}{r['bytes_per_call']:>11}{r['driver_bytes_per_unit']:>12.0f}")
    typer.echo(f"seconds each stage's calls ran, and the engine's own (fastest of {rows[0]['rounds']} alternated runs):")
    for r in rows:
        busy = ", ".join(f"{loop} {s:.2f}" for loop, s in r["stage_busy_s"].items())
        typer.echo(f"  {r['placement']:<9}wall {r['wall_s']:.2f}: {busy}, engine {r['engine_s'] or 0:.2f}")
    inline = rows[0]
    if inline.get("overlap_bound"):
        typer.echo(f"overlap can make inline at most {inline['overlap_bound']:.2f}x faster on {inline['overlap_cores']} "
                   f"cores, {inline['overlap_bound_per_stage']:.2f}x with a core or device per stage "
                   "(the busiest stage's time, with no hand-off cost)")
    metered = [r for r in rows if r["by_component"]]
    if metered:
        typer.echo("bytes through the driver per WorkUnit, out to the worker + back, and of those the thinker -> "
                   "talker hand-off (a metered run of the same workload; inline and thread: 0)")
    for r in metered:
        parts = [f"{c['component']} {c['sent_per_unit']:.0f} + {c['received_per_unit']:.0f}" + _carried(c)
                 for c in r["by_component"]]
        typer.echo(f"  {r['placement']:<9}" + ", ".join(parts) + f"; all: {r['driver_bytes_per_unit']:.0f}, "
                   f"hand-off {r['handoff_bytes_per_unit']:.0f}")
        if "via_driver_bytes_per_unit" in r:
            typer.echo(f"  {'':<9}with the thinker's states through the driver instead of worker to worker: all "
                       f"{r['via_driver_bytes_per_unit']:.0f}, hand-off {r['via_driver_handoff_bytes_per_unit']:.0f}")


def _carried(c: dict) -> str:
    """Of a component's bytes, the hand-off's: the talker's conditioning (or, worker to worker, the recipe
    of it) out, the thinker's hidden states (or their handles) back."""
    parts = [f"hand-off {c['conditioning_out_per_unit']:.0f} out"] if c["conditioning_out_per_unit"] else []
    parts += [f"hand-off {c['hidden_back_per_unit']:.0f} back"] if c["hidden_back_per_unit"] else []
    return f" ({', '.join(parts)})" if parts else ""


def _render_recording(program, requests: int, chars: int, concurrency: int, as_json: bool) -> None:
    from ..bench import recording_cost

    rows = recording_cost(program, num_requests=requests, short_chars=chars, concurrency=concurrency)
    if as_json:
        for row in rows:
            typer.echo(json.dumps(row))
        return
    typer.echo("rollout recording: engine overhead per WorkUnit (best of 3 alternated runs; same audio)")
    for row in rows:
        typer.echo(f"  concurrency {row['concurrency']:>3}: serve {row['serve_us_per_unit']:6.1f} us, rollout "
                   f"{row['rollout_us_per_unit']:6.1f} us, recording {row['recording_us_per_unit']:+6.1f} us/WU")


def _ms(value) -> str:
    return "-" if value is None else f"{value * 1000:.1f} ms"


def _num(value, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"
