"""The card `omni` and `omni_cli.api` use when none is named (no imports: `omni --help` stays fast)."""

# The Piper voice: a first `omni speak` says words a person (and a recogniser) understands. The toy
# card (random tiny nets shaped like Qwen2.5-Omni) is for tests and for showing the runtime.
DEFAULT_CARD = "piper_joe"
CARD_ENV = "OMNI_CARD"  # overrides DEFAULT_CARD for the command line
