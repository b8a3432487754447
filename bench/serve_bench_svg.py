"""A line plot written as SVG by hand (no plotting library on the machine):
axes with ticks, one polyline with point markers per series, a legend, and
optional dashed horizontal reference lines. For the serving benchmark's
latency-against-throughput figure.
Invariant: every point maps inside the plot area (the axis ranges are taken
from the data, with a margin, and start at zero unless asked not to)."""
import math
from xml.sax.saxutils import escape

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]


def nice_ticks(hi, count=5, lo=0.0):
    """Round tick values from lo (rounded down to a tick) to at least hi."""
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / count
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.floor(lo / step + 1e-9)
    return [i * step for i in range(first, int(math.ceil(hi / step - 1e-9)) + 1)]


def fmt(v):
    return f"{v:g}" if abs(v) >= 0.01 or v == 0 else f"{v:.1e}"


def line_plot(series, title, xlabel, ylabel, hlines=(), width=640, height=400, y_from_zero=True,
              legend_top=True):
    """series: [(name, [(x, y), ...])]; hlines: [(y, label)]. y_from_zero False: the y axis
    spans the data only (for curves far from 0); legend_top False: legend at the bottom left.
    Returns the SVG text."""
    left, right, top, bottom = 70, 20, 40, 55
    pw, ph = width - left - right, height - top - bottom
    xs = [x for _, pts in series for x, _ in pts]
    ys = [y for _, pts in series for _, y in pts] + [y for y, _ in hlines]
    xt = nice_ticks(max(xs) * 1.05)
    if y_from_zero:
        yt = nice_ticks(max(ys) * 1.05)
    else:
        pad = 0.05 * (max(ys) - min(ys))
        yt = nice_ticks(max(ys) + pad, lo=min(ys) - pad)
    xmax, ymin, ymax = xt[-1], yt[0], yt[-1]

    def px(x):
        return left + pw * x / xmax

    def py(y):
        return top + ph * (1 - (y - ymin) / (ymax - ymin))

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width / 2}" y="22" text-anchor="middle" font-size="14">'
           f'{escape(title)}</text>']
    for x in xt:
        out.append(f'<line x1="{px(x):.1f}" y1="{top}" x2="{px(x):.1f}" y2="{top + ph}" '
                   'stroke="#e5e5e5"/>')
        out.append(f'<text x="{px(x):.1f}" y="{top + ph + 16}" text-anchor="middle">'
                   f'{fmt(x)}</text>')
    for y in yt:
        out.append(f'<line x1="{left}" y1="{py(y):.1f}" x2="{left + pw}" y2="{py(y):.1f}" '
                   'stroke="#e5e5e5"/>')
        out.append(f'<text x="{left - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{fmt(y)}</text>')
    out.append(f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" fill="none" '
               'stroke="black"/>')
    out.append(f'<text x="{left + pw / 2}" y="{height - 12}" text-anchor="middle">'
               f'{escape(xlabel)}</text>')
    out.append(f'<text transform="translate(16,{top + ph / 2}) rotate(-90)" text-anchor="middle">'
               f'{escape(ylabel)}</text>')
    for y, label in hlines:
        out.append(f'<line x1="{left}" y1="{py(y):.1f}" x2="{left + pw}" y2="{py(y):.1f}" '
                   'stroke="gray" stroke-dasharray="6,4"/>')
        out.append(f'<text x="{left + pw - 4}" y="{py(y) - 4:.1f}" text-anchor="end" fill="gray">'
                   f'{escape(label)}</text>')
    for i, (name, pts) in enumerate(series):
        color = COLORS[i % len(COLORS)]
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in pts)
        out.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
        for x, y in pts:
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3.5" fill="{color}"/>')
        ly = top + 16 + 18 * i if legend_top else top + ph - 12 - 18 * (len(series) - 1 - i)
        out.append(f'<line x1="{left + 12}" y1="{ly - 4}" x2="{left + 36}" y2="{ly - 4}" '
                   f'stroke="{color}" stroke-width="2"/>')
        out.append(f'<text x="{left + 42}" y="{ly}">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
