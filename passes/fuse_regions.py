"""Elementwise regions for `fuse`: maximal single-consumer chains -> one `fused_elementwise`.

A region grows backwards from its root (the value the rest of the graph reads): an operand
joins when it is an elementwise op (an existing `fused_elementwise` counts with all its
steps, inlined), every read of it comes from one region member and it is not a graph
output — so no intermediate has to exist outside the kernel — and the region stays within
the caps (steps; distinct inputs). Regions of one step are left alone.

The root is rewritten in place into the region (`Graph.rewrite_in_place`: its name, type
and readers stay) and the other members are erased. That is always valid: members form a
tree under the root (each has one consumer, inside the region), and every region input is
defined before the member reading it, hence before the root.

Chain order: members in schedule order. Input order: first use, scanning the chain's
steps in order and each step's arguments left to right — the same graph always gives the
same text.
"""

from __future__ import annotations

from rlxir.ir.graph import Graph
from rlxir.ops import get_op
from rlxir.ops.chain import ChainStep, format_chain, parse_chain


class _ElementwiseOps(dict):
    """op name -> whether it is elementwise (False for inputs, params and consts), looked up
    in the registry once per op name for one run of `fuse_regions`."""

    def __missing__(self, op: str) -> bool:
        opdef = get_op(op)
        self[op] = answer = opdef is not None and opdef.has("elementwise")
        return answer


def grow_region(graph: Graph, root: str, max_steps: int, max_inputs: int, elementwise: _ElementwiseOps) -> set[str]:
    """The members of the region rooted at `root` (greedy, operands left to right, depth first);
    `elementwise` is the run's answers of which ops are elementwise."""
    nodes = graph.data_by_name()
    outputs = graph.outputs
    readers_of = graph.readers_by_name()
    region = {root}
    root_data = nodes[root]
    steps = _steps_of(root_data)
    inputs = set(root_data.operands)
    pending = list(reversed(root_data.operands))
    while pending:
        candidate = pending.pop()
        if candidate in region:
            continue
        data = nodes[candidate]
        if not elementwise[data.op]:
            continue
        # every read of the candidate is by one region member, and it is no graph output
        readers = readers_of[candidate]
        if len(readers) != 1 or candidate in outputs:
            continue
        (reader,) = readers
        if reader not in region:
            continue
        grown_steps = steps + _steps_of(data)
        operands = data.operands
        grown_inputs = (inputs - {candidate}) | set(operands)
        if grown_steps > max_steps or len(grown_inputs) > max_inputs:
            continue
        region.add(candidate)
        steps, inputs = grown_steps, grown_inputs
        pending.extend(reversed(operands))
    return region


def _steps_of(data) -> int:
    """How many chain steps a node brings to a region, from its data record."""
    return len(parse_chain(data.attrs["chain"])) if data.op == "fused_elementwise" else 1


def region_chain(graph: Graph, members: list[str], texts: dict) -> tuple[list[str], str]:
    """(inputs, chain text) computing the last of `members` (given in schedule order).

    `texts` holds a `fuse_regions` run's chains by their members' (op, attributes object,
    arguments): a model's layers repeat the same regions, and each distinct one is written
    once. The memo holds the attribute objects, so no id in a key is reused."""
    nodes = graph.data_by_name()
    inputs: list[str] = []
    input_index: dict[str, int] = {}
    result_step: dict[str, int] = {}  # member -> index of the step holding its result
    shape: list[tuple] = []  # per member: (op, attributes object, arguments, step offset)
    step_count = 0

    def argument(value: str) -> tuple:
        if value in result_step:
            return ("%", result_step[value])
        if value not in input_index:
            input_index[value] = len(inputs)
            inputs.append(value)
        return ("$", input_index[value])

    for member in members:
        data = nodes[member]
        operands = tuple([argument(value) for value in data.operands])
        shape.append((data.op, data.attrs, operands, step_count))
        step_count += _steps_of(data)
        result_step[member] = step_count - 1
    key = tuple([(op, id(attributes), operands) for op, attributes, operands, _ in shape])
    known = texts.get(key)
    if known is None:
        known = texts[key] = (_chain_text(shape), [attributes for _, attributes, _, _ in shape])
    return inputs, known[0]


def _chain_text(shape: list[tuple]) -> str:
    steps: list[ChainStep] = []
    for op, attributes, operands, offset in shape:
        if op == "fused_elementwise":
            for step in parse_chain(attributes["chain"]):
                args = tuple(operands[ref] if kind == "$" else ("%", offset + ref) for kind, ref in step.args)
                steps.append(ChainStep(step.op, args, step.attrs))
        else:
            schema = get_op(op).attributes
            steps.append(ChainStep(op, operands, tuple((key, value) for key, value in attributes.items()
                                                       if key in schema)))
    return format_chain(steps)


def fuse_regions(graph: Graph, max_steps: int, max_inputs: int) -> int:
    """Replace every maximal region of two or more steps by one `fused_elementwise` node;
    returns how many regions were made. One walk from the end of the schedule."""
    schedule = graph.schedule()
    nodes = graph.data_by_name()
    elementwise = _ElementwiseOps()
    texts: dict = {}
    made = 0
    for root in reversed(schedule):
        data = nodes.get(root)
        if data is None or not elementwise[data.op]:
            continue
        region = grow_region(graph, root, max_steps, max_inputs, elementwise)
        if len(region) < 2:
            continue
        members = graph.in_schedule_order(region)
        inputs, chain = region_chain(graph, members, texts)
        provenance = tuple(dict.fromkeys(item for member in members for item in nodes[member].provenance))
        # The root (last in schedule order) becomes the region, under its own name; the
        # other members were read only inside the region.
        graph.rewrite_in_place(root, "fused_elementwise", inputs, {"chain": chain}, provenance=provenance)
        for member in reversed(members[:-1]):
            graph.erase(member)
        made += 1
    return made
