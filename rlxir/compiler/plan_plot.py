"""Draw a `MemoryPlan`: time on x, arena offset on y, one rectangle per buffer.

Needs matplotlib (the optional extra ``plot``: ``pip install 'rlxir[plot]'``).
"""

from __future__ import annotations

from rlxir.targets.devices import format_bytes
from rlxir.errors import RlxError

KIND_COLOURS = {
    "input": "#4c72b0", "param": "#8172b2", "const": "#937860", "activation": "#55a868",
    "output": "#c44e52", "workspace": "#dd8452",
}


def plot_formats() -> set[str]:
    """The file extensions matplotlib can write (png, pdf, svg, ...)."""
    _matplotlib()
    from matplotlib.backend_bases import FigureCanvasBase

    return set(FigureCanvasBase.get_supported_filetypes())


def _matplotlib() -> None:
    try:
        import matplotlib
    except ImportError:
        raise RlxError("drawing a plan needs matplotlib", expected="pip install 'rlxir[plot]'") from None
    matplotlib.use("Agg")


def draw_plan(plan, path, title: str = "", image_format: str | None = None) -> None:
    """Draw `plan` to `path` (a file name, or a binary handle with `image_format` given)."""
    _matplotlib()
    import matplotlib.pyplot as plt
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Patch, Rectangle

    figure, axes = plt.subplots(figsize=(11, 6))
    rectangles = [Rectangle((buffer.start, buffer.offset), buffer.end - buffer.start, buffer.size)
                  for buffer in plan.buffers]
    colours = [KIND_COLOURS.get(buffer.kind, "#999999") for buffer in plan.buffers]
    axes.add_collection(PatchCollection(rectangles, facecolor=colours, edgecolor="black", linewidth=0.2, alpha=0.85))
    axes.axhline(plan.arena_bytes, color="black", linestyle="-", linewidth=1.2,
                 label=f"arena {format_bytes(plan.arena_bytes)}")
    axes.axhline(plan.lower_bound_bytes, color="red", linestyle="--", linewidth=1.0,
                 label=f"lower bound {format_bytes(plan.lower_bound_bytes)}")
    axes.set_xlim(0, max(plan.steps, 1))
    axes.set_ylim(0, max(plan.arena_bytes, 1) * 1.05)
    axes.set_xlabel("schedule step")
    axes.set_ylabel("arena offset (bytes)")
    axes.set_title(title or f"{plan.planner} plan: {len(plan.buffers)} buffers, efficiency {plan.efficiency:.1%}")
    kinds = sorted({buffer.kind for buffer in plan.buffers})
    handles = [Patch(facecolor=KIND_COLOURS.get(kind, "#999999"), label=kind) for kind in kinds]
    axes.legend(handles=handles + axes.get_legend_handles_labels()[0], loc="upper right", fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120, format=image_format)
    plt.close(figure)
