"""A trace drawn in the terminal: one lane per loop with a bar per WorkUnit on a time axis, then summary rows."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

GLYPHS = {"ar_prefill": ("▒", "magenta"), "ar_token": ("█", "cyan"), "audio_chunk": ("▇", "yellow")}
LABEL = 16


def work_units(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r.get("event") == "work_unit"]


def loop_order(records: list[dict[str, Any]]) -> list[str]:
    """Loops by stage (thinker first), then as they first appear."""
    run = next((r for r in records if r.get("event") == "run"), {})
    seen: dict[str, tuple[int, int]] = {}
    for i, u in enumerate(work_units(records)):
        seen.setdefault(u["loop"], (u.get("stage", 0), i))
    ordered = sorted(seen, key=lambda loop: seen[loop])
    return [loop for loop in run.get("loops", []) if loop in seen] + [x for x in ordered if x not in run.get("loops", [])]


def origin_s(records: list[dict[str, Any]]) -> float:
    """The time axis starts at the first submission (engine start-up is not the run's)."""
    starts = [u["start_s"] for u in work_units(records)]
    starts += [r["t_s"] for r in records if r.get("event") == "request"]
    return min(starts, default=0.0)


def span_s(records: list[dict[str, Any]]) -> float:
    ends = [u["start_s"] + u["dur_s"] for u in work_units(records)]
    ends += [r["t_s"] for r in records if r.get("event") == "request"]
    return max(max(ends, default=0.0) - origin_s(records), 1e-9)


def lanes(records: list[dict[str, Any]], width: int):
    """{loop: [kind or None per column]} for bars `width` columns wide over the trace's span."""
    total, t0 = span_s(records), origin_s(records)
    out = {loop: [None] * width for loop in loop_order(records)}
    for u in work_units(records):
        first = min(width - 1, int((u["start_s"] - t0) / total * width))
        last = min(width - 1, int((u["start_s"] + u["dur_s"] - t0) / total * width))
        row = out[u["loop"]]
        for col in range(first, last + 1):
            if row[col] != "ar_prefill":  # a prefill stays visible among tokens
                row[col] = u["kind"]
    return out


def first_audio_columns(records: list[dict[str, Any]], width: int) -> list[int]:
    total, t0 = span_s(records), origin_s(records)
    return [min(width - 1, int((r["t_s"] - t0) / total * width)) for r in records
            if r.get("event") == "request" and r.get("phase") == "first_audio"]


def summary_rows(records: list[dict[str, Any]]) -> list[tuple[str, ...]]:
    """(loop, kind, WorkUnits, total ms, mean ms, batch sizes) per loop and kind."""
    groups: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for u in work_units(records):
        groups[(u["loop"], u["kind"])].append(u)
    order = {loop: i for i, loop in enumerate(loop_order(records))}
    rows = []
    for (loop, kind), units in sorted(groups.items(), key=lambda kv: (order[kv[0][0]], kv[0][1])):
        total = sum(u["dur_s"] for u in units)
        sizes = [u["batch_size"] for u in units]
        rows.append((loop, kind, str(len(units)), f"{total * 1e3:.2f}", f"{total / len(units) * 1e3:.3f}",
                     f"mean {sum(sizes) / len(sizes):.1f}, max {max(sizes)}"))
    return rows


def request_figures(records: list[dict[str, Any]]) -> list[tuple[str, str]]:
    submitted = {r["request_id"]: r["t_s"] for r in records if r.get("event") == "request" and r["phase"] == "submitted"}
    ttfa = [r["t_s"] - submitted.get(r["request_id"], 0.0) for r in records
            if r.get("event") == "request" and r["phase"] == "first_audio"]
    ends = [r for r in records if r.get("event") == "request" and r["phase"] in ("finished", "cancelled", "failed")]
    audio_s = sum((r.get("detail") or {}).get("audio_s", 0.0) for r in ends)
    wall = span_s(records)
    out = [("requests", f"{len(submitted)} ({', '.join(sorted({r['phase'] for r in ends})) or 'unfinished'})")]
    if ttfa:
        extra = f" (mean {sum(ttfa) / len(ttfa) * 1e3:.1f} ms, max {max(ttfa) * 1e3:.1f} ms)" if len(ttfa) > 1 else ""
        out.append(("time to first audio", f"{min(ttfa) * 1e3:.1f} ms{extra}"))
    out.append(("audio", f"{audio_s:.2f} s in {wall:.3f} s"))
    if audio_s > 0:
        out.append(("real-time factor", f"{wall / audio_s:.3f} (wall / audio; below 1 is faster than real time)"))
    return out


def render(records: list[dict[str, Any]], console) -> None:
    """Print the lanes and the summary tables on a rich console."""
    from rich.table import Table
    from rich.text import Text

    width = max(20, min(console.width, 160) - LABEL - 2)
    total = span_s(records)
    run = next((r for r in records if r.get("event") == "run"), None)
    if run is not None:
        console.print(Text(f"{run.get('card')} · {run.get('program')} · policy {run.get('policy')} · "
                           f"started {run.get('started_at')}", style="bold"), no_wrap=True, crop=False)
    for loop, row in lanes(records, width).items():
        line = Text(f"{loop[:LABEL - 1]:<{LABEL}}")
        for kind in row:
            glyph, style = GLYPHS.get(kind, ("·", "dim")) if kind else (" ", "")
            line.append(glyph, style=style)
        console.print(line, no_wrap=True, crop=False)
    marks = [" "] * width
    for col in first_audio_columns(records, width):
        marks[col] = "▲"
    console.print(Text(f"{'first audio':<{LABEL}}" + "".join(marks), style="green"), no_wrap=True, crop=False)
    console.print(Text(" " * LABEL + axis(total, width), style="dim"), no_wrap=True, crop=False)
    console.print(Text(" " * LABEL + "  ".join(f"{g} {k}" for k, (g, _) in GLYPHS.items()), style="dim"))
    table = Table(title="WorkUnits", title_justify="left", box=None, header_style="bold")
    for name, justify in [("loop", "left"), ("kind", "left"), ("units", "right"), ("total ms", "right"),
                          ("mean ms", "right"), ("batch size", "left")]:
        table.add_column(name, justify=justify)
    for row in summary_rows(records):
        table.add_row(*row)
    console.print(table)
    figures = Table(box=None, show_header=False)
    figures.add_column(style="bold")
    figures.add_column()
    for name, value in request_figures(records):
        figures.add_row(name, value)
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
