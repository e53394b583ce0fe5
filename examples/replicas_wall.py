"""What `--replicas` buys: the same stdin lines through `omni speak --replicas 1` and `--replicas N`, side by side.

    python examples/replicas_wall.py                      # 40 lines, toy card, N = 2, 3 alternated rounds
    python examples/replicas_wall.py --lines 100 --replicas 4 --card piper_joe

Each round runs both, one after the other, as real `omni` processes (start-up and the replicas' own
start included: that is what a user waits for), writing to a fresh --out-dir. Prints each round's wall
times, the median ratio, and whether every file was the same, byte for byte.
"""

from __future__ import annotations

import argparse
import filecmp
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def run(card: str, replicas: int, text: str, out: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "omni_cli.cli", "speak", "-", "--out-dir", str(out), "-q",
                           "--card", card, "--replicas", str(replicas)], input=text.encode(),
                          capture_output=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"replicas_wall: --replicas {replicas} exited {done.returncode}: {done.stderr.decode().strip()}")
    return wall


def same_files(a: Path, b: Path) -> bool:
    names = sorted(p.name for p in a.iterdir())
    if names != sorted(p.name for p in b.iterdir()):
        return False
    return all(filecmp.cmp(a / n, b / n, shallow=False) for n in names)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--card", default="qwen2_5_omni_toy")
    parser.add_argument("--lines", type=int, default=40)
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    text = "".join(f"This is line number {i} of the measured job, spoken in full.\n" for i in range(1, args.lines + 1))
    ones, manys, same = [], [], True
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(1, args.rounds + 1):
            one_dir, many_dir = Path(tmp, f"one{round_}"), Path(tmp, f"many{round_}")
            ones.append(run(args.card, 1, text, one_dir))
            manys.append(run(args.card, args.replicas, text, many_dir))
            same = same and same_files(one_dir, many_dir)
            print(f"round {round_}: --replicas 1 {ones[-1]:.2f} s, --replicas {args.replicas} {manys[-1]:.2f} s")
    one, many = statistics.median(ones), statistics.median(manys)
    print(f"{args.lines} lines, {args.card}: median --replicas 1 {one:.2f} s, --replicas {args.replicas} {many:.2f} s, "
          f"speed-up {one / many:.2f}x; same files: {'yes' if same else 'NO'}")


if __name__ == "__main__":
    main()
