"""`omni cards show --params`: every key a card may set, with the value its file gives it (issue 11: the
schemas' `doc=` is shown somewhere)."""

from __future__ import annotations

import dataclasses

import pytest
import yaml
from cli_helpers import ROOT

from omni_cli.cli.card_params import param_rows
from omni_cli.program import load_card_file
from omni_cli.program.backends import params_schema

SHIPPED = sorted((ROOT / "cards").glob("*.yaml"))
NOT_PARAMS = {"kind", "component", "prompt_slot", "work_unit"}  # shown by a plain `cards show`


def written(tree: dict) -> dict[str, object]:
    """The scalar keys a card file writes under the sections --params lists, flattened to dotted keys."""
    out: dict[str, object] = {k: tree[k] for k in ("seed", "sample_rate") if k in tree}

    def walk(prefix: str, node: object) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(f"{prefix}.{k}", v)
        else:
            out[prefix] = node

    for section in ("params", "limits", "batching", "placement"):
        walk(section, tree.get(section, {}))
    for name, comp in tree["components"].items():
        walk(f"components.{name}.params", comp.get("params", {}))
    for name, loop in tree["loops"].items():
        walk(f"loops.{name}", {k: v for k, v in loop.items() if k not in NOT_PARAMS})
    return out


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_every_key_the_card_writes_is_listed_with_the_value_it_writes(path):
    rows = {key: value for key, value, _, _ in param_rows(load_card_file(str(path)))}
    for key, value in written(yaml.safe_load(path.read_text())).items():
        assert key in rows, key
        text = str(value)
        assert rows[key] == text or (rows[key].endswith("…") and text.startswith(rows[key][:-1])), (key, rows[key], text)


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_every_param_a_component_accepts_is_listed(path):
    card = load_card_file(str(path))
    keys = {key for key, *_ in param_rows(card)}
    for name, comp in card.components.items():
        schema = params_schema(comp.backend, comp.role)
        listed = {k for k in keys if k.startswith(f"components.{name}.params.")}
        assert listed == {f"components.{name}.params.{f.name}" for f in dataclasses.fields(schema)}


def test_the_command_prints_a_line_per_key_with_its_doc(omni, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)  # to a pipe: one line per key (a terminal fits them: test_fit_columns)
    result = omni("cards", "show", "qwen2_5_omni_toy", "--params")
    assert result.exit_code == 0 and result.stderr == ""
    lines = result.stdout.splitlines()
    assert len(lines) == 2 + len(param_rows(load_card_file(str(ROOT / "cards" / "qwen2_5_omni_toy.yaml"))))
    chunk = next(line for line in lines if line.split()[0] == "loops.vocoder.chunk_codes")
    assert chunk.split()[1:4] == ["10", "0", "to"] and "codes in the longest chunk" in chunk


def test_a_card_that_leaves_work_unit_out_shows_the_units_its_kinds_run(omni, home):
    """`work_unit` follows from `kind` (issue 11 item 7): a card may omit it, and `cards show` still says it."""
    text = (ROOT / "cards" / "qwen2_5_omni_toy.yaml").read_text()
    card = home / "no_work_unit.yaml"
    card.write_text("".join(line for line in text.splitlines(keepends=True) if "work_unit:" not in line))
    assert omni("cards", "validate", str(card)).exit_code == 0
    shown = omni("cards", "show", str(card)).stdout
    units = {line.split(":")[0].strip(): line.split(", ")[1] for line in shown.splitlines() if " units" in line}
    assert units == {"thinker_decode": "ar_token units", "talker_decode": "ar_token units",
                     "vocoder": "audio_chunk units", "audio_encode": "audio_block units",
                     "image_encode": "image units"}
