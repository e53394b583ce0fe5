"""A tiny random Qwen2.5-Omni checkpoint (weights, tokenizer, spk_dict.pt) for tests and benchmarks.

No weights can be downloaded here, so the real-model path is exercised on this: the reference
config of about 1.1 M parameters, random weights rescaled so that every stage's output varies,
a character-level tokenizer, and a synthetic `spk_dict.pt` with two voices. torch and
transformers are imported inside the functions only.

    python -m omni_cli.backends.hf.tiny DIR     # writes a checkpoint to DIR
"""

from __future__ import annotations

import json
import string
import sys
from pathlib import Path
from typing import Any

CONFIG_PATH = Path(__file__).with_name("tiny_config.json")  # ~1.1 M parameters, builds and generates on CPU
VOICES = {"Chelsie": 190, "Ethan": 191}  # voice -> its text BOS token (a thinker id, as in real spk_dict.pt)
TALKER_STOP_AT = 40  # the greedy talker of the test prompt emits codec EOS at (about) this step
THINKER_STOP_AT = 6  # ... and the greedy thinker its EOS at (about) this step
PROMPT = "hello there"

# ids the tiny configs name: thinker/talker multimodal ids 1..8, text pad/bos/eos 197..199
SPECIAL_TOKENS = {
    0: "<|endoftext|>",
    1: "<|AUDIO|>",
    2: "<|IMAGE|>",
    3: "<|VIDEO|>",
    4: "<|audio_bos|>",
    5: "<|audio_eos|>",
    7: "<|vision_bos|>",
    8: "<|vision_eos|>",
    9: "<|im_start|>",
    10: "<|im_end|>",
    197: "<|tts_pad|>",
    198: "<|tts_bos|>",
    199: "<|tts_eos|>",
}


def save_tokenizer(directory: Path, vocab_size: int, words: dict[str, int] | None = None) -> None:
    """A character-level tokenizer (BPE without merges) with the chat template's special tokens; `words`
    (word -> id) are whole-word tokens besides (Qwen3-Omni's generate finds the roles by their ids)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models
    from transformers import PreTrainedTokenizerFast

    vocab = {token: i for i, token in SPECIAL_TOKENS.items()}
    vocab["user"] = 6  # the thinker config's user_token_id
    next_id = 11
    for char in string.ascii_letters + string.digits + " \n.,!?'-:;":
        vocab[char] = next_id
        next_id += 1
    taken = set(vocab.values())
    vocab.update({word: i for word, i in (words or {}).items() if word not in vocab})
    taken = set(vocab.values())
    vocab.update({f"<|extra_{i}|>": i for i in range(vocab_size) if i not in taken})
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tokenizer.decoder = decoders.Fuse()
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS.values()])
    tokenizer.add_tokens([AddedToken(word, normalized=False) for word in words or {}])
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.save_pretrained(directory)


def save_feature_extractor(directory: Path, num_mel_bins: int) -> None:
    """Whisper's log-mel settings at the audio tower's mel bins (preprocessor_config.json), as a checkpoint ships."""
    from transformers import WhisperFeatureExtractor

    WhisperFeatureExtractor(feature_size=num_mel_bins, sampling_rate=16000).save_pretrained(directory)


def save_image_processor(directory: Path, vision_config: Any, min_pixels: int, max_pixels: int) -> None:
    """The image half of the processor (Qwen2VLImageProcessor's settings at the vision tower's patch sizes), in
    the same preprocessor_config.json as the feature extractor's, as a released checkpoint ships it."""
    file = directory / "preprocessor_config.json"
    config = json.loads(file.read_text()) if file.is_file() else {}
    config.update({
        "image_processor_type": "Qwen2VLImageProcessor", "processor_class": "Qwen2_5OmniProcessor",
        "patch_size": vision_config.patch_size, "merge_size": vision_config.spatial_merge_size,
        "temporal_patch_size": vision_config.temporal_patch_size, "min_pixels": min_pixels, "max_pixels": max_pixels,
        "image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711],
    })
    file.write_text(json.dumps(config, indent=2) + "\n")


def _first_new_at(tokens: list[int], index: int, avoid: set[int]) -> int:
    """A token of `tokens` at or after `index` that does not occur before it (nor in `avoid`)."""
    for i in range(index, len(tokens)):
        if tokens[i] not in tokens[:i] and tokens[i] not in avoid:
            return tokens[i]
    raise RuntimeError(f"no fresh token after step {index} in {tokens}; pick another seed")


def build_tiny_checkpoint(directory: Path) -> Path:
    """Random weights whose greedy run of PROMPT stops by itself: the thinker's EOS is chosen as a token
    it first emits at step THINKER_STOP_AT; unless the talker emits codec EOS by itself, codec_head rows
    are swapped so that its step-TALKER_STOP_AT token becomes codec EOS (both trajectories are
    unchanged before that). Writes nothing to stderr: transformers' warnings about the talker's thinker
    ids are dropped (loading.talker_id_warnings_dropped), and its shard-writing bars are off."""
    from .loading import no_progress_bars, talker_id_warnings_dropped

    with talker_id_warnings_dropped(), no_progress_bars():
        return _build(directory)


def _build(directory: Path) -> Path:
    import torch
    from transformers import Qwen2_5OmniConfig

    from . import build

    config = Qwen2_5OmniConfig(**json.loads(CONFIG_PATH.read_text()))
    model, spk = _random_model(config)
    directory.mkdir(parents=True, exist_ok=True)
    save_tokenizer(directory, config.thinker_config.text_config.vocab_size)
    save_feature_extractor(directory, config.thinker_config.audio_config.num_mel_bins)
    vision = config.thinker_config.vision_config
    side = vision.patch_size * vision.spatial_merge_size
    save_image_processor(directory, vision, 4 * side * side, 64 * side * side)  # 4 to 64 positions a picture
    torch.save(spk, directory / "spk_dict.pt")
    model.save_pretrained(directory)

    # the thinker, run greedily through our own components, picks its EOS
    settings = {"model_path": str(directory), "codec_bos_pad_in_prefill": False}
    # only the thinker's prompt is used: the vocoder loads eager, with nothing compiled into the cache for it
    parts = build(None, {"vocoder": {"dit_ahead_of_time": False, "bigvgan_ahead_of_time": False}}, settings)
    ids = parts["thinker"].encode(PROMPT, "chat").prefill_ids
    model.speaker_map = spk
    # only the thinker and talker trajectories matter here: skip the waveform
    model.token2wav.forward = lambda *args, **kwargs: torch.zeros(1)
    seq = model.thinker.generate(torch.tensor([ids]), max_new_tokens=12, do_sample=False)
    reply = seq[0, len(ids) :].tolist()
    eos = _first_new_at(reply, THINKER_STOP_AT, set(SPECIAL_TOKENS) | set(VOICES.values()))
    config.thinker_config.text_config.eos_token_id = eos
    model.thinker.generation_config.eos_token_id = eos
    _stop_the_talker(model, config, ids)
    del model.token2wav.forward
    model.save_pretrained(directory)
    return directory


def _random_model(config: Any) -> tuple[Any, dict]:
    """The model's random weights, scaled so its parts do something checkable, and the voices' speaker
    entries: drawn in this order from one seed, so every build is the same checkpoint."""
    import torch
    from transformers import Qwen2_5OmniForConditionalGeneration

    torch.manual_seed(1236)  # a seed whose greedy thinker reply has a fresh token at step 6
    model = Qwen2_5OmniForConditionalGeneration(config).eval()
    with torch.no_grad():
        # at the default init scale the tiny talker collapses onto one repeated code; larger weights
        # make its greedy codes vary, so code-level parity checks something
        for weight in model.talker.parameters():
            if weight.ndim == 2:
                weight.normal_(0.0, 0.3)
        # text embeddings at the talker's scale, so the text EOS/PAD and voice BOS vectors of the
        # hand-off steer its codes (at 0.02 they would not, and a wrong pairing could pass unseen)
        model.thinker.get_input_embeddings().weight.normal_(0.0, 0.3)
        # ... and the random BigVGAN whispers at ~1e-7: bring it to speech level (RMS about 0.1)
        probe = model.token2wav(
            torch.arange(40)[None] % 100, conditioning=torch.randn(1, 16), reference_mel=torch.randn(1, 30, 80)
        )
        model.token2wav.code2wav_bigvgan_model.conv_post.weight.mul_(0.1 / probe.pow(2).mean().sqrt())
    spk = {
        name: {"bos_token": bos, "cond": torch.randn(1, 16), "ref_mel": torch.randn(1, 30 + 7 * i, 80)}
        for i, (name, bos) in enumerate(VOICES.items())
    }
    return model, spk


def _stop_the_talker(model: Any, config: Any, ids: list[int]) -> None:
    """Greedy generate's talker codes for the prompt: where it does not stop by itself, its codec head is
    changed so that it stops at TALKER_STOP_AT (the first fresh code there swapped with the end code)."""
    import torch

    from .reference import talker_outputs

    talker_cfg = config.talker_config
    talker_eos = [talker_cfg.tts_codec_pad_token_id, talker_cfg.tts_codec_end_token_id]
    with talker_outputs(model) as talker_runs:
        model.generate(
            torch.tensor([ids]),
            speaker="Chelsie",
            thinker_max_new_tokens=12,
            talker_max_new_tokens=TALKER_STOP_AT + 20,
            talker_do_sample=False,  # greedy: no sampling knobs (set, transformers warns they are ignored)
            talker_top_k=None,
            talker_top_p=None,
            talker_temperature=None,
            talker_eos_token_id=talker_eos,
        )
    codes = talker_runs[-1][0, len(ids) + 2 :].tolist()
    prefill_codes = {talker_cfg.tts_codec_mask_token_id, *talker_eos, talker_cfg.tts_codec_start_token_id}
    stop_talker_at(model.talker.codec_head.weight, codes, TALKER_STOP_AT, set(talker_eos), prefill_codes,
                   talker_cfg.tts_codec_end_token_id)


def stop_talker_at(head_weight: Any, codes: list[int], step: int, ends: set[int], avoid: set[int], end: int) -> None:
    """A greedy talker whose `codes` do not stop by themselves is made to stop at `step`: the first fresh code
    there swaps rows with `end` in its codec head. One that stops by itself before step / 2 is refused."""
    import torch

    stops = [i for i, code in enumerate(codes) if code in ends]
    if stops:  # the talker stops by itself
        if stops[0] < step // 2:
            raise RuntimeError(f"the talker stops too early: {codes}; pick another seed")
        return
    fresh = _first_new_at(codes, step, avoid)
    with torch.no_grad():
        head_weight[[fresh, end]] = head_weight[[end, fresh]].clone()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python -m omni_cli.backends.hf.tiny DIR")
    print(build_tiny_checkpoint(Path(sys.argv[1])))
