"""A memory plan as one self-contained, interactive HTML page.

The page draws every buffer of a plan as a block: schedule steps on x, arena offset on y
(the picture `rlxir plan --plot` draws, made explorable). Hovering a block names the value,
its op, dtype, shape, bytes, lifetime and offset; the wheel zooms, a drag pans, and a
button resets the view. The lower bound (the most bytes live at one step) and the step
where it is reached are marked, with the live bytes of every step drawn as a line. A page
made from several plans (one per target) has a selector over them.

Everything the page needs is inside it: the plans as JSON in a ``<script
type="application/json">`` element, the drawing code and the styles inline, no font,
stylesheet or script fetched from anywhere, so the file can be mailed or archived and
opened offline. The template is ``plan_page.html`` next to this module, with the
script ``plan_page.js`` inlined into it.

Opened with the fragment ``#selftest`` (or ``#selftest=VALUE`` to pick the buffer), the
page checks itself once loaded and writes the result as JSON into ``<pre id="selftest">``:
the script errors caught, per plan the blocks drawn against the buffers it holds, the
hover text of one buffer (reached by a real mouse event at the block's centre) and the
details a click there pins, whether
the wheel zooms and the reset restores the view, and how long one full redraw took. A headless browser's
``--dump-dom`` reads it back, which is how the test suite checks the page.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib import resources

from rlxir.errors import RlxError
from rlxir.ir.graph import Graph
from rlxir.compiler.memory_plan import MemoryPlan, PlannedBuffer

# The order of a buffer's fields in the page's JSON (one array per buffer keeps the file small).
BUFFER_COLUMNS = ("name", "value", "op", "kind", "dtype", "shape", "bytes", "first", "last", "offset")

_DATA_MARKER = "{{PLAN_DATA}}"
_TITLE_MARKER = "{{TITLE}}"
_SCRIPT_MARKER = "{{SCRIPT}}"


def plan_page_entry(plan: MemoryPlan, graph: Graph, target: str, title: str = "") -> dict:
    """What the page shows of one plan: its headline numbers and every buffer.

    `graph` is the graph the plan was made from (the target's lowered graph), which names
    the op producing each value. A buffer's lifetime is given as its first and last step,
    both included (the plan's half-open ``[start, end)`` less one at the end).
    """
    peak_step, peak_bytes = live_peak(plan)
    return {
        "target": target,
        "graph": graph.name,
        "title": title or f"{graph.name} on {target}",
        "planner": plan.planner,
        "alignment": plan.alignment,
        "sizing": plan.sizing,
        "mode": plan.mode,
        "steps": plan.steps,
        "arena_bytes": plan.arena_bytes,
        "lower_bound_bytes": plan.lower_bound_bytes,
        "unshared_bytes": plan.unshared_bytes,
        "efficiency": round(plan.efficiency, 6),
        "peak_step": peak_step,
        "peak_bytes": peak_bytes,
        "side_buffers": dict(plan.side_buffers),
        "columns": list(BUFFER_COLUMNS),
        "buffers": [_buffer_row(buffer, graph) for buffer in plan.buffers],
    }


def live_peak(plan: MemoryPlan) -> tuple[int, int]:
    """The first step at which the most bytes are live together, and those bytes.

    The bytes are the plan's lower bound: no placement of these buffers is smaller.
    """
    steps = max(plan.steps, max((buffer.end for buffer in plan.buffers), default=0), 1)
    change = [0] * (steps + 1)
    for buffer in plan.buffers:
        change[buffer.start] += buffer.size
        change[buffer.end] -= buffer.size
    peak_step, peak_bytes, live = 0, 0, 0
    for step in range(steps):
        live += change[step]
        if live > peak_bytes:
            peak_step, peak_bytes = step, live
    return peak_step, peak_bytes


def render_plan_page(entries: Sequence[dict], title: str = "") -> str:
    """The page's HTML for one or more `plan_page_entry` results (one per target)."""
    if not entries:
        raise RlxError("a plan page needs at least one plan", expected="one entry per target planned")
    template = _page_template()
    heading = title or (entries[0]["title"] if len(entries) == 1 else f"{entries[0]['graph']}: memory plans")
    payload = {"title": heading, "plans": list(entries)}
    before, marker, after = template.partition(_DATA_MARKER)
    if not marker:
        raise RlxError("the plan page template has no place for the data", expected=f"{_DATA_MARKER} in plan_page.html")
    heading_html = _html_text(heading)
    # The title goes in around the data, never into it (a value name could spell the marker).
    return (before.replace(_TITLE_MARKER, heading_html) + _script_json(payload)
            + after.replace(_TITLE_MARKER, heading_html))


def _page_template() -> str:
    """plan_page.html with plan_page.js inlined (kept apart so each file reads on its own)."""
    package = resources.files("rlxir.cli")
    template = package.joinpath("plan_page.html").read_text(encoding="utf-8")
    script = package.joinpath("plan_page.js").read_text(encoding="utf-8")
    if "</script" in script.lower() or _SCRIPT_MARKER not in template:
        raise RlxError("the plan page's files do not fit together",
                       expected=f"plan_page.js without '</script' and {_SCRIPT_MARKER} in plan_page.html")
    return template.replace(_SCRIPT_MARKER, script)


def _buffer_row(buffer: PlannedBuffer, graph: Graph) -> list:
    dtype, shape = _dtype_and_shape(buffer.type)
    op = graph.op(buffer.value) if buffer.value in graph else "?"
    if buffer.kind == "workspace":
        op = f"{op} (workspace)"
    return [buffer.name, buffer.value, op, buffer.kind, dtype, shape, buffer.size, buffer.start,
            buffer.end - 1, buffer.offset]


def _dtype_and_shape(type_text: str) -> tuple[str, str]:
    """``f32[8, 128]`` -> (``f32``, ``[8, 128]``); a text without brackets is all dtype."""
    dtype, bracket, rest = type_text.partition("[")
    return dtype.strip(), (bracket + rest) if bracket else ""


def _script_json(payload: dict) -> str:
    """JSON that cannot end its ``<script>`` element early, whatever the value names hold."""
    text = json.dumps(payload, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _html_text(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


__all__ = ["BUFFER_COLUMNS", "live_peak", "plan_page_entry", "render_plan_page"]
