"""The model's mathematical form rendered offline: each line of Model.latex() through matplotlib's mathtext.

mathtext knows most of the LaTeX the model printer writes; the few commands it lacks are mapped to
equivalents first. A line mathtext cannot parse is left out of the picture and named, never fatal;
the LaTeX source stays one click away in the report.
"""

from __future__ import annotations

import io
import re
from html import escape

# LaTeX → what mathtext understands (same glyphs).
_MAP = (
    (r"\textstyle", ""),
    (r"\displaystyle", ""),
    (r"\lVert", r"\Vert"),
    (r"\rVert", r"\Vert"),
    (r"\operatorname", r"\mathrm"),
    (r"\text{", r"\mathrm{"),
    (r"\;", r"\ "),
)


def to_mathtext(line: str) -> str:
    """One LaTeX line in the subset mathtext parses."""
    for a, b in _MAP:
        line = line.replace(a, b)
    # mathtext knows \leq and \geq but not their short names (a general constraint's `\le 0`)
    line = re.sub(r"\\(le|ge)(?![A-Za-z])", r"\\\1q", line)
    # \mathrm{s.t. } keeps its spaces only as explicit spaces
    line = re.sub(r"\\mathrm\{([^{}]*)\}", lambda m: r"\mathrm{" + m.group(1).replace(" ", r"\ ") + "}", line)
    return line.strip()


def lines(latex: str) -> list[str]:
    """The display lines of Model.latex() (separated by `\\\\`)."""
    return [ln.strip() for ln in re.split(r"\\\\\s*\n?", latex) if ln.strip()]


def render_svg(latex: str) -> tuple[str | None, list[str]]:
    """(one inline SVG of every line, the lines mathtext could not draw); SVG None when none could be drawn."""
    from matplotlib.figure import Figure
    from matplotlib.mathtext import MathTextParser

    parser = MathTextParser("path")
    good: list[str] = []
    failed: list[str] = []
    for ln in lines(latex):
        mt = f"${to_mathtext(ln)}$"
        try:
            parser.parse(mt, dpi=72, prop=None)
            good.append(mt)
        except Exception:  # mathtext raises ValueError (and occasionally others) on unknown commands
            failed.append(ln)
    if not good:
        return None, failed
    import matplotlib

    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "optlang-math", "mathtext.fontset": "cm"}):
        line_h = 0.42
        fig = Figure(figsize=(8.5, line_h * len(good) + 0.15))
        for i, mt in enumerate(good):
            fig.text(0.01, 1 - (i + 0.6) * line_h / (line_h * len(good) + 0.15), mt, fontsize=13, va="center")
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight", pad_inches=0.05)
    text = buf.getvalue()
    from optlang.report.plots import inline

    text = inline(text)
    text = re.sub(r"<svg ", '<svg class="maths" role="img" ', text, count=1)
    text = re.sub(r'(<svg[^>]*?) width="([^"]*)" height="([^"]*)"', r'\1 style="max-width:\2"', text, count=1)
    return text.replace(">", f"><title>{escape(' ; '.join(good))}</title>", 1), failed
