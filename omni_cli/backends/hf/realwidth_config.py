"""The released Qwen2.5-Omni-3B and -7B shapes, with only the depth cut (no torch import).

Where each size comes from (config.json copies and transformers' defaults; no released file was downloaded):
- thinker text model: 7B = transformers 5.24 `Qwen2_5OmniTextConfig` defaults and the 7B thinker
  config.json copies on the Hub (e.g. VoiceNet/voiceclap-large: hidden 3584, intermediate 18944,
  vocab 152064); 3B = a 3B thinker config.json copy (OpenMOSS-Team/RoboOmni-LIBERO-Object: hidden 2048,
  intermediate 11008, 16 heads, 2 KV heads, audio output_dim 2048; vocab 151936 as Qwen2.5-3B).
- 7B talker: copies of the released config.json whose talker `_name_or_path` is "Qwen2.5-Omni-7B/talker"
  (ACE-Step/acestep-captioner, Duofu/EmotionThinker): embedding_size 3584, hidden_size 896,
  intermediate_size 18944, head_dim 128 - not the transformers defaults (hidden 3584, 28 layers).
  Its 24 layers, 12 heads and 4 KV heads were cut off in those excerpts: from our reading of the
  released file, not re-verified.
- 3B talker (embedding 2048, hidden 896, intermediate 4864, 24 layers, 14 heads, 2 KV heads, head_dim 64,
  M-RoPE sections [16, 16, 0]): not found in the searched corpora; from our reading of the released
  file, not re-verified. The width that matters for the hand-off (embedding_size = thinker hidden) is
  forced by the architecture.
- token2wav: DiT (hidden 1024, 22 layers, 16 heads, 64-dim heads, 8193 code embeddings, ECAPA speaker
  encoder 256..768 channels) and BigVGAN (1536 channels, upsample 5*3*2*2*2*2 = 240) are the
  transformers 5.24 defaults, which are the released ones.
- special ids: transformers' config defaults (audio 151646, image 151655, video 151656, audio bos/eos
  151647/151648, vision bos/eos 151652/151653, text tts pad/bos/eos 151859/151860/151861, codec pad/bos/
  eos/mask 8292/8293/8294/8296), the Qwen2 tokenizer's added tokens (151643 <|endoftext|> ...
  151645 <|im_end|> ... 151664), and spk_dict.pt's voice BOS ids 151870 (Chelsie) / 151871 (Ethan)
  (from our reading of the released spk_dict.pt, not re-verified).

Depth is cut to THINKER_LAYERS/TALKER_LAYERS/DIT_LAYERS per stack and the audio/vision encoders are
minimal (they are not used for text in, speech out); every other width is as released.
"""

from __future__ import annotations

import copy
from typing import Any

THINKER_LAYERS, TALKER_LAYERS, DIT_LAYERS = 2, 2, 2

# the Qwen2 tokenizer's added tokens, at their released ids
SPECIAL_TOKENS = {
    151643: "<|endoftext|>", 151644: "<|im_start|>", 151645: "<|im_end|>", 151646: "<|AUDIO|>",
    151647: "<|audio_bos|>", 151648: "<|audio_eos|>", 151649: "<|box_end|>", 151650: "<|quad_start|>",
    151651: "<|quad_end|>", 151652: "<|vision_bos|>", 151653: "<|vision_eos|>", 151654: "<|vision_pad|>",
    151655: "<|IMAGE|>", 151656: "<|VIDEO|>", 151657: "<tool_call>", 151658: "</tool_call>",
    151659: "<|fim_prefix|>", 151660: "<|fim_middle|>", 151661: "<|fim_suffix|>", 151662: "<|fim_pad|>",
    151663: "<|repo_name|>", 151664: "<|file_sep|>",
}
IM_END = 151645  # <|im_end|>: the thinker's EOS
VOICES = {"Chelsie": 151870, "Ethan": 151871}  # voice -> its text BOS id in spk_dict.pt
TEXT_PAD, TEXT_BOS, TEXT_EOS = 151859, 151860, 151861
CODEC_PAD, CODEC_BOS, CODEC_END, CODEC_MASK = 8292, 8293, 8294, 8296
MROPE = [16, 24, 24]  # the thinker's (and 7B talker's) M-RoPE sections over a 128-dim head

_IDS = {
    "audio_token_index": 151646, "image_token_index": 151655, "video_token_index": 151656,
    "audio_start_token_id": 151647, "audio_end_token_id": 151648,
    "vision_start_token_id": 151652, "vision_end_token_id": 151653,
}

_THINKER_TEXT = {
    "3b": {"vocab_size": 151936, "hidden_size": 2048, "intermediate_size": 11008,
           "num_attention_heads": 16, "num_key_value_heads": 2},
    "7b": {"vocab_size": 152064, "hidden_size": 3584, "intermediate_size": 18944,
           "num_attention_heads": 28, "num_key_value_heads": 4},
}
_TALKER = {
    "3b": {"embedding_size": 2048, "hidden_size": 896, "intermediate_size": 4864, "num_attention_heads": 14,
           "num_key_value_heads": 2, "head_dim": 64, "mrope": [16, 16, 0]},
    "7b": {"embedding_size": 3584, "hidden_size": 896, "intermediate_size": 18944, "num_attention_heads": 12,
           "num_key_value_heads": 4, "head_dim": 128, "mrope": MROPE},
}
VARIANTS = tuple(_THINKER_TEXT)


def _rope(sections: list[int]) -> dict[str, Any]:
    return {"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": list(sections)}


def real_width_config(variant: str) -> dict[str, Any]:
    """Keyword arguments of `Qwen2_5OmniConfig` for the `variant` ("3b" or "7b") at released widths."""
    if variant not in _THINKER_TEXT:
        raise ValueError(f"unknown variant {variant!r}: {', '.join(VARIANTS)}")
    text = dict(_THINKER_TEXT[variant])
    hidden = text["hidden_size"]
    talker = dict(_TALKER[variant])
    return copy.deepcopy({
        "enable_audio_output": True,
        "thinker_config": {
            **_IDS,
            "user_token_id": 872,
            "position_id_per_seconds": 25,
            "seconds_per_chunk": 2,
            # minimal encoders: text in, speech out never runs them; their outputs keep the thinker's width
            "audio_config": {"d_model": 32, "encoder_attention_heads": 2, "encoder_ffn_dim": 32, "encoder_layers": 1,
                             "num_mel_bins": 128, "output_dim": hidden},
            "vision_config": {"depth": 1, "hidden_size": 32, "intermediate_size": 32, "num_heads": 2,
                              "out_hidden_size": hidden, "fullatt_block_indexes": [0]},
            "text_config": {**text, "num_hidden_layers": THINKER_LAYERS, "max_position_embeddings": 32768,
                            "tie_word_embeddings": False, "rope_parameters": _rope(MROPE)},
        },
        "talker_config": {
            **_IDS,
            "vocab_size": 8448,
            "embedding_size": talker["embedding_size"],
            "hidden_size": talker["hidden_size"],
            "intermediate_size": talker["intermediate_size"],
            "num_hidden_layers": TALKER_LAYERS,
            "num_attention_heads": talker["num_attention_heads"],
            "num_key_value_heads": talker["num_key_value_heads"],
            "head_dim": talker["head_dim"],
            "max_position_embeddings": 32768,
            "rope_parameters": _rope(talker["mrope"]),
            "tts_text_pad_token_id": TEXT_PAD, "tts_text_start_token_id": TEXT_BOS, "tts_text_end_token_id": TEXT_EOS,
            "tts_codec_pad_token_id": CODEC_PAD, "tts_codec_start_token_id": CODEC_BOS,
            "tts_codec_end_token_id": CODEC_END, "tts_codec_mask_token_id": CODEC_MASK,
            "spatial_merge_size": 2,
        },
        "token2wav_config": {
            # released DiT widths, depth cut; the look-ahead/-behind layers move into the cut depth
            "dit_config": {"num_hidden_layers": DIT_LAYERS, "look_ahead_layers": [1], "look_backward_layers": [0],
                           "dropout": 0.0},
            "bigvgan_config": {},  # released: 1536 channels
        },
    })
