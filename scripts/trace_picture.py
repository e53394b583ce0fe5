"""Draw `omni trace` as it looks on a terminal into docs/img/trace.svg (and .png with rsvg-convert, when present).

Run from a checkout: `python scripts/trace_picture.py`. The picture is the command's own colored output at 96
columns, rendered by rich; nothing is drawn by hand.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from rich.console import Console
from rich.text import Text

ROOT = Path(__file__).resolve().parent.parent
TEXT = "Hello, world. How are you today?"
WIDTH = 96


def main() -> None:
    env = {**os.environ, "FORCE_COLOR": "1", "COLUMNS": str(WIDTH), "PYTHONPATH": str(ROOT)}
    env.pop("OMNI_CARD", None)  # the default card, as a new user runs it
    done = subprocess.run([sys.executable, "-m", "omni_cli.cli", "trace", TEXT], env=env, capture_output=True,
                          text=True, check=True)
    # a styled run's leading blanks go before its style: rsvg drops the blanks that open a text element,
    # which would shift the time axis under the lanes
    text = Text.from_ansi(re.sub(r"(\x1b\[[0-9;]*m)( +)", r"\2\1", done.stdout))
    console = Console(record=True, width=WIDTH, file=open(os.devnull, "w"), force_terminal=True)
    console.print(text, soft_wrap=True)
    svg = ROOT / "docs" / "img" / "trace.svg"
    svg.write_text(console.export_svg(title=f'omni trace "{TEXT}"'))
    if shutil.which("rsvg-convert"):
        subprocess.run(["rsvg-convert", str(svg), "-o", str(svg.with_suffix(".png"))], check=True)
    print(svg)


if __name__ == "__main__":
    main()
