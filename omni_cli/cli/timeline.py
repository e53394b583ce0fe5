"""A trace drawn in the terminal: one lane per loop with a bar per WorkUnit on a time axis, then summary rows."""

from __future__ import annotations

from .trace_digest import TraceDigest

GLYPHS = {"ar_prefill": ("▒", "magenta"), "ar_token": ("█", "cyan"), "audio_chunk": ("▇", "yellow"),
          # a sentence voice's units (piper cards)
          "text_split": ("▒", "magenta"), "sentence": ("█", "green"), "frame_chunk": ("▇", "yellow")}
LABEL = 16


def lanes(digest: TraceDigest, width: int) -> dict[str, list[str | None]]:
    """{loop: [kind or None per column]} for bars `width` columns wide over the trace's span."""
    total, t0 = digest.span_s(), digest.origin_s()
    order = digest.loop_order()
    out = {loop: [None] * width for loop in order}
    rows = {digest.loop_ids[loop]: out[loop] for loop in order}
    kinds = list(digest.kind_ids)
    for i in range(digest.num_units):
        first = min(width - 1, int((digest.unit_start[i] - t0) / total * width))
        last = min(width - 1, int((digest.unit_end[i] - t0) / total * width))
        row, kind = rows[digest.unit_loop[i]], kinds[digest.unit_kind[i]]
        for col in range(max(first, 0), last + 1):
            if row[col] != "ar_prefill":  # a prefill stays visible among tokens
                row[col] = kind
    return out


def first_audio_columns(digest: TraceDigest, width: int) -> list[int]:
    total, t0 = digest.span_s(), digest.origin_s()
    return [max(0, min(width - 1, int((t - t0) / total * width))) for _, t in digest.first_audio]


def summary_rows(digest: TraceDigest) -> list[tuple[str, ...]]:
    """(loop, kind, WorkUnits, total ms, mean ms, batch sizes) per loop and kind."""
    order = {loop: i for i, loop in enumerate(digest.loop_order())}
    rows = []
    for (loop, kind), (units, total, batch_sum, batch_max) in sorted(digest.groups.items(),
                                                                     key=lambda kv: (order[kv[0][0]], kv[0][1])):
        rows.append((loop, kind, str(units), f"{total * 1e3:.2f}", f"{total / units * 1e3:.3f}",
                     f"mean {batch_sum / units:.1f}, max {batch_max}"))
    return rows


def request_figures(digest: TraceDigest) -> list[tuple[str, str]]:
    ttfa = digest.ttfa_s()
    audio_s, wall = digest.audio_s, digest.span_s()
    out = [("requests", f"{len(digest.submitted)} ({', '.join(sorted(digest.end_phases)) or 'unfinished'})")]
    if ttfa:
        extra = f" (mean {sum(ttfa) / len(ttfa) * 1e3:.1f} ms, max {max(ttfa) * 1e3:.1f} ms)" if len(ttfa) > 1 else ""
        out.append(("time to first audio", f"{min(ttfa) * 1e3:.1f} ms{extra}"))
    out.append(("audio", f"{audio_s:.2f} s in {wall:.3f} s"))
    if audio_s > 0:
        out.append(("real-time factor", f"{wall / audio_s:.3f} (wall / audio; below 1 is faster than real time)"))
    return out


def render(digest: TraceDigest, console) -> None:
    """Print the lanes and the summary tables on a rich console."""
    from rich.table import Table
    from rich.text import Text

    from .term import inert, text

    width = max(20, min(console.width, 160) - LABEL - 2)
    total = digest.span_s()
    run = digest.run
    if run is not None:
        console.print(text(f"{run.get('card')} · {run.get('program')} · policy {run.get('policy')} · "
                           f"started {run.get('started_at')}", style="bold"), no_wrap=True, crop=False)
    rows = lanes(digest, width)
    for loop, row in rows.items():
        line = Text(f"{inert(loop)[:LABEL - 1]:<{LABEL}}")
        for kind in row:
            glyph, style = GLYPHS.get(kind, ("·", "dim")) if kind else (" ", "")
            line.append(glyph, style=style)
        console.print(line, no_wrap=True, crop=False)
    marks = [" "] * width
    for col in first_audio_columns(digest, width):
        marks[col] = "▲"
    console.print(Text(f"{'first audio':<{LABEL}}" + "".join(marks), style="green"), no_wrap=True, crop=False)
    console.print(Text(" " * LABEL + axis(total, width), style="dim"), no_wrap=True, crop=False)
    seen = {kind for row in rows.values() for kind in row if kind}  # the legend names what is drawn
    console.print(Text(" " * LABEL + "  ".join(f"{g} {k}" for k, (g, _) in GLYPHS.items() if k in seen), style="dim"))
    table = Table(title="WorkUnits", title_justify="left", box=None, header_style="bold")
    for name, justify in [("loop", "left"), ("kind", "left"), ("units", "right"), ("total ms", "right"),
                          ("mean ms", "right"), ("batch size", "left")]:
        table.add_column(name, justify=justify)
    for row in summary_rows(digest):
        table.add_row(*map(text, row))
    console.print(table)
    figures = Table(box=None, show_header=False)
    figures.add_column(style="bold")
    figures.add_column()
    for name, value in request_figures(digest):
        figures.add_row(name, text(value))
    console.print(figures)


def axis(total_s: float, width: int) -> str:
    """`0 ms` at the left, the span at the right, ticks between."""
    unit, scale = ("s", 1.0) if total_s >= 2 else ("ms", 1e3)
    labels = [f"{total_s * scale * i / 4:.0f} {unit}" if unit == "ms" else f"{total_s * i / 4:.2f} {unit}"
              for i in range(5)]
    chars = [" "] * width
    for i, label in enumerate(labels):
        col = min(width - len(label), max(0, round((width - 1) * i / 4) - (len(label) // 2 if 0 < i < 4 else 0)))
        if i == 4:
            col = width - len(label)
        chars[col:col + len(label)] = label
    return "".join(chars[:width])
