"""`omni rollout score`: load a rollout directory, re-score it through a card, report and save."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from .errors import FAILURE, CliError
from .outputs import refuse_existing
from .session import ModelOptions, open_engine

HF_TOLERANCE = 1e-5  # batched forwards round differently (~1e-7 in the logits on the tiny checkpoint)


def run_score(directory: Path, out: Path | None, card: str | None, settings: dict[str, Any], concurrency: int,
              tolerance: float | None, force: bool) -> None:
    from ..rollout import Sample, compare, load_run, save_sample, score

    try:
        samples = load_run(directory)
    except ValueError as exc:
        raise CliError(str(exc)) from None
    recorded = samples[0].meta
    if any(s.meta["card"] != recorded["card"] for s in samples):
        raise CliError(f"{directory}: its samples come from different cards; score them apart")
    given = {k: v for k, v in settings.items() if v is not None}
    options = ModelOptions(card or _where(recorded["card"]), _where(recorded["program"]),
                           settings=given if card else {**recorded["settings"], **given})
    engine = open_engine(options)
    now = engine.program.card
    same_card = card is None or now.source == recorded["card"]["source"]
    if out is not None:  # every refusal before the model runs
        out.mkdir(parents=True, exist_ok=True)
        for s in samples:
            refuse_existing(out / s.path.name, force)
    try:
        rescored = score(engine, samples, concurrency=concurrency)
    except ValueError as exc:  # a replay the card cannot take (another vocabulary, say)
        raise CliError(str(exc), FAILURE) from None
    finally:
        engine.close()
    limit = tolerance if tolerance is not None else (0.0 if recorded["backend"] in ("numpy", "toy") else HF_TOLERANCE)
    outside = 0
    for sample, columns in zip(samples, rescored, strict=True):
        agreement = compare(sample, columns)
        verdict = ("bit-equal" if agreement.bit_equal else f"max |diff| {agreement.max_abs_diff:.3g}") \
            if agreement.tokens_equal else "tokens differ"
        outside += not agreement.within(limit)
        print(f"{sample.path.stem}  {agreement.num_steps} steps  {verdict}", flush=True)
        if out is not None:
            meta = {**sample.meta, "scored_with": {"card": now.model, "source": now.source, "settings": given}}
            save_sample(out / sample.path.name, Sample(meta, columns))
    if not same_card:
        sys.stderr.write(f"scored under {now.model} ({now.source}), not the recorded card: no tolerance to check\n")
    elif outside:
        raise CliError(f"{outside} of {len(samples)} samples re-scored outside the tolerance of {limit:g}", FAILURE)


def _where(identity: dict[str, Any]) -> str:
    """The recorded file if it is still there, else the shipped one of that name."""
    path = Path(identity["source"])
    return str(path) if path.is_file() else path.stem
