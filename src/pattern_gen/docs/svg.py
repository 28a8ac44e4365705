"""SVG drawings for the docs: a card's CV flow, a simulated run's timeline, the unroll curves.

Plain, deterministic SVG written by hand (no plotting dependency): the same input always gives
the same bytes, so the committed docs only change when the cards or the plans do.
"""

from __future__ import annotations

import math
import re
from typing import Iterator, Any, Iterable, Mapping, Sequence
from xml.sax.saxutils import escape

__all__ = ["flow_svg", "timeline_svg", "curves_svg", "UNIT_COLORS"]

UNIT_COLORS = {"V": ("#dbeafe", "#1d4ed8"), "C": ("#ffedd5", "#c2410c"), "S": ("#f3f4f6", "#4b5563")}
_LABEL_PALETTE = ["#2563eb", "#ea580c", "#16a34a", "#9333ea", "#db2777", "#0891b2", "#ca8a04", "#4b5563", "#dc2626", "#65a30d"]


def _text(x: float, y: float, text: str, *, size: int = 12, anchor: str = "middle", weight: str = "normal", fill: str = "#111827") -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="{size}" text-anchor="{anchor}" font-weight="{weight}" '
        f'fill="{fill}" font-family="sans-serif">{escape(text)}</text>'
    )


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _lines(text: str, width: int) -> list[str]:
    """``text`` broken at dots and spaces into lines of at most ``width`` characters
    (at most two; the second is shortened only when the label is very long)."""
    parts = re.findall(r"[^. ]+[. ]?", text) or [text]
    lines = [""]
    for part in parts:
        if lines[-1] and len(lines[-1]) + len(part) > width:
            lines.append("")
        lines[-1] += part
    if len(lines) > 2:
        lines = [lines[0], _short("".join(lines[1:]), width)]
    return [_short(line, width) for line in lines]


#: boxes per row: a row fits the ~690 px content column of the docs theme at its natural size
FLOW_ROW = 4


def flow_svg(stages: Sequence[dict[str, Any]], *, title: str, loop: str | None = None) -> str:
    """Boxes for the stages (V blue, C orange) with arrows, wrapped into rows of ``FLOW_ROW`` so the
    picture is readable at page width; hoisted stages get their own row(s) before the loop's.

    ``stages``: dicts with ``label``, ``unit``, ``card`` and ``hoist``.
    """
    box_w, box_h, gap, pad, row_gap = 148, 62, 26, 16, 40
    hoisted = [s for s in stages if s.get("hoist")]
    looped = [s for s in stages if not s.get("hoist")]
    rows = [hoisted[i:i + FLOW_ROW] for i in range(0, len(hoisted), FLOW_ROW)]
    loop_row = len(rows)
    rows += [looped[i:i + FLOW_ROW] for i in range(0, len(looped), FLOW_ROW)] or ([] if rows else [[]])
    cols = max(1, max(len(r) for r in rows))
    width = pad * 2 + cols * box_w + (cols - 1) * gap
    top = 40
    row_h = box_h + row_gap
    loop_gap = 22 if loop and looped else 0
    height = top + len(rows) * row_h + loop_gap + 14
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(title)}" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
        f"<title>{escape(title)}</title>",
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto">'
        '<path d="M0,0 L10,5 L0,10 z" fill="#6b7280"/></marker></defs>',
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
        _text(pad, 20, title, size=13, anchor="start", weight="bold"),
    ]

    def row_y(r: int) -> float:
        return top + r * row_h + (loop_gap if r >= loop_row else 0)

    if loop and looped:
        y0 = row_y(loop_row) - 18
        y1 = row_y(len(rows) - 1) + box_h + 22
        parts.append(
            f'<rect x="{pad - 8}" y="{y0:.1f}" width="{width - 2 * pad + 16}" height="{y1 - y0:.1f}" rx="8" fill="none" '
            'stroke="#9ca3af" stroke-dasharray="5,4"/>'
        )
        parts.append(_text(width - pad, y1 - 4, loop, size=11, anchor="end", fill="#4b5563"))
    prev: tuple[float, float, int] | None = None  # (x, y, row) of the previous box
    for r, row in enumerate(rows):
        for i, s in enumerate(row):
            x = pad + i * (box_w + gap)
            y = row_y(r)
            fill, stroke = UNIT_COLORS.get(s["unit"], UNIT_COLORS["S"])
            parts.append(f'<rect x="{x}" y="{y:.1f}" width="{box_w}" height="{box_h}" rx="6" fill="{fill}" stroke="{stroke}" stroke-width="1.5"/>')
            label = _lines(f"{s['unit']} · {s['label']}", 19)
            parts.append(_text(x + box_w / 2, y + 17, label[0], size=12, weight="bold", fill=stroke))
            if len(label) > 1:
                parts.append(_text(x + box_w / 2, y + 32, label[1], size=12, weight="bold", fill=stroke))
            parts.append(_text(x + box_w / 2, y + box_h - 9, _short(s.get("card", ""), 22), size=11, fill="#374151"))
            if prev is not None:
                px, py, pr = prev
                if pr == r:
                    parts.append(
                        f'<line x1="{px + box_w + 2}" y1="{y + box_h / 2:.1f}" x2="{x - 3}" y2="{y + box_h / 2:.1f}" stroke="#6b7280" '
                        'stroke-width="1.5" marker-end="url(#arrow)"/>'
                    )
                else:  # down to the next row: from under the last box to above the first
                    mid = py + box_h + (y - py - box_h) / 2
                    parts.append(
                        f'<polyline points="{px + box_w / 2:.1f},{py + box_h + 2:.1f} {px + box_w / 2:.1f},{mid:.1f} '
                        f'{x + box_w / 2:.1f},{mid:.1f} {x + box_w / 2:.1f},{y - 3:.1f}" fill="none" stroke="#6b7280" '
                        'stroke-width="1.5" marker-end="url(#arrow)"/>'
                    )
            prev = (x, y, r)
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
    for tid, x, w, lab, tip in _bars(xs, lane_index, t0, span, plot_w):
        y = top + lane_index[tid] * row + 1
        parts.append(f'<rect x="{left + x:.2f}" y="{y}" width="{w:.2f}" height="{row - 2}" fill="{color[lab]}"><title>{escape(tip)}</title></rect>')
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


def _label(name: str) -> str:
    return name.split("(")[-1].rstrip(")") if "(" in name else name


def _bars(xs: list[dict[str, Any]], lanes: dict[Any, int], t0: float, span: float, plot_w: float) -> Iterator[tuple[Any, float, float, str, str]]:
    """(lane, x, width, label, tooltip) per bar. Tasks narrower than a pixel run together: a run
    of tasks of one label closer than a pixel is one bar (its tooltip counts them), so a long
    prefill's thousands of tasks draw as at most one bar per pixel and label, not one each."""
    merged: list[list[Any]] = []  # [tid, x0, x1, label, count, busy µs, name]
    for e in sorted(xs, key=lambda e: (e["tid"], e["ts"])):
        if e["tid"] not in lanes:
            continue
        name = str(e.get("name", ""))
        lab = _label(name)
        x0 = plot_w * (e["ts"] - t0) / span
        x1 = x0 + max(plot_w * e["dur"] / span, 0.6)
        last = merged[-1] if merged else None
        if last and last[0] == e["tid"] and last[3] == lab and x0 - last[2] < 1.0 and (x1 - x0 < 2.0 or last[2] - last[1] < 2.0):
            last[2], last[4], last[5] = max(last[2], x1), last[4] + 1, last[5] + e["dur"]
        else:
            merged.append([e["tid"], x0, x1, lab, 1, e["dur"], name])
    for tid, x0, x1, lab, count, busy, name in merged:
        tip = f"{name} {busy:.2f} µs" if count == 1 else f"{lab}: {count} tasks, {busy:.2f} µs busy"
        yield tid, x0, x1 - x0, lab, tip


def _nice_ticks(lo: float, hi: float) -> list[float]:
    """Powers of ten (and 2x, 5x when the range is narrow) between ``lo`` and ``hi`` for a log axis."""
    ticks: list[float] = []
    e = math.floor(math.log10(lo))
    while 10 ** e <= hi * 1.0001:
        for m in (1, 2, 5):
            v = m * 10 ** e
            if lo * 0.9999 <= v <= hi * 1.0001:
                ticks.append(float(v))
        e += 1
    if len(ticks) > 8:
        ticks = [t for t in ticks if math.log10(t) == round(math.log10(t))]
    return ticks or [lo, hi]


def _list_order(key: str) -> tuple:
    """Curves largest factor first, a longer list before its prefix."""
    return tuple(-int(x) for x in key.split(","))


def curves_svg(curves: Mapping[str, Mapping[int, float]], chosen: str, *, title: str) -> str:
    """Estimated µs against T (both log scale), one line per unroll list (``"128,1"``); the chosen one bold."""
    ts = sorted({T for c in curves.values() for T in c})
    ys = [v for c in curves.values() for v in c.values() if v > 0]
    left, right, top, bottom = 64, 150, 34, 42
    plot_w, plot_h = 520, 260
    width, height = left + plot_w + right, top + plot_h + bottom
    x_lo, x_hi = math.log2(ts[0]), math.log2(ts[-1]) if ts[-1] > ts[0] else math.log2(ts[0]) + 1
    y_lo, y_hi = math.log10(min(ys)), math.log10(max(ys))
    if y_hi - y_lo < 0.3:
        y_lo, y_hi = y_lo - 0.15, y_hi + 0.15

    def px(T: float) -> float:
        return left + plot_w * (math.log2(T) - x_lo) / (x_hi - x_lo)

    def py(v: float) -> float:
        return top + plot_h * (1 - (math.log10(v) - y_lo) / (y_hi - y_lo))

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{escape(title)}" width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
        f"<title>{escape(title)}</title>",
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
        _text(8, 18, title, size=13, anchor="start", weight="bold"),
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" stroke="#d1d5db"/>',
    ]
    for T in ts:
        parts.append(f'<line x1="{px(T):.1f}" y1="{top}" x2="{px(T):.1f}" y2="{top + plot_h}" stroke="#f3f4f6"/>')
        parts.append(_text(px(T), top + plot_h + 16, str(T), size=10, fill="#6b7280"))
    parts.append(_text(left + plot_w / 2, top + plot_h + 34, "T (tokens, log scale)", size=11, fill="#374151"))
    for v in _nice_ticks(10 ** y_lo, 10 ** y_hi):
        parts.append(f'<line x1="{left}" y1="{py(v):.1f}" x2="{left + plot_w}" y2="{py(v):.1f}" stroke="#f3f4f6"/>')
        parts.append(_text(left - 6, py(v) + 4, f"{v:g}", size=10, anchor="end", fill="#6b7280"))
    parts.append(f'<text x="14" y="{top + plot_h / 2:.1f}" font-size="11" text-anchor="middle" fill="#374151" font-family="sans-serif" '
                 f'transform="rotate(-90 14 {top + plot_h / 2:.1f})">estimated µs (log scale)</text>')
    for i, u in enumerate(sorted(curves, key=_list_order)):
        pts = sorted(curves[u].items())
        color = _LABEL_PALETTE[i % len(_LABEL_PALETTE)]
        bold = u == chosen
        path = " ".join(f"{'M' if j == 0 else 'L'}{px(T):.1f},{py(v):.1f}" for j, (T, v) in enumerate(pts))
        dash = "" if bold else ' stroke-dasharray="5 3"'
        parts.append(f'<path d="{path}" fill="none" stroke="{color}" stroke-width="{3 if bold else 1.5}"{dash}><title>unroll {u}</title></path>')
        for T, v in pts:
            parts.append(f'<circle cx="{px(T):.1f}" cy="{py(v):.1f}" r="{3 if bold else 2}" fill="{color}"><title>unroll {u}, T={T}: {v:.2f} µs</title></circle>')
        ly = top + 10 + i * 18
        parts.append(f'<line x1="{left + plot_w + 12}" y1="{ly - 4}" x2="{left + plot_w + 34}" y2="{ly - 4}" stroke="{color}" stroke-width="{3 if bold else 1.5}"/>')
        parts.append(_text(left + plot_w + 40, ly, f"unroll {u}" + (" (chosen)" if bold else ""), size=10, anchor="start",
                           weight="bold" if bold else "normal"))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
