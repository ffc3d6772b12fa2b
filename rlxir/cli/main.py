"""Command dispatch, error rendering and exit codes.

Exit codes: 0 success; 1 the input was bad, or the compile was refused or over a known
budget (one diagnostic on stderr, never a traceback; a report is still printed); 2 usage
errors (argparse's own convention); 3 an internal error, a bug in rlxir. Set
``RLXIR_DEBUG=1`` to see the traceback of an internal error.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import os
import sys
import traceback

from rlxir import __version__
from rlxir.cli.options import UsageError
from rlxir.errors import RlxError
from rlxir.gcpause import fewer_collections

EXIT_OK, EXIT_REFUSED, EXIT_USAGE, EXIT_BUG = 0, 1, 2, 3

_DESCRIPTION = """\
rlxir runs the exact pass pipeline and memory planner of a backend on a model graph, so
the question "does this graph fit on that device, and at what batch?" gets a compiled
answer, not an estimate. Graphs are .rlx text files (see docs/language.md)."""


_MODULES = ("ir_commands", "pass_commands", "target_commands", "training_commands", "import_commands",
            "run_commands")
"""The modules of rlxir.cli that add subcommands, in help order."""

COMMANDS = {
    "check": "ir_commands", "print": "ir_commands", "ops": "ir_commands",
    "opt": "pass_commands", "passes": "pass_commands",
    "compile": "target_commands", "fit": "target_commands", "compare": "target_commands",
    "targets": "target_commands", "plan": "target_commands", "plan-csv": "target_commands",
    "grad": "training_commands", "import": "import_commands", "run": "run_commands",
}
"""Each subcommand and the module that adds it: a command line that names one imports only
that module (what `rlxir check` loads is what checking needs, not the compiler or the
executor); anything else (`--help`, a misspelt command) builds the whole parser."""


def _command_modules(command: str | None = None) -> list:
    # Each module adds its subcommands with `register(subparsers)`; order is help order.
    # Plain imports: a command module that fails to import is an error, not a missing command.
    names = (COMMANDS[command],) if command in COMMANDS else _MODULES
    return [importlib.import_module(f"rlxir.cli.{name}") for name in names]


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argument parser: with every subcommand, or (`command`) only those of its module."""
    parser = argparse.ArgumentParser(prog="rlxir", description=_DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"rlxir {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    subparsers.required = True
    for module in _command_modules(command):
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    arguments = sys.argv[1:] if argv is None else argv
    parser = build_parser(arguments[0] if arguments else None)
    args = parser.parse_args(arguments)
    try:
        # One raised collector threshold for the whole command (the parse, bind, pipeline and
        # plan turn the collector off themselves; rlxir/gcpause.py says why).
        with fewer_collections():
            code = args.run(args) or EXIT_OK
        if sys.stdout is not None:  # closed (>&-): what was printed is dropped, as print() does
            sys.stdout.flush()  # a full or failing standard output is reported here, not at exit
        return code
    except RlxError as error:
        print(error.render(), file=sys.stderr)
        return EXIT_REFUSED
    except UsageError as error:
        parser.exit(EXIT_USAGE, f"rlxir {args.command}: error: {error}\n")
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `rlxir print big.rlx | head` closes the pipe early; that is not an error.
        sys.stderr.close()
        return EXIT_OK
    except MemoryError:
        # The work needs more memory than this machine gives; the input is too large, not wrong.
        print(f"rlxir {args.command}: error: out of memory", file=sys.stderr)
        print("  expected: smaller inputs (a smaller batch or sequence), or a machine with more memory",
              file=sys.stderr)
        return EXIT_REFUSED
    except OSError as error:
        if error.filename is None and error.errno in _OUTPUT_ERRNOS:
            return _standard_output_failed(args.command, error)
        if error.filename is None:
            return _internal_error(error)
        # A file the command was pointed at cannot be read or written: the path is the input at fault.
        print(f"rlxir {args.command}: error: {error.filename}: {error.strerror or error}", file=sys.stderr)
        return EXIT_REFUSED
    except Exception as error:
        return _internal_error(error)


_OUTPUT_ERRNOS = {errno.ENOSPC, errno.EIO, errno.EFBIG, errno.EDQUOT, errno.EBADF}


def _standard_output_failed(command: str, error: OSError) -> int:
    """Standard output could not take the result (a full disk, /dev/full, a closed stream):
    say so (exit 1) and drop what is still buffered, so exit does not fail a second time."""
    print(f"rlxir {command}: error: cannot write standard output: {error.strerror or error}", file=sys.stderr)
    print("  expected: standard output on a device with space left, or -o FILE", file=sys.stderr)
    with contextlib.suppress(OSError, ValueError, AttributeError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return EXIT_REFUSED


def _internal_error(error: BaseException) -> int:
    """A bug in rlxir, not bad input: say so briefly (exit 3)."""
    if os.environ.get("RLXIR_DEBUG"):
        traceback.print_exception(error)
    else:
        print(f"rlxir: internal error: {type(error).__name__}: {error}\n"
              "(this is a bug in rlxir; run again with RLXIR_DEBUG=1 for the traceback)", file=sys.stderr)
    return EXIT_BUG


if __name__ == "__main__":
    sys.exit(main())
