"""`rlxir opt` (run a pass pipeline) and `rlxir passes` (list passes)."""

from __future__ import annotations

import argparse
import json
import sys

from rlxir.cli import progress
from rlxir.cli.options import add_command, add_input_options, load_graph
from rlxir.cli.output_files import add_output_option, checked_output_file, output_directory, print_or_write
from rlxir.errors import RlxError
from rlxir.pass_machinery.instruments import DumpStages, PrintIR, Reproducer, TimePasses, VerifyEach
from rlxir.pass_machinery.pass_base import PassContext, available_passes, entry_point_problems, load_plugin, option_text_name
from rlxir.pass_machinery.pipeline import Pipeline, parse_pipeline
from rlxir.ir.printer import print_graph


def register(subparsers) -> None:
    opt = add_command(subparsers, "opt", run_opt, "run a pass pipeline on a graph",
                      epilog="example: rlxir opt model.rlx --pipeline 'unfuse,fuse{max-region=16},dce' --time-passes")
    add_input_options(opt)
    opt.add_argument("--pipeline", "-p", metavar="SPEC", required=True,
                     help="comma-separated passes with options, e.g. 'unfuse,legalize-or-rewrite{target=rocm},dce'")
    opt.add_argument("--target", metavar="T", help="the target passes use when their own target option is empty")
    add_output_option(opt, "the resulting IR")
    opt.add_argument("--print-before", metavar="PASS", action="append",
                     help="print the IR before PASS (repeatable; 'all' for every pass)")
    opt.add_argument("--print-after", metavar="PASS", action="append",
                     help="print the IR after PASS (repeatable; 'all' for every pass)")
    opt.add_argument("--print-changed", action="store_true",
                     help="with --print-after, print only when the pass changed the graph "
                          "(alone: print after every pass that changed it)")
    opt.add_argument("--time-passes", action="store_true", help="print a table of seconds and node counts per pass")
    opt.add_argument("--no-verify", action="store_true", help="do not verify the graph after each pass")
    opt.add_argument("--dump-dir", metavar="DIR", help="write the IR after each pass to DIR/NNN-<pass>.rlx")
    opt.add_argument("--reproducer-dir", metavar="DIR", help="where a failing pass's reproducer goes (default: a temp dir)")
    opt.add_argument("--plugin", metavar="MODULE", action="append", default=[],
                     help="import MODULE first so the passes it registers can be used (repeatable)")

    passes = add_command(subparsers, "passes", run_passes, "list the available passes and their options")
    passes.add_argument("--plugin", metavar="MODULE", action="append", default=[], help="import MODULE first")
    passes.add_argument("--json", action="store_true", help="print as JSON")


def _instruments(args: argparse.Namespace, pipeline_text: str) -> tuple[list, TimePasses | None]:
    instruments: list = [progress.PassProgress("opt", len(parse_pipeline(pipeline_text)))]
    if not args.no_verify:
        instruments.append(VerifyEach(check_claims=False))
    after = args.print_after or ("all" if args.print_changed else None)
    if args.print_before or after:
        instruments.append(PrintIR(before=args.print_before, after=after, only_changed=args.print_changed,
                                   stream=sys.stderr))
    if args.dump_dir:
        instruments.append(DumpStages(args.dump_dir))
    timer = TimePasses() if args.time_passes else None
    if timer is not None:
        instruments.append(timer)
    instruments.append(Reproducer(pipeline_text, args.reproducer_dir))
    return instruments, timer


def run_opt(args: argparse.Namespace) -> int:
    """Run the passes of --pipeline, in order, on a graph of FILE and print the result. The graph is
    verified after every pass (--no-verify turns that off). Diagnostics, IR dumps and timings go to
    stderr; the resulting IR goes to stdout or -o. If a pass fails, the IR as it was before that
    pass is written to a reproducer file whose path is printed."""
    _check_opt_outputs(args)
    for module in args.plugin:
        load_plugin(module)
    pipeline = parse_pipeline(args.pipeline)
    _check_printed_passes(args, pipeline)
    graph = load_graph(args)
    ctx = PassContext(target=_target(args.target))
    instruments, timer = _instruments(args, pipeline.text())
    result = pipeline.run(graph, ctx, instruments)
    if timer is not None:
        print(timer.table(), file=sys.stderr)
    print_or_write(args.output, print_graph(result))
    return 0


def _check_printed_passes(args: argparse.Namespace, pipeline: Pipeline) -> None:
    # A --print-before/--print-after name that no pass of the pipeline has would print nothing.
    names = pipeline.names()
    for flag, chosen in (("--print-before", args.print_before), ("--print-after", args.print_after)):
        for name in chosen or []:
            if name != "all" and name not in names:
                raise RlxError(f"{flag} {name}: the pipeline has no pass {name!r}",
                               expected="'all' or one of the pipeline's passes: " + ", ".join(dict.fromkeys(names)))


def _check_opt_outputs(args: argparse.Namespace) -> None:
    # Before any pass runs: a bad path should cost nothing, and a reproducer must have somewhere to go.
    if args.output:
        checked_output_file(args.output, "-o", [args.file], args.in_place)
    if args.dump_dir:
        output_directory(args.dump_dir, "--dump-dir")
    if args.reproducer_dir:
        output_directory(args.reproducer_dir, "--reproducer-dir")


def _target(name: str | None):
    if not name:
        return None
    from rlxir.targets.target import get_target

    return get_target(name)


def run_passes(args: argparse.Namespace) -> int:
    """List every pass (built-in, entry-point plugins and --plugin modules): its name, what it does,
    and its options with defaults."""
    for module in args.plugin:
        load_plugin(module)
    rows = []
    for name, cls in available_passes().items():
        options = [{"name": option_text_name(field.name), "default": field.default, "doc": field.metadata.get("doc", "")}
                   for field in cls.option_fields()]
        rows.append({"name": name, "summary": cls.summary(), "options": options, "module": cls.__module__})
    for problem in entry_point_problems():
        print(f"rlxir passes: warning: {problem}", file=sys.stderr)
    if args.json:
        print(json.dumps(rows, indent=2, default=str))
        return 0
    for row in rows:
        print(f"{row['name']:<22} {row['summary']}")
        for item in row["options"]:
            print(f"{'':<24}{item['name']}={_default_text(item['default'])}  {item['doc']}")
    return 0


def _default_text(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ":".join(str(item) for item in value)
    return str(value)
