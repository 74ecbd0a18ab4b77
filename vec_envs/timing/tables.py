"""Numbers as text: one format for what was not measured, and Markdown tables, for every
report of the timing harness (the benchmark's, ``tune``'s).

Example:
    >>> print("\\n".join(markdown_table(["method", "steps/s"], [["raw", fmt(1234.5)]])))
    | method | steps/s |
    |---|---:|
    | raw | 1,234 |
    >>> fmt(float("nan")), fmt(ratio(3.0, 2.0), ".2f", "x"), fmt(ratio(1.0, 0.0))
    ('n/a', '1.50x', 'n/a')
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

__all__ = ["fmt", "ratio", "markdown_table"]


def fmt(value: float, spec: str = ",.0f", suffix: str = "") -> str:
    """``value`` formatted, or ``n/a`` for NaN (not measured)."""
    return "n/a" if math.isnan(value) else format(value, spec) + suffix


def ratio(a: float, b: float) -> float:
    """``a / b``; NaN when either was not measured (or ``b`` is 0)."""
    return a / b if b > 0 else float("nan")


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[str]], align: str = "") -> list[str]:
    """The lines of a Markdown table.

    Args:
        header: the column names.
        rows: the cells of each row, as text, one per column.
        align: ``l`` or ``r`` per column; default: the first left, the others right.

    Raises:
        ValueError: a row or ``align`` whose length is not the header's.
    """
    align = align or "l" + "r" * (len(header) - 1)
    if len(align) != len(header):
        raise ValueError(f"markdown_table(): align {align!r} has {len(align)} columns, the header "
                         f"{len(header)}")
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---:" if a == "r" else "---" for a in align) + "|"]
    for row in rows:
        if len(row) != len(header):
            raise ValueError(f"markdown_table(): row {list(row)} has {len(row)} cells, the header "
                             f"{len(header)}")
        lines.append("| " + " | ".join(row) + " |")
    return lines
