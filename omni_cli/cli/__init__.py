"""The `omni` command line: typer + rich, the only layer that prints.

File names: a module that defines a command is named after it (`speak`, `chat`, `bench`, `serve`, `trace`,
`rollout`; `catalog` holds `cards` and `programs`, the two listings); a subcommand with a module of its own is
`COMMAND_SUB` (`rollout_score`); every other module is named for what it is, words joined by `_` (`trace_file`,
`trace_reader`, `card_params`, `load_view`). `app` assembles the commands, `entry` is the console script.
"""
