"""A tiny random Qwen3-Omni checkpoint (MoE thinker and talker, code predictor, Code2Wav) for tests.

Built from `Qwen3OmniMoeConfig` (qwen3_tiny_config.json: about 0.2 M parameters) with random weights rescaled so
that every stage's output varies, saved with `save_pretrained` beside the character-level tokenizer of the
Qwen2.5-Omni tiny checkpoint (tiny.py) with the role words as whole tokens. Its voices are the talker config's
`speaker_id`. torch and transformers are imported inside the functions only.

    python -m omni_cli.backends.hf.qwen3_tiny DIR     # writes a checkpoint to DIR
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

CONFIG_PATH = Path(__file__).with_name("qwen3_tiny_config.json")
PROMPT = "hello there"
THINKER_STOP_AT = 6  # the greedy thinker of the test prompt emits its EOS at this step
TALKER_STOP_AT = 14  # ... and the greedy talker codec EOS at (about) this frame
ROLE_WORDS = {"user": 6, "system": 180, "assistant": 181}  # the config's user/system/assistant token ids
SEED = 1


def build_tiny_checkpoint(directory: Path) -> Path:
    """Random weights whose greedy run of PROMPT stops by itself (see `_stop_by_themselves`). Writes nothing to
    stderr."""
    import warnings

    from .loading import quiet_transformers

    with quiet_transformers(), warnings.catch_warnings():
        # generate's note that its repetition penalty skips a prompt given as embeddings (the talker's)
        warnings.simplefilter("ignore", UserWarning)
        return _build(Path(directory))


def _build(directory: Path) -> Path:
    import torch
    from transformers import Qwen3OmniMoeConfig, Qwen3OmniMoeForConditionalGeneration

    from .tiny import save_feature_extractor, save_tokenizer

    config = Qwen3OmniMoeConfig(**json.loads(CONFIG_PATH.read_text()))
    torch.manual_seed(SEED)
    model = Qwen3OmniMoeForConditionalGeneration(config).eval()
    with torch.no_grad():
        # at the default init scale the tiny talker and code predictor repeat one code; larger weights make
        # their greedy codes vary, so code-level parity checks something. (Every matrix, the talker's stacked
        # experts included: transformers 5.24 leaves those uninitialised, whatever memory held before.)
        for weight in [*model.talker.parameters(), *model.thinker.get_input_embeddings().parameters()]:
            if weight.ndim >= 2:
                weight.normal_(0.0, 0.3)
        # the random audio tower's rows are ~1e-3 beside text embeddings of 0.3: larger weights make heard audio
        # reach the talker (which reads the thinker's hidden states at audio positions)
        for weight in model.thinker.model.audio_tower.parameters():
            if weight.ndim >= 2:
                weight.normal_(0.0, 0.3)
        # the random Code2Wav whispers at ~1e-6: bring it to speech level (RMS about 0.1)
        probe = model.code2wav(torch.arange(4 * 20).view(1, 4, 20) % 32)
        model.code2wav.decoder[-1].conv.weight.mul_(0.1 / probe.pow(2).mean().sqrt())
    directory.mkdir(parents=True, exist_ok=True)
    save_tokenizer(directory, config.thinker_config.text_config.vocab_size, ROLE_WORDS)
    save_feature_extractor(directory, config.thinker_config.audio_config.num_mel_bins)  # the audio tower's, to hear
    _stop_by_themselves(model, directory)
    model.save_pretrained(directory)
    return directory


def prompt_ids(directory: Path) -> list[int]:
    """The chat prompt of PROMPT as the card's thinker builds it."""
    from transformers import AutoTokenizer

    from .params import ThinkerParams
    from .tokenizer import PromptBuilder

    params = ThinkerParams()
    builder = PromptBuilder(AutoTokenizer.from_pretrained(str(directory)), params.system_prompt, params.echo_instruction)
    return builder.encode(PROMPT, "chat").prefill_ids


def _stop_by_themselves(model, directory: Path) -> None:
    """The thinker's EOS is a token it first emits at step THINKER_STOP_AT; unless the talker emits codec EOS by
    itself, codec_head rows are swapped so that its frame-TALKER_STOP_AT code becomes codec EOS (both trajectories
    are unchanged before that)."""
    import torch

    from .reference import talker_outputs
    from .tiny import _first_new_at, stop_talker_at

    config = model.config
    ids = torch.tensor([prompt_ids(directory)])
    reply = model.thinker.generate(ids, max_new_tokens=12, do_sample=False)[0, ids.shape[1]:].tolist()
    avoid = set(range(12)) | set(ROLE_WORDS.values()) | {197, 198, 199}
    eos = _first_new_at(reply, THINKER_STOP_AT, avoid)
    config.thinker_config.text_config.eos_token_id = eos
    model.thinker.generation_config.eos_token_id = eos

    model.code2wav.forward = lambda codes, **kwargs: torch.zeros(1, 1, 1)  # only the trajectories matter here
    try:
        with talker_outputs(model) as talker_runs:
            model.generate(ids, speaker="chelsie", thinker_max_new_tokens=12, thinker_eos_token_id=eos,
                           talker_max_new_tokens=TALKER_STOP_AT + 10, talker_do_sample=False)
    finally:
        del model.code2wav.forward
    end = int(config.talker_config.codec_eos_token_id)
    stop_talker_at(model.talker.codec_head.weight, talker_runs[-1].sequences[0].tolist(), TALKER_STOP_AT, {end},
                   {end}, end)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m omni_cli.backends.hf.qwen3_tiny DIR")
    print(build_tiny_checkpoint(Path(sys.argv[1])))
