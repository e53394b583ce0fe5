"""The `omni` command line: typer + rich, the only layer that prints."""
