"""`omni speak` on a request cut short at a cap: said in --json, the summary and the exit code (issue 12)."""

from __future__ import annotations

import json
from pathlib import Path

TOY = Path(__file__).resolve().parents[2] / "cards" / "qwen2_5_omni_toy.yaml"


def capped_card(tmp_path: Path) -> str:
    # the toy talker suppresses EOS below 3 codes per reply token: 10 codes must cut any sentence
    text = TOY.read_text(encoding="utf-8").replace("    max_tokens: 16384\n", "    max_tokens: 10\n")
    assert "max_tokens: 10" in text
    path = tmp_path / "capped.yaml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_a_truncated_request_exits_1_and_says_which_loop(omni, tmp_path):
    out = tmp_path / "x.wav"
    result = omni("speak", "--card", capped_card(tmp_path), "-o", str(out), "--json", "Hello there")
    assert result.exit_code == 1
    record = json.loads(result.stdout.splitlines()[-1])
    assert record["status"] == "truncated" and "talker_decode stopped at its max_tokens" in record["error"]
    assert "--allow-truncation" in result.stderr
    assert out.stat().st_size > 44  # what was made is kept


def test_allow_truncation_exits_0_and_still_reports_it(omni, tmp_path):
    result = omni("speak", "--card", capped_card(tmp_path), "-o", str(tmp_path / "y.wav"), "--json",
                  "--allow-truncation", "Hello there")
    assert result.exit_code == 0
    assert json.loads(result.stdout.splitlines()[-1])["status"] == "truncated"
