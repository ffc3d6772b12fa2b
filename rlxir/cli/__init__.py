"""The `rlxir` command line. `main()` is the console script's entry point."""

from rlxir.cli.main import main

__all__ = ["main"]
