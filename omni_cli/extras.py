"""The exact pip command that installs an optional extra, from the checkout omni runs from when there is one."""

from __future__ import annotations

from pathlib import Path

DISTRIBUTION = "omni-stepwise"  # pyproject's name; "omni_cli" on the public index is an unrelated package
TORCH_PIN = "torch==2.13.0"  # named first, pip takes the CPU build where it is on disk (as the README's command)


def checkout_root() -> Path | None:
    """The source tree this package is imported from (an editable install or PYTHONPATH), else None."""
    root = Path(__file__).resolve().parent.parent
    try:
        pyproject = (root / "pyproject.toml").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return root if f'name = "{DISTRIBUTION}"' in pyproject else None


def install_command(extra: str) -> str:
    """`pip install torch==2.13.0 -e "/src/omni[hf]"` from a checkout; `pip install "omni-stepwise[hf]"` else."""
    root = checkout_root()
    torch = f"{TORCH_PIN} " if extra == "hf" else ""
    target = f'-e "{root}[{extra}]"' if root is not None else f'"{DISTRIBUTION}[{extra}]"'
    return f"pip install {torch}{target}"
