"""`python -m rlxir`: the same command line as the `rlxir` script."""

from rlxir.cli import main

raise SystemExit(main())
