"""The examples each command's `--help` ends with (click's epilog): two or three each, as `llm` and `gh` end theirs."""

from __future__ import annotations


def epilog(*lines: str) -> str:
    """An "Examples:" paragraph that click prints as written (the \\b keeps its lines unwrapped: each line,
    indented four columns, must fit 80, which tests/cli/test_fit_columns.py checks)."""
    return "\b\nExamples:\n" + "\n".join(f"  {line}" for line in lines)


ROOT = epilog('omni speak "Hello, world" -o hello.wav',
              'omni trace "Hello, world"',
              "omni cards list")
SPEAK = epilog('omni speak "Hello, world" -o hello.wav',
               "printf 'One.\\nTwo.\\n' | omni speak - -o out/ --json",
               'omni speak "Hello" -o - | aplay          # streaming WAV to a player',
               'omni speak "Hello" -o hi.wav --server http://127.0.0.1:8000')
CHAT = epilog("omni chat -c qwen2_5_omni_toy --audio question.wav -o answer.wav",
              "arecord -r 16000 -f S16_LE | omni chat -c qwen2_5_omni_toy -a - -o - | aplay",
              'omni chat -c qwen2_5_omni_toy --image photo.png "What is this?" -o seen.wav',
              'omni chat -c qwen2_5_omni_toy --video clip.mp4 "What happens?" -o w.wav',
              "omni chat -c qwen2_5_omni_toy -a q.wav --history talk.jsonl -o a1.wav",
              'omni chat -c qwen2_5_omni_toy "And then?" --history talk.jsonl -o a2.wav',
              "omni chat -c qwen2_5_omni_toy --history talk.jsonl -o - | aplay   # typed")
BENCH = epilog("omni bench",
               "omni bench --requests 16 --concurrency 8 --json",
               "omni bench -c qwen2_5_omni --model-path ./tiny-omni --reference --rounds 3")
SERVE = epilog("omni serve                      # the default voice, on port 8000",
               "curl -s localhost:8000/v1/audio/speech -H 'Content-Type: application/json' \\",
               """  -d '{"model": "piper_joe", "input": "Hello"}' -o hello.mp3""",
               "omni serve -c qwen2_5_omni_toy --port 0    # the toy card, a free port")
TRACE = epilog('omni trace "Hello, world"                  # run it and draw the timeline',
               'omni speak "Hello" -o hi.wav --trace t.jsonl && omni trace show t.jsonl',
               "omni trace export t.jsonl --chrome -o t.json   # open it in ui.perfetto.dev")
TRACE_RUN = epilog('omni trace run "Hello, world"',
                   'omni trace run "Hello" -c qwen2_5_omni_toy --handoff barrier')
TRACE_SHOW = epilog('omni speak "Hello" -o hi.wav --trace t.jsonl',
                    "omni trace show t.jsonl")
TRACE_EXPORT = epilog("omni trace export t.jsonl --chrome -o t.json",
                      "omni trace export t.jsonl --chrome -o - | head -c 200")
CARDS = epilog("omni cards list",
               "omni cards show piper_joe --params",
               "omni cards validate my_card.yaml")
CARDS_LIST = epilog("omni cards list",
                    "OMNI_CARD=qwen2_5_omni_toy omni cards list   # the default follows OMNI_CARD")
CARDS_SHOW = epilog("omni cards show piper_joe",
                    "omni cards show qwen2_5_omni --params",
                    "omni cards show qwen2_5_omni --params --set loops.vocoder.chunk_codes=48")
CARDS_VALIDATE = epilog("omni cards validate",
                        "omni cards validate my_card.yaml other.yaml",
                        "omni cards validate qwen2_5_omni --set loops.vocoder.chunk_codes=48")
PROGRAMS = epilog("omni programs list",
                  "omni programs show speak",
                  "omni programs validate my_program.yaml")
PROGRAMS_LIST = epilog("omni programs list",
                       "omni programs show speak_sentences")
PROGRAMS_SHOW = epilog("omni programs show speak",
                       "omni programs show ./my_program.yaml")
PROGRAMS_VALIDATE = epilog("omni programs validate",
                           "omni programs validate my_program.yaml --card qwen2_5_omni")
ROLLOUT = epilog("omni rollout prompts.txt --samples 8 --out runs/a/",
                 "omni rollout score runs/a/            # recompute them: they must match",
                 "omni rollout score runs/a/ -c new.yaml -o runs/b/   # new weights")
ROLLOUT_RUN = epilog("omni rollout run prompts.txt --samples 8 --out runs/a/",
                     "printf 'Hello\\n' | omni rollout run - -k 2 -o runs/b/")
ROLLOUT_SCORE = epilog("omni rollout score runs/a/",
                       "omni rollout score runs/a/ -c new.yaml -o runs/b/")
