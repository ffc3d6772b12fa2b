"""What the conformance benches share: a time limit per case and the outcome table.

`time_limit(seconds)` raises `TimeLimit` in the block when it runs longer (SIGALRM, so the
main thread of a Unix process only); `outcome_table` prints one row per label with each
status's count and the pass share of the counted ones.
"""

from __future__ import annotations

import signal
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager


class TimeLimit(Exception):
    """A case ran past its time limit."""


def _expire(signum, frame):
    raise TimeLimit()


@contextmanager
def time_limit(seconds: int) -> Iterator[None]:
    previous = signal.signal(signal.SIGALRM, _expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def outcome_table(title: str, rows: Sequence[tuple[str, Counter]], statuses: Sequence[str],
                  counted: Sequence[str] | None = None, total_label: str = "cases", markdown: bool = False,
                  width: int = 28) -> str:
    """A row per label: the cases of `counted` statuses (all by default), each status, and
    the pass share of the counted cases; as Markdown when `markdown`."""
    counted = statuses if counted is None else counted

    def share(counts: Counter) -> tuple[int, float]:
        total = sum(counts[status] for status in counted)
        return total, (100.0 * counts["pass"] / total if total else 0.0)

    if markdown:
        lines = [f"| {title} | {total_label} | " + " | ".join(statuses) + " | pass % |",
                 "|---|---:|" + "---:|" * len(statuses) + "---:|"]
        for label, counts in rows:
            total, percent = share(counts)
            lines.append(f"| {label} | {total} | " + " | ".join(str(counts[status]) for status in statuses)
                         + f" | {percent:.1f} |")
        return "\n".join(lines)
    lines = [f"{title:<{width}} {total_label:>6} " + " ".join(f"{status:>9}" for status in statuses)
             + f" {'pass %':>7}"]
    for label, counts in rows:
        total, percent = share(counts)
        lines.append(f"{label:<{width}} {total:>6} " + " ".join(f"{counts[status]:>9}" for status in statuses)
                     + f" {percent:>6.1f}%")
    return "\n".join(lines)
