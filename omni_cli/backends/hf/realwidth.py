"""Real-width random Qwen2.5-Omni checkpoints (3B and 7B shapes, depth cut) for tests and benchmarks.

Every width is as released (`realwidth_config.py` says where each size comes from): the 151,936 /
152,064-token thinker vocabulary and its hidden size, the talker narrower than its input embedding,
M-RoPE sections, the DiT and the 1,536-channel BigVGAN. Only the depth is cut. Weights are random,
saved sharded in bf16 with an index, with a `spk_dict.pt` in the released format and a character-level
tokenizer whose special tokens sit at the released ids.

Random weights never stop by themselves, so two things are set, both as a trained model does them:
- the talker stops once the thinker's text is spoken: the text PAD embedding (what the talker is fed
  after the reply's last token, as in Qwen's hand-off) is made large, and codec END's output row points
  along it. Any text, either mode, greedy or sampled: the talker ends a step or two after the reply.
- chat mode's greedy thinker ends its reply: lm_head rows are swapped so that the token it first
  emits at THINKER_STOP_AT becomes <|im_end|> (the trajectory before that step is unchanged).
torch and transformers are imported inside the functions only.

    python -m omni_cli.backends.hf.realwidth 3b DIR     # about 1.9 GB on disk; 7b: about 3.5 GB
"""

from __future__ import annotations

import string
import sys
from pathlib import Path

from . import realwidth_config as rw

# a released checkpoint ships its audio tower's feature extractor and its vision tower's image processor
from .tiny import save_feature_extractor, save_image_processor

PROMPT = "hello there"  # the chat prompt whose greedy reply is made to end
ECHO_TEXT = "hi there"  # 8 forced tokens: about 10 codec tokens, 0.4 s of audio
THINKER_STOP_AT = 4
PAD_DRIVE = 300.0  # norm of the talker's input for a text-PAD step: dominates its residual stream
END_GAIN = 0.5  # codec END's logit on such a step: about END_GAIN * sqrt(talker hidden) = 15


def save_tokenizer(directory: Path, words: set[str]) -> None:
    """A BPE over the released id space, specials at the released ids: characters, plus merges that make
    each of `words` one token (prompts about as long as with Qwen's tokenizer, ~45 tokens for the
    system turn, so a prefill costs what it would)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models
    from transformers import PreTrainedTokenizerFast

    chars = string.ascii_letters + string.digits + " \n.,!?'-:;"
    vocab = {char: i for i, char in enumerate(chars)}
    merges: list[tuple[str, str]] = []
    free = (i for i in range(len(chars), min(rw.SPECIAL_TOKENS)) if i != 872)
    for word in sorted(words | {" " + w for w in words} | {"user"}):  # " word": BPE's leading space
        for end in range(2, len(word) + 1):
            piece = word[:end]
            if piece not in vocab:
                vocab[piece] = 872 if piece == "user" else next(free)  # the thinker config's user_token_id
                merges.append((word[:end - 1], word[end - 1]))
    taken = set(vocab.values())
    vocab.update({f"<|extra_{i}|>": i for i in range(min(rw.SPECIAL_TOKENS)) if i not in taken})
    vocab.update({token: i for i, token in rw.SPECIAL_TOKENS.items()})
    tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges))
    tokenizer.decoder = decoders.Fuse()
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in rw.SPECIAL_TOKENS.values()])
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.save_pretrained(directory)


def build_real_width_checkpoint(directory: Path, variant: str = "3b", seed: int = 17) -> Path:
    """Writes the `variant` checkpoint to `directory` (created) and returns it."""
    from .loading import quiet_transformers

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    with quiet_transformers():  # the released ids lie outside the talker's vocabulary: transformers warns
        return _build(directory, variant, seed)


def _build(directory: Path, variant: str, seed: int) -> Path:
    import torch
    from transformers import AutoTokenizer, Qwen2_5OmniConfig, Qwen2_5OmniForConditionalGeneration

    from .params import ThinkerParams
    from .tokenizer import PromptBuilder

    config = Qwen2_5OmniConfig(**rw.real_width_config(variant))
    config.thinker_config.text_config.eos_token_id = rw.IM_END
    torch.manual_seed(seed)
    model = Qwen2_5OmniForConditionalGeneration(config).eval()
    with torch.no_grad():
        # what the checkpoint will hold: bf16-rounded weights (the trajectories below must be theirs)
        model.to(torch.bfloat16).float()
        _talker_stops_after_text(model)
        _bigvgan_at_speech_level(model)
    params = ThinkerParams()
    words = f"{params.system_prompt} {params.echo_instruction} system assistant".replace(",", " ").replace(".", " ")
    save_tokenizer(directory, set(words.split()))
    save_feature_extractor(directory, config.thinker_config.audio_config.num_mel_bins)
    save_image_processor(directory, config.thinker_config.vision_config, 3136, 12845056)  # the released bounds
    tokenizer = AutoTokenizer.from_pretrained(str(directory))
    prompt = PromptBuilder(tokenizer, params.system_prompt, params.echo_instruction).encode(PROMPT, "chat").prefill_ids
    with torch.no_grad():
        _thinker_ends_reply(model, prompt)
    spk = {name: {"bos_token": bos, "cond": torch.randn(1, config.token2wav_config.dit_config.enc_emb_dim),
                  "ref_mel": torch.randn(1, 100 + 7 * i, config.token2wav_config.dit_config.mel_dim)}
           for i, (name, bos) in enumerate(rw.VOICES.items())}
    torch.save(spk, directory / "spk_dict.pt")
    model.to(torch.bfloat16)
    model.config.dtype = torch.bfloat16
    model.save_pretrained(directory, max_shard_size="500MB")
    return directory


def _talker_stops_after_text(model) -> None:
    """Text PAD's embedding drives the talker along one direction, and codec END's row reads it."""
    import torch

    thinker_embed = model.thinker.get_input_embeddings().weight
    proj = model.talker.thinker_to_talker_proj
    pad = thinker_embed[rw.TEXT_PAD]
    drive = proj(pad[None])[0] - proj.bias
    pad.mul_(PAD_DRIVE / drive.norm())
    direction = proj(pad[None])[0]
    direction = direction / direction.norm()
    head = model.talker.codec_head.weight
    # ids past the DiT's codes (8193..8447: specials, unused) at logit 0: a trained talker never emits
    # them, and neither does this one (the top codes' logits are ~2), so generate can vocode every code
    head[model.token2wav.config.dit_config.num_embeds:] = 0.0
    head[rw.CODEC_END] = END_GAIN * direction
    assert torch.isfinite(head).all()


def _bigvgan_at_speech_level(model) -> None:
    """A random BigVGAN whispers at ~1e-7: scale its last conv to an RMS of about 0.1."""
    import torch

    t2w = model.token2wav
    dit = t2w.config.dit_config
    probe = t2w(torch.arange(20)[None] * 97 % 8192, conditioning=torch.randn(1, dit.enc_emb_dim),
                reference_mel=torch.randn(1, 60, dit.mel_dim), num_steps=2)
    t2w.code2wav_bigvgan_model.conv_post.weight.mul_(0.1 / probe.pow(2).mean().sqrt())


def _thinker_ends_reply(model, prompt_ids: list[int]) -> None:
    """Swap lm_head rows so that the greedy chat reply's first new token at THINKER_STOP_AT is <|im_end|>."""
    import torch

    im_end = rw.IM_END
    seq = model.thinker.generate(torch.tensor([prompt_ids]), max_new_tokens=THINKER_STOP_AT + 4,
                                 do_sample=False, eos_token_id=im_end)
    reply = seq[0, len(prompt_ids):].tolist()
    if im_end in reply:
        return  # it ends by itself
    avoid = set(rw.SPECIAL_TOKENS) | set(rw.VOICES.values()) | {rw.TEXT_PAD, rw.TEXT_BOS, rw.TEXT_EOS}
    for i in range(THINKER_STOP_AT, len(reply)):
        if reply[i] not in reply[:i] and reply[i] not in avoid:
            weight = model.thinker.lm_head.weight
            weight[[reply[i], im_end]] = weight[[im_end, reply[i]]].clone()
            return
    raise RuntimeError(f"no fresh token after step {THINKER_STOP_AT} in {reply}; pick another seed")


if __name__ == "__main__":
    if len(sys.argv) != 3 or sys.argv[1] not in rw.VARIANTS:
        sys.exit(f"usage: python -m omni_cli.backends.hf.realwidth {'|'.join(rw.VARIANTS)} DIR")
    print(build_real_width_checkpoint(Path(sys.argv[2]), sys.argv[1]))
