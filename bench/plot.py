"""Draw the benchmark chart of the docs from ``make bench`` results: one row per target, the
range of ratios measured over the runs as a bar, the target as a line, in an SVG a person
reads at a glance (green: every run met the target; amber: some did not).

    python bench/plot.py                               # history.json -> docs/explanation/performance.svg
    python bench/plot.py --add bench/results/last-run.json   # fold in the run make bench just wrote

Standard library only (no plotting package): the SVG is written by hand, deterministically, so
the committed chart changes only when the figures do.
"""

from __future__ import annotations

import argparse
import html
import json
import math
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
HISTORY = HERE / "results" / "history.json"
CHART = HERE.parent / "docs" / "explanation" / "performance.svg"

ROW_HEIGHT, LABEL_WIDTH, PLOT_WIDTH, MARGIN = 34, 400, 420, 16


def fold(history: dict[str, Any], run: dict[str, Any]) -> None:
    """Widen each row's range with the run's ratio and count the run (rows the history has)."""
    rows = {row["row"]: row for row in history["rows"]}
    for new in run["rows"]:
        row = rows.get(new["row"])
        if row is None or new.get("ratio") is None:
            continue
        row["low"] = round(min(row["low"], new["ratio"]), 3)
        row["high"] = round(max(row["high"], new["ratio"]), 3)
        row["runs"] += 1
        row["met"] += 1 if new.get("met") else 0


def _x(value: float, low: float, high: float) -> float:
    """Position on a log scale (ratios above and below 1 read alike)."""
    span = math.log(high) - math.log(low)
    return LABEL_WIDTH + PLOT_WIDTH * (math.log(value) - math.log(low)) / span


def svg(history: dict[str, Any]) -> str:
    rows = history["rows"]
    values = [v for row in rows for v in (row["low"], row["high"], row["limit"])]
    low, high = min(values) / 1.3, max(values) * 1.3
    height = MARGIN * 2 + 40 + ROW_HEIGHT * len(rows)
    width = LABEL_WIDTH + PLOT_WIDTH + 120
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
        '<rect width="100%" height="100%" fill="white"/>',
        f'<text x="{MARGIN}" y="{MARGIN + 4}" font-size="14" font-weight="bold">'
        "mcp_lite as a ratio: the range over the runs, and the target</text>",
    ]
    top = MARGIN + 30
    for tick in (0.1, 0.2, 0.5, 1, 2, 5):
        if low <= tick <= high:
            x = _x(tick, low, high)
            out.append(f'<line x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" '
                       f'y2="{height - MARGIN}" stroke="#ddd"/>')
            out.append(f'<text x="{x:.1f}" y="{top - 10}" text-anchor="middle" '
                       f'fill="#666">{tick:g}x</text>')
    for n, row in enumerate(rows):
        y = top + n * ROW_HEIGHT + ROW_HEIGHT / 2
        every = row["met"] == row["runs"]
        colour = "#2e7d32" if every else "#ef8f00"
        x0, x1 = _x(row["low"], low, high), _x(row["high"], low, high)
        xt = _x(row["limit"], low, high)
        label = html.escape(row["row"])
        out.append(f'<text x="{MARGIN}" y="{y + 4:.1f}">{label}</text>')
        out.append(f'<rect x="{x0:.1f}" y="{y - 7:.1f}" width="{max(x1 - x0, 2):.1f}" '
                   f'height="14" rx="3" fill="{colour}" opacity="0.8"/>')
        out.append(f'<line x1="{xt:.1f}" y1="{y - 12:.1f}" x2="{xt:.1f}" y2="{y + 12:.1f}" '
                   'stroke="black" stroke-width="2" stroke-dasharray="3,2"/>')
        out.append(f'<text x="{LABEL_WIDTH + PLOT_WIDTH + 8}" y="{y + 4:.1f}" '
                   f'fill="{colour}">{html.escape(row["target"])}: '
                   f'{row["met"]}/{row["runs"]}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--add", type=Path, help="a last-run.json written by make bench")
    parser.add_argument("--history", type=Path, default=HISTORY)
    parser.add_argument("--out", type=Path, default=CHART)
    args = parser.parse_args(argv)
    history = json.loads(args.history.read_text())
    if args.add:
        fold(history, json.loads(args.add.read_text()))
        args.history.write_text(json.dumps(history, indent=1) + "\n")
    args.out.write_text(svg(history))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
