"""A card given a checkpoint of the other Qwen omni model: one line naming both, exit 2, before anything loads.

The directories hold a config.json alone: the refusal reads nothing else, so a run that went on to load
weights would fail another way."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CASES = [  # card, checkpoint's model_type, the line
    ("qwen3_omni", "qwen2_5_omni", "this card runs Qwen3-Omni (config.json's model_type 'qwen3_omni_moe'), "
                                   "the checkpoint is Qwen2.5-Omni (model_type 'qwen2_5_omni')"),
    ("qwen2_5_omni", "qwen3_omni_moe", "this card runs Qwen2.5-Omni (config.json's model_type 'qwen2_5_omni'), "
                                       "the checkpoint is Qwen3-Omni (model_type 'qwen3_omni_moe')"),
    ("qwen3_omni", "llama", "this card runs Qwen3-Omni (config.json's model_type 'qwen3_omni_moe'), "
                            "the checkpoint is another model (model_type 'llama')"),
]


def checkpoint(directory: Path, model_type: str) -> Path:
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps({"model_type": model_type}))
    return directory


@pytest.mark.parametrize(("card", "model_type", "line"), CASES)
def test_omni_speak_refuses_the_other_model_in_one_line(tmp_path, card, model_type, line):
    path = checkpoint(tmp_path / "ckpt", model_type)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "omni_cli.cli", "speak", "-c", card, "--model-path", str(path),
                           "-o", str(tmp_path / "out.wav"), "hello"], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=120)
    assert done.returncode == 2
    assert done.stderr == f"omni: error: --model-path: {path}: {line}\n"
    assert done.stdout == "" and not (tmp_path / "out.wav").exists()


def test_the_library_refuses_before_importing_torch(tmp_path):
    path = checkpoint(tmp_path / "ckpt", "qwen2_5_omni")
    probe = ("import sys\nfrom omni_cli.api import load\nfrom omni_cli.spec import SpecError\n"
             f"try:\n    load('qwen3_omni', settings={{'model_path': {str(path)!r}}})\n"
             "except SpecError as exc:\n    print(exc.issues[0].message)\n"
             "print('torch' in sys.modules, 'transformers' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    said, imported = done.stdout.splitlines()
    assert said.endswith("the checkpoint is Qwen2.5-Omni (model_type 'qwen2_5_omni')") and imported == "False False"


def test_a_card_without_model_type_takes_either(tmp_path):
    from omni_cli.backends.hf import missing_checkpoint_file

    qwen3 = checkpoint(tmp_path / "q3", "qwen3_omni_moe")
    assert missing_checkpoint_file(str(qwen3)) is None
    assert missing_checkpoint_file(str(qwen3), "qwen3_omni_moe") is None
    # a Qwen2.5-Omni directory still needs its voices file
    assert missing_checkpoint_file(str(checkpoint(tmp_path / "q25", "qwen2_5_omni"))).endswith("spk_dict.pt is missing")
