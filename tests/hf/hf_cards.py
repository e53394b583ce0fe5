"""What the hf tests share: the shipped qwen2_5_omni card made comparable with generate(talker_do_sample=False),
and the examples run as a child process."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def greedy_card(directory: Path, name: str, *, thinker_max: int = 12, talker_max: int = 80, chunk_codes: int = 0,
                first_chunk_codes: int | None = None, first_audio_codes: int | None = None,
                shared_first_codes: int | None = None, vocoder: dict | None = None) -> Path:
    """Greedy with generate's repetition penalty (talker_do_sample=False keeps it), transformers 5.24's
    talker prefill, short caps; chunk_codes 0 = one whole-utterance chunk (what generate computes); the first
    chunk in one piece unless first_audio_codes is given, and the same chunks beside other requests as alone
    unless shared_first_codes is given, whatever the machine's speed (pace: schedule).
    vocoder: params over the card's (e.g. {"dit_num_steps": 4} where ours is only compared with ours; the DiT runs
    and BigVGAN eager unless it gives {"dit_ahead_of_time": True} or {"bigvgan_ahead_of_time": True})."""
    card = yaml.safe_load((ROOT / "cards" / "qwen2_5_omni.yaml").read_text())
    card["params"]["codec_bos_pad_in_prefill"] = False
    loops = card["loops"]
    loops["thinker_decode"]["max_tokens"] = thinker_max
    loops["talker_decode"]["max_tokens"] = talker_max
    loops["talker_decode"]["sampling"] = {"temperature": 0.0, "repetition_penalty": 1.05}
    loops["vocoder"]["chunk_codes"] = chunk_codes
    # chunk sizes that do not hang on how fast this machine is at the moment
    loops["vocoder"]["pace"] = "schedule"
    for key, value in (("first_chunk_codes", first_chunk_codes), ("first_audio_codes", first_audio_codes),
                       ("shared_first_codes", shared_first_codes)):
        loops["vocoder"].pop(key, None)
        if value is not None:
            loops["vocoder"][key] = value
    # the DiT and BigVGAN eager, so a whole-utterance chunk is transformers' token2wav bit for bit (compiled ahead of
    # time they are within float rounding of it: test_hf_dit_ahead.py, test_hf_bigvgan_ahead.py)
    card["components"]["vocoder"]["params"].update(dit_ahead_of_time=False, bigvgan_ahead_of_time=False)
    card["components"]["vocoder"]["params"].update(vocoder or {})
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump(card))
    return path


def run_example(script: str, *args: object, timeout: int = 300) -> str:
    """examples/`script` with `args`, in a child Python at the repository root with this checkout on its path:
    its standard output, once it exited 0 (else the test fails with its standard error)."""
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, str(ROOT / "examples" / script), *map(str, args)], capture_output=True,
                          text=True, cwd=ROOT, timeout=timeout, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr
    return done.stdout


def qwen3_card(directory: Path, name: str, *, thinker_max: int = 12, talker_max: int = 40, greedy: bool = True,
               chunk_codes: int | None = None, residual_sampling: dict | None = None) -> Path:
    """The shipped qwen3_omni card with short caps: greedy as generate(talker_do_sample=False) runs (keeping the
    talker's repetition penalty), or with the card's sampling; chunk_codes 0: one whole-utterance chunk."""
    card = yaml.safe_load((ROOT / "cards" / "qwen3_omni.yaml").read_text())
    loops = card["loops"]
    loops["thinker_decode"]["max_tokens"] = thinker_max
    loops["talker_decode"]["max_tokens"] = talker_max
    if greedy:
        loops["talker_decode"]["sampling"] = {"temperature": 0.0, "repetition_penalty": 1.05}
    if residual_sampling is not None:
        loops["talker_decode"]["residual_sampling"] = residual_sampling
    if chunk_codes is not None:
        loops["vocoder"]["chunk_codes"] = chunk_codes
        loops["vocoder"].pop("first_chunk_codes", None)
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump(card))
    return path


def share_with_the_run(private_cache: Path, folder: str) -> None:
    """Copy the ahead-of-time files a test built in a cache of its own (to see a first load build) into the run's
    cache (OMNI_CLI_CACHE: tests/conftest.py), each with its digest, where the cards other tests load would
    otherwise compile the same key again. Under the key's lock, as omni builds it; a file there already is kept."""
    import fcntl

    from omni_cli import cache

    shared = cache.cache_dir(folder)
    for built in sorted((private_cache / folder).glob("*.so")):
        data = cache.read_verified(built)
        target = shared / built.name
        if data is None or target == built:
            continue
        with open(shared / f"{built.stem}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            if not cache.verified(target):
                cache.write_artifact(target, data, 0o644)
