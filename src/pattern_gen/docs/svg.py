"""SVG drawings for the docs: a card's CV flow and a simulated run's timeline.

Plain, deterministic SVG written by hand (no plotting dependency): the same input always gives
the same bytes, so the committed docs only change when the cards or the plans do.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence
from xml.sax.saxutils import escape

__all__ = ["flow_svg", "timeline_svg", "UNIT_COLORS"]

UNIT_COLORS = {"V": ("#dbeafe", "#1d4ed8"), "C": ("#ffedd5", "#c2410c"), "S": ("#f3f4f6", "#4b5563")}
_LABEL_PALETTE = ["#2563eb", "#ea580c", "#16a34a", "#9333ea", "#db2777", "#0891b2", "#ca8a04", "#4b5563", "#dc2626", "#65a30d"]


def _text(x: float, y: float, text: str, *, size: int = 12, anchor: str = "middle", weight: str = "normal", fill: str = "#111827") -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" font-weight="{weight}" '
        f'fill="{fill}" font-family="sans-serif">{escape(text)}</text>'
    )


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def flow_svg(stages: Sequence[dict[str, Any]], *, title: str, loop: str | None = None) -> str:
    """Boxes for the stages (V blue, C orange) with arrows; hoisted stages sit before the loop.

    ``stages``: dicts with ``label``, ``unit``, ``card`` and ``hoist``.
    """
    box_w, box_h, gap, pad = 150, 54, 34, 16
    n = max(1, len(stages))
    width = pad * 2 + n * box_w + (n - 1) * gap
    height = 150 if loop else 120
    top = 52 if loop else 36
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(title)}" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
        f"<title>{escape(title)}</title>",
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto">'
        '<path d="M0,0 L10,5 L0,10 z" fill="#6b7280"/></marker></defs>',
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
        _text(pad, 20, title, size=13, anchor="start", weight="bold"),
    ]
    loop_start = next((i for i, s in enumerate(stages) if not s.get("hoist")), None)
    if loop and loop_start is not None:
        x0 = pad + loop_start * (box_w + gap) - 8
        x1 = pad + n * box_w + (n - 1) * gap + 8
        parts.append(
            f'<rect x="{x0:.1f}" y="{top - 16}" width="{x1 - x0:.1f}" height="{box_h + 34}" rx="8" fill="none" '
            'stroke="#9ca3af" stroke-dasharray="5,4"/>'
        )
        parts.append(_text(x0 + 8, top - 4, loop, size=11, anchor="start", fill="#4b5563"))
    for i, s in enumerate(stages):
        x = pad + i * (box_w + gap)
        fill, stroke = UNIT_COLORS.get(s["unit"], UNIT_COLORS["S"])
        y = top + 6
        parts.append(f'<rect x="{x}" y="{y}" width="{box_w}" height="{box_h}" rx="6" fill="{fill}" stroke="{stroke}" stroke-width="1.5"/>')
        parts.append(_text(x + box_w / 2, y + 20, f"{s['unit']} · {_short(s['label'], 18)}", size=12, weight="bold", fill=stroke))
        parts.append(_text(x + box_w / 2, y + 38, _short(s.get("card", ""), 22), size=11, fill="#374151"))
        if s.get("hoist"):
            parts.append(_text(x + box_w / 2, y + box_h + 14, "before the loop", size=10, fill="#6b7280"))
        if i:
            ax = x - gap + 2
            parts.append(
                f'<line x1="{ax}" y1="{y + box_h / 2}" x2="{x - 3}" y2="{y + box_h / 2}" stroke="#6b7280" '
                'stroke-width="1.5" marker-end="url(#arrow)"/>'
            )
    if not stages:
        parts.append(_text(width / 2, top + 30, "no stages", size=12))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def timeline_svg(events: Iterable[dict[str, Any]], lane_names: dict[Any, str], *, title: str, max_lanes: int = 40) -> str:
    """A Gantt chart of Chrome-trace "X" events: one row per used core, colour per label."""
    xs = [e for e in events if e.get("ph") == "X"]
    used = sorted({e["tid"] for e in xs}, key=lambda t: (lane_names.get(t, str(t))[:3], t))
    hidden = max(0, len(used) - max_lanes)
    used = used[:max_lanes]
    labels = sorted({str(e.get("name", "")).split("(")[-1].rstrip(")") if "(" in str(e.get("name", "")) else str(e.get("name", "")) for e in xs})
    color = {lab: _LABEL_PALETTE[i % len(_LABEL_PALETTE)] for i, lab in enumerate(labels)}
    t0 = min((e["ts"] for e in xs), default=0.0)
    t1 = max((e["ts"] + e["dur"] for e in xs), default=1.0)
    span = max(t1 - t0, 1e-9)
    left, right, row, top = 70, 20, 12, 40
    plot_w = 760
    width = left + plot_w + right
    legend_rows = (len(labels) + 2) // 3
    height = top + len(used) * row + 34 + legend_rows * 16
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(title)}" width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
        f"<title>{escape(title)}</title>",
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
        _text(8, 18, title, size=13, anchor="start", weight="bold"),
    ]
    for k in range(6):
        t = span * k / 5
        x = left + plot_w * k / 5
        parts.append(f'<line x1="{x:.1f}" y1="{top - 6}" x2="{x:.1f}" y2="{top + len(used) * row}" stroke="#e5e7eb"/>')
        parts.append(_text(x, top - 10, f"{t:.1f} µs", size=10, fill="#6b7280"))
    lane_index = {tid: i for i, tid in enumerate(used)}
    for tid, i in lane_index.items():
        parts.append(_text(left - 6, top + i * row + 9, lane_names.get(tid, str(tid)), size=9, anchor="end", fill="#374151"))
    for e in sorted(xs, key=lambda e: (e["tid"], e["ts"])):
        if e["tid"] not in lane_index:
            continue
        name = str(e.get("name", ""))
        lab = name.split("(")[-1].rstrip(")") if "(" in name else name
        x = left + plot_w * (e["ts"] - t0) / span
        w = max(plot_w * e["dur"] / span, 0.6)
        y = top + lane_index[e["tid"]] * row + 1
        parts.append(f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{row - 2}" fill="{color[lab]}"><title>{escape(name)} {e["dur"]:.2f} µs</title></rect>')
    ly = top + len(used) * row + 22
    if hidden:
        parts.append(_text(left, ly - 6, f"(+{hidden} more cores not shown)", size=10, anchor="start", fill="#6b7280"))
        ly += 10
    for i, lab in enumerate(labels):
        x = left + (i % 3) * 260
        y = ly + (i // 3) * 16
        parts.append(f'<rect x="{x}" y="{y - 9}" width="10" height="10" fill="{color[lab]}"/>')
        parts.append(_text(x + 14, y, _short(lab or "(no label)", 36), size=10, anchor="start"))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
