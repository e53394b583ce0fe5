"""Every malformed card and program in tests/bad_specs gets its own diagnosis: file, line, key (issue 6)."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest

from omni_cli.program import compile_program, load_card_file, load_program_file
from omni_cli.spec import SpecError, read_yaml

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(__file__).resolve().parent / "bad_specs"
GOOD_CARD = ROOT / "cards" / "qwen2_5_omni_toy.yaml"
GOOD_PROGRAM = ROOT / "programs" / "speak.yaml"

# file -> (line of the first issue, substring of its key, substring of its message).
# line None: the problem has no place in the file; key "": the whole document (syntax, encoding, tags at the root)
EXPECTED: dict[str, tuple[int | None, str, str]] = {
    # YAML syntax and encoding
    "card_yaml_syntax_unclosed_flow.yaml": (16, "", "YAML syntax error"),
    "card_yaml_syntax_bad_indent.yaml": (18, "", "mapping values are not allowed"),
    "card_yaml_tab_indent.yaml": (41, "", "'\\t'"),
    "card_multiple_documents.yaml": (50, "", "another document"),
    "card_empty.yaml": (1, "", "the file is empty"),
    "card_comment_only.yaml": (1, "", "the file is empty"),
    "card_top_level_list.yaml": (2, "", "expected a mapping, got list"),
    "card_top_level_scalar.yaml": (2, "", "expected a mapping, got string"),
    "card_nul_byte.yaml": (6, "", "NUL bytes"),
    "card_non_utf8.yaml": (4, "", "not valid UTF-8"),
    "card_utf16.yaml": (1, "", "not valid UTF-8"),
    "card_binary_junk.yaml": (1, "", "not valid UTF-8"),
    "card_control_character.yaml": (3, "", "U+0007 is not allowed"),
    "card_deep_nesting.yaml": (9, "", "nested more than 32 levels"),
    "card_huge_int_digits.yaml": (7, "seed", "bad int value"),
    # tags, anchors and keys YAML allows but a card does not
    "card_python_object_apply_tag.yaml": (7, "seed", "python/object/apply:os.system' is not allowed"),
    "card_python_name_tag.yaml": (13, "components.thinker.backend", "python/name:os.system' is not allowed"),
    "card_local_tag.yaml": (7, "seed", "'!env' is not allowed"),
    "card_bad_bool_tag.yaml": (7, "seed", "not a boolean: 'maybe'"),
    "card_anchor_alias.yaml": (15, "components.talker.params", "anchors and aliases are not allowed"),
    "card_alias_bomb.yaml": (2, "b.0", "anchors and aliases are not allowed"),
    "card_merge_key.yaml": (22, "components.vocoder", "keys must be plain strings, got '<<'"),
    "card_non_string_key.yaml": (9, "", "keys must be plain strings, got '42'"),
    "card_duplicate_key.yaml": (9, "seed", "duplicate key"),
    "card_duplicate_key_nested.yaml": (21, "components.thinker", "duplicate key"),
    "card_duplicate_key_flow.yaml": (15, "components.thinker.params.d_model", "duplicate key"),
    # unknown keys, at every level
    "card_unknown_key_top.yaml": (9, "temperature", "unknown key"),
    "card_unknown_key_component.yaml": (24, "components.vocoder.device", "unknown key (expected one of: backend"),
    "card_unknown_key_loops.yaml": (32, "loops.thinker_decode.max_token", "unknown key"),
    "card_unknown_key_sampling.yaml": (39, "loops.talker_decode.sampling.topk", "unknown key"),
    "card_unknown_key_defaults.yaml": (47, "defaults.speed", "unknown key"),
    "card_unknown_key_limits.yaml": (48, "limits.max_requests", "unknown key"),
    "card_unknown_key_batching.yaml": (49, "batching.policy", "unknown key"),
    "card_unknown_key_params.yaml": (24, "components.vocoder.params.dropout", "unknown key"),
    # missing keys
    "card_missing_model.yaml": (4, "model", "missing required key"),
    "card_missing_components.yaml": (4, "components", "missing required key"),
    "card_missing_component_role.yaml": (12, "components.thinker.role", "missing required key"),
    "card_missing_loop_kind.yaml": (40, "loops.vocoder.kind", "missing required key"),
    "card_missing_prompt_slot.yaml": (33, "loops.talker_decode.prompt_slot", "missing required key"),
    "card_null_components.yaml": (11, "components", "got null"),
    # wrong types and empty values
    "card_wrong_type_seed_string.yaml": (7, "seed", "expected integer, got string"),
    "card_wrong_type_components_list.yaml": (11, "components", "got list"),
    "card_wrong_type_voices_string.yaml": (9, "voices", "expected list of string, got string"),
    "card_wrong_type_max_tokens_float.yaml": (32, "loops.thinker_decode.max_tokens", "expected integer, got number"),
    "card_wrong_type_max_tokens_bool.yaml": (38, "loops.talker_decode.max_tokens", "expected integer, got true/false"),
    "card_wrong_type_params_list.yaml": (24, "components.vocoder.params", "expected mapping of any value, got list"),
    "card_wrong_type_date.yaml": (5, "description", "expected string, got date"),
    "card_empty_string_model.yaml": (4, "model", "must not be empty"),
    "card_lone_surrogate.yaml": (4, "model", "lone surrogate"),
    # bounds: refused by declared minima and maxima before anything is allocated
    "card_negative_max_tokens.yaml": (32, "loops.thinker_decode.max_tokens", "must be at least 1, got -1"),
    "card_negative_d_model.yaml": (15, "components.thinker.params.d_model", "must be at least 8, got -64"),
    "card_negative_chunk_codes.yaml": (45, "loops.vocoder.chunk_codes", "must be at least 0"),
    "card_zero_sample_rate.yaml": (8, "sample_rate", "must be at least 8000"),
    "card_huge_max_tokens.yaml": (38, "loops.talker_decode.max_tokens", "must be at most 65536, got 1000000000000"),
    "card_huge_d_model.yaml": (15, "components.thinker.params.d_model", "must be at most 1024, got 1000000000"),
    "card_huge_max_positions.yaml": (19, "components.talker.params.max_positions", "must be at most 262144"),
    "card_huge_memory_budget.yaml": (48, "limits.memory_budget_mib", "must be at most 1048576"),
    "card_huge_num_layers.yaml": (24, "components.vocoder.params.num_layers", "must be at most 16"),
    "card_nan_temperature.yaml": (39, "loops.talker_decode.sampling.temperature", "finite number, got nan"),
    "card_inf_top_p.yaml": (39, "loops.talker_decode.sampling.top_p", "finite number, got inf"),
    "card_params_heads_mismatch.yaml": (15, "components.thinker.params.num_heads", "must split d_model 64 into heads of even size"),
    "card_params_min_above_max_codes.yaml": (20, "components.talker.params.min_codes_per_token", "must not exceed"),
    # the card's parts do not fit together
    "card_backend_import_path.yaml": (17, "components.talker.backend", "expected one of 'numpy' | 'hf'"),
    "card_mixed_backends.yaml": (11, "components", "share one backend"),
    "card_unknown_loop_kind.yaml": (41, "loops.vocoder.kind", "got 'beam_search'"),
    "card_unknown_work_unit.yaml": (43, "loops.vocoder.work_unit", "got 'frame'"),
    "card_work_unit_mismatch.yaml": (43, "loops.vocoder.work_unit", "runs 'audio_chunk' units"),
    "card_loop_kind_wrong_role.yaml": (29, "loops.thinker_decode.component", "cannot drive a thinker"),
    "card_loop_missing_component.yaml": (42, "loops.vocoder.component", "undeclared component 'codec2wav'"),
    "card_first_chunk_over_chunk.yaml": (46, "loops.vocoder.first_chunk_codes", "must be at most chunk_codes (10)"),
    "card_two_loops_one_component.yaml": (35, "loops.talker_decode.component", "already driven by loop 'thinker_decode'"),
    "card_duplicate_prompt_slot.yaml": (37, "loops.talker_decode.prompt_slot", "already the prompt slot"),
    "card_voice_default_not_in_voices.yaml": (47, "defaults.voice", "unknown voice (card voices: alto, tenor)"),
    "card_three_mistakes.yaml": (7, "seed", "must be at least 0, got -5"),
    "card_many_mistakes.yaml": (5, "seed", "expected integer, got string"),
    # programs: syntax and encoding
    "program_yaml_syntax_error.yaml": (14, "", "YAML syntax error"),
    "program_slot_kind_mismatch.yaml": (18, "nodes.7.inputs.0", "but op 'emit_audio' reads the chunks"),
    "program_yaml_syntax_bad_dash.yaml": (11, "", "YAML syntax error"),
    "program_empty.yaml": (1, "", "the file is empty"),
    "program_whitespace_only.yaml": (1, "", "the file is empty"),
    "program_top_level_list.yaml": (2, "", "expected a mapping, got list"),
    "program_nul_byte.yaml": (10, "", "NUL bytes"),
    "program_non_utf8.yaml": (4, "", "not valid UTF-8"),
    "program_binary_junk.yaml": (1, "", "not valid UTF-8"),
    "program_escape_sequence.yaml": (3, "", "U+001B is not allowed"),
    "program_python_object_new_tag.yaml": (11, "nodes.2", "python/object/new:os.system' is not allowed"),
    "program_python_name_tag.yaml": (12, "nodes.2.op", "python/name:builtins.print' is not allowed"),
    "program_alias.yaml": (11, "nodes.8", "anchors and aliases are not allowed"),
    "program_duplicate_key.yaml": (8, "program", "duplicate key"),
    "program_duplicate_key_in_node.yaml": (11, "nodes.2.id", "duplicate key"),
    # programs: schema
    "program_unknown_key_top.yaml": (8, "outputs", "unknown key"),
    "program_unknown_key_node.yaml": (11, "nodes.2.input", "unknown key (expected one of: id, inputs"),
    "program_missing_program.yaml": (4, "program", "missing required key"),
    "program_missing_nodes.yaml": (4, "nodes", "missing required key"),
    "program_missing_node_id.yaml": (11, "nodes.2.id", "missing required key"),
    "program_nodes_mapping.yaml": (8, "nodes", "expected list of mapping, got mapping"),
    "program_node_is_string.yaml": (11, "nodes.2", "expected a mapping, got string"),
    "program_inputs_string.yaml": (11, "nodes.2.inputs", "expected list of string, got string"),
    "program_id_wrong_type.yaml": (11, "nodes.2.id", "expected string, got integer"),
    "program_empty_id.yaml": (11, "nodes.2.id", "must not be empty"),
    "program_bad_mode_value.yaml": (16, "nodes.5.mode", "expected 'barrier' | 'stream'"),
    # programs: graph
    "program_duplicate_node_id.yaml": (13, "nodes.3.id", "duplicate node id 'thinker'"),
    "program_slot_produced_twice.yaml": (13, "nodes.3.output", "'thinker_out' is already produced by 'thinker'"),
    "program_output_shadows_input.yaml": (9, "nodes.0.output", "'text' is already produced by '<request>'"),
    "program_cycle.yaml": (13, "nodes.3", "cycle: thinker_to_talker -> talker -> thinker_to_talker"),
    "program_self_cycle.yaml": (16, "nodes.5", "cycle: talker_to_vocoder -> talker_to_vocoder"),
    "program_unknown_slot.yaml": (18, "nodes.7.inputs.0", "no node produces slot 'sound'"),
    "program_node_op_and_loop.yaml": (11, "nodes.2", "exactly one of `op` or `loop`"),
    "program_node_neither_op_nor_loop.yaml": (11, "nodes.2", "exactly one of `op` or `loop`"),
    # programs against the card and the op registry
    "program_unknown_op.yaml": (11, "nodes.2.op", "unknown op 'print_text'"),
    "program_op_import_path.yaml": (11, "nodes.2.op", "unknown op 'os.system'"),
    "program_unknown_loop.yaml": (14, "nodes.4.loop", "has no loop 'beam_decode'"),
    "program_loop_wrong_inputs.yaml": (14, "nodes.4.inputs", "reads its prompt slot 'talker_prompt'"),
    "program_loop_two_inputs.yaml": (10, "nodes.1.inputs", "reads its prompt slot 'thinker_prompt'"),
    "program_loop_no_output.yaml": (17, "nodes.6", "a loop node needs an `output` slot"),
    "program_loop_run_twice.yaml": (11, "nodes.2.loop", "'thinker_decode' is already run by another node"),
    "program_mode_on_non_handoff.yaml": (11, "nodes.2.mode", "'emit_text' is not a hand-off"),
    "program_mode_on_loop.yaml": (14, "nodes.4.mode", "`mode` is for hand-off ops"),
    "program_op_wrong_input_count.yaml": (11, "nodes.2.inputs", "'emit_text' takes 1 input(s)"),
    "program_op_output_on_emitter.yaml": (11, "nodes.2", "produces nothing (remove `output`)"),
    "program_requires_unknown_capability.yaml": (6, "requires", "lacks capability speech_to_text"),
    "program_input_not_request_slot.yaml": (7, "inputs.0", "a request fills only audio, images, text, not 'prompt'"),
    "program_three_mistakes.yaml": (9, "nodes.0.colour", "unknown key"),
    "program_many_mistakes.yaml": (2, "description", "missing required key"),
    "card_default_program_path.yaml": (47, "defaults.program", "names a shipped program"),
    # programs that wire without error but cannot speak right (issue 12)
    "program_vocoder_reads_thinker.yaml": (16, "nodes.5.inputs.0", "but op 'talker_to_vocoder' reads the tokens (and "
                                                                   "states) an ar_decode loop publishes (the talker's)"),
    "program_two_emit_audio.yaml": (19, "nodes.8", "a second 'emit_audio' node"),
    "program_no_emit_audio.yaml": (8, "nodes", "no 'emit_audio' node"),
    "program_no_nodes.yaml": (6, "nodes", "no 'emit_audio' node"),
}

THREE_MISTAKES = {  # file -> the keys of its three independent mistakes
    "card_three_mistakes.yaml": ["seed", "loops.thinker_decode.max_tokens", "defaults.speed"],
    "program_three_mistakes.yaml": ["nodes.0.colour", "nodes.2.inputs", "nodes.6.mode"],
}

def corpus() -> list[Path]:
    return sorted(CORPUS.glob("cards/*.yaml")) + sorted(CORPUS.glob("programs/*.yaml"))


def load_and_compile(path: Path):
    """A card with the good program, or a program with the good card: load + compile, as `omni` does."""
    if path.name.startswith("card"):
        return compile_program(load_card_file(str(path)), load_program_file(str(GOOD_PROGRAM)))
    return compile_program(load_card_file(str(GOOD_CARD)), load_program_file(str(path)))


def spec_error_of(path: Path) -> SpecError:
    try:
        load_and_compile(path)
    except SpecError as exc:
        return exc
    pytest.fail(f"{path.name} loaded and compiled without an error")


def test_corpus_is_large_and_every_file_has_an_expected_diagnosis():
    names = [p.name for p in corpus()]
    assert len(names) >= 40
    assert len([n for n in names if n.startswith("card_")]) >= 20
    assert len([n for n in names if n.startswith("program_")]) >= 20
    assert sorted(names) == sorted(EXPECTED), "corpus files and EXPECTED must list the same names"


def test_good_files_compile():
    compiled = compile_program(load_card_file(str(GOOD_CARD)), load_program_file(str(GOOD_PROGRAM)))
    assert set(compiled.loops) == {"thinker_decode", "talker_decode", "vocoder"}


@pytest.mark.parametrize("path", corpus(), ids=lambda p: p.name)
def test_bad_file_raises_one_spec_error_with_its_diagnosis(path: Path):
    exc = spec_error_of(path)  # any other exception type fails the test with its traceback
    first = exc.issues[0]
    line, key, message = EXPECTED[path.name]
    assert first.file == str(path)
    assert first.line == line, str(first)
    assert key in first.key and (key or first.key == ""), str(first)
    assert message in first.message, str(first)
    assert all(issue.file == str(path) for issue in exc.issues)
    assert all(issue.line is None or issue.line >= 1 for issue in exc.issues)
    # the CLI prints str(exc) as its one line: "file:line: key: message (and N more errors)"
    text = str(exc)
    assert "\n" not in text and "\r" not in text
    assert text.startswith(f"{path}:{line}:")


@pytest.mark.parametrize("name", sorted(THREE_MISTAKES))
def test_independent_mistakes_are_reported_at_once(name: str):
    kind = "cards" if name.startswith("card_") else "programs"
    exc = spec_error_of(CORPUS / kind / name)
    assert sorted(issue.key for issue in exc.issues) == sorted(THREE_MISTAKES[name])
    assert all(issue.line is not None for issue in exc.issues)
    assert str(exc).endswith("(and 2 more errors)")
    assert str(exc).count("\n") == 0


def test_a_key_with_a_line_break_keeps_the_error_on_one_line(tmp_path: Path):
    path = tmp_path / "card.yaml"
    path.write_text(GOOD_CARD.read_text() + '"max\\nbatch": 3\n')
    exc = spec_error_of(path)
    assert exc.issues[0].key == "max\nbatch"
    assert "\n" not in str(exc) and "max\\nbatch" in str(exc)


# problems with no place in a file: line None
def test_missing_file_has_no_line(tmp_path: Path):
    with pytest.raises(SpecError) as info:
        load_card_file(str(tmp_path / "nope.yaml"))
    assert info.value.issues[0].line is None
    assert "no such card file" in str(info.value)


def test_unreadable_file_has_no_line(tmp_path: Path):
    (tmp_path / "dir.yaml").mkdir()
    with pytest.raises(SpecError) as info:
        read_yaml(tmp_path / "dir.yaml")  # the catalog refuses non-files; read_yaml itself must not leak OSError
    assert info.value.issues[0].line is None
    assert "cannot read" in str(info.value)


def test_oversized_file_is_refused_before_parsing(tmp_path: Path):
    path = tmp_path / "huge.yaml"
    path.write_text(GOOD_CARD.read_text() + "#" * (1 << 20) + "\n")
    with pytest.raises(SpecError) as info:
        load_card_file(str(path))
    assert info.value.issues[0].line is None
    assert "over the 1048576-byte limit" in str(info.value)


def test_a_long_flat_list_is_refused_quickly(tmp_path: Path):
    # 500k values fit in 1 MiB; composing them takes pyyaml half a minute, counting events stops at the limit
    path = tmp_path / "card.yaml"
    path.write_text(GOOD_CARD.read_text().replace("voices: [alto, tenor]", "voices: [" + "a," * 500_000 + "]"))
    start = time.perf_counter()
    with pytest.raises(SpecError) as info:
        load_card_file(str(path))
    assert time.perf_counter() - start < 5
    voices_line = GOOD_CARD.read_text().splitlines().index("voices: [alto, tenor]") + 1
    assert (info.value.issues[0].line, info.value.issues[0].message) == (voices_line, "more than 20000 YAML values")


def test_binary_corpus_files_match_their_generator():
    spec = importlib.util.spec_from_file_location("make_binary", CORPUS / "make_binary.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for name, data in module.files().items():
        assert (CORPUS / name).read_bytes() == data, f"{name}: rerun tests/bad_specs/make_binary.py"
