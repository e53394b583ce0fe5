"""The tiny-checkpoint builder and loader write nothing to stderr (issue 18: ten transformers config warnings)."""

from __future__ import annotations

import logging

import pytest
from transformers.utils import logging as hf_logging

from omni_cli.backends.base import LoadStep
from omni_cli.backends.hf import build
from omni_cli.backends.hf.loading import talker_id_warnings_dropped


def test_building_the_tiny_checkpoint_writes_nothing_but_its_path(tiny_build):
    assert tiny_build.stderr == ""
    assert tiny_build.stdout.strip() == str(tiny_build.path)


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def transformers_records():
    """transformers' log records at WARNING and above, with its warn-once memory cleared."""
    hf_logging.warning_once.cache_clear()
    records = _Records()
    root = hf_logging.get_logger()
    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_warning()
    root.addHandler(records)
    yield records
    root.removeHandler(records)
    hf_logging.set_verbosity(level)


def test_loading_the_tiny_checkpoint_logs_no_warning(tiny_checkpoint, transformers_records):
    build(None, {}, {"model_path": str(tiny_checkpoint)})
    assert transformers_records.messages == []


def test_only_the_talker_thinker_id_warnings_are_dropped(transformers_records):
    logger = logging.getLogger("transformers.configuration_utils")
    dropped = ("Model config: tts_text_pad_token_id must be `None` or an integer within the vocabulary "
               "(between 0 and 127), got 197. This may result in unexpected behavior.")
    kept = ("Model config: pad_token_id must be `None` or an integer within the vocabulary "
            "(between 0 and 127), got 300. This may result in unexpected behavior.")
    with talker_id_warnings_dropped():
        logger.warning(dropped)
        logger.warning(kept)
        logger.warning("some other warning")
    logger.warning(dropped)  # outside the builder, nothing is dropped
    assert transformers_records.messages == [kept, "some other warning", dropped]


def test_loading_reports_each_phase_and_counts_every_weight(tiny_checkpoint):
    steps = []
    build(None, {}, {"model_path": str(tiny_checkpoint)}, on_load=steps.append)
    phases = list(dict.fromkeys(step.phase for step in steps))
    assert phases == ["importing torch and transformers", "building the model", "loading weights",
                      "loading the tokenizer", "building voices"]
    weights = [step for step in steps if step.phase == "loading weights"]
    from safetensors import safe_open

    with safe_open(str(tiny_checkpoint / "model.safetensors"), "pt") as stored:
        num_tensors = len(list(stored.keys()))
    assert {step.total for step in weights} == {num_tensors}
    assert weights[0].done == 0 and weights[-1].done == num_tensors
    assert [step.done for step in weights] == sorted(step.done for step in weights)
    assert steps[-1] == LoadStep("building voices", 2, 2, "voices")  # Chelsie and Ethan
