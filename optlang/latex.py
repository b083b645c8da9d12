"""LaTeX of a model's mathematical form, for reports (plain string building; no evaluation)."""

from __future__ import annotations

from string import Template
from typing import TYPE_CHECKING

from optlang.ir.atoms import ATOMS, CONSTANTS, SUM
from optlang.ir.nodes import Const, Node, Op, Var

if TYPE_CHECKING:
    from optlang.ir.model import ModelIR


def expr_latex(n: Node) -> str:
    """An expression as LaTeX; each atom's template is its AtomSpec's `latex` (ir/atoms.py)."""
    if isinstance(n, Const):
        if n.label in CONSTANTS and n.value == CONSTANTS[n.label][0]:
            return CONSTANTS[n.label][1]
        if n.label:
            return n.label.replace("_", r"\_")
        v = n.value
        return f"{v:g}" if isinstance(v, float) else r"\mathrm{const}"
    if isinstance(n, Var):
        return n.name.replace("_", r"\_")
    assert isinstance(n, Op)
    a = [expr_latex(x) for x in n.args]
    spec = ATOMS.get(n.atom)
    template = spec.latex if spec is not None and spec.latex else rf"\operatorname{{{n.atom}}}\left(${{args}}\right)"
    text = spec.static_text(n.static) if spec is not None and spec.static_text else ""
    fields = {"args": ", ".join(a), "text": text}
    for i, (arg, s) in enumerate(zip(n.args, a, strict=True)):
        fields[f"a{i}"] = s
        fields[f"p{i}"] = _p(arg, s)
    return Template(template).substitute(fields)


def _p(n: Node, s: str) -> str:
    """An argument's LaTeX, parenthesized when it is a sum (products read unambiguously in LaTeX)."""
    return f"\\left({s}\\right)" if isinstance(n, Op) and ATOMS[n.atom].prec <= SUM else s


def model_latex(ir: ModelIR) -> str:
    """The model (its IR) as LaTeX: objective, constraints and domains."""
    o = ir.objective
    lines = []
    if o.form in ("minimize", "maximize"):
        assert o.expr is not None
        lines.append(f"\\{'min' if o.form == 'minimize' else 'max'}\\; {expr_latex(o.expr)}")
    elif o.form == "maxcut":
        lines.append(
            f"\\max_{{s \\in \\{{\\pm 1\\}}^n}} \\textstyle\\sum_{{(i,j) \\in E({o.graph})}} w_{{ij}}"
            "\\frac{1 - s_i s_j}{2}"
        )
    elif o.form == "minimax":
        assert o.expr is not None
        lines.append(f"\\min \\max_{{{', '.join(o.over)}}}\\; {expr_latex(o.expr)}")
    elif o.form == "robust":
        assert o.expr is not None and o.ambiguity is not None
        amb = o.ambiguity.kind.replace("_", " ")
        lines.append(
            f"\\min \\sup_{{Q \\in \\mathcal{{U}}_{{\\text{{{amb}}}}}}} \\mathbb{{E}}_Q"
            f"\\left[{expr_latex(o.expr)}\\right]"
        )
    elif o.form == "multi":
        lines.append("\\min\\; \\left(" + ",\\; ".join(f"{k}: {expr_latex(e)}" for k, e in o.entries) + "\\right)")
        if o.prefer is not None:
            lines.append(f"\\text{{prefer}}\\; {expr_latex(o.prefer)}")
    for c in ir.constraints:
        if c.sense == "argmin":
            lines.append(f"\\text{{s.t. }} {', '.join(c.names)} \\in \\arg\\min\\; {expr_latex(c.expr)}")
        else:
            rel = "\\le" if c.sense == "<=" else "="
            lines.append(f"\\text{{s.t. }} {expr_latex(c.expr)} {rel} 0")
    for v in ir.variables.values():
        dom = {"spin": "\\{-1, 1\\}", "binary": "\\{0, 1\\}"}.get(v.kind, "\\mathbb{R}")
        dims = "^{" + "\\times".join(map(str, v.shape)) + "}" if v.shape else ""
        lines.append(
            f"{v.name} \\in {dom}{dims}" + (f",\\; {v.name}\\ {v.domain.describe()}" if v.domain.kind != "free" else "")
        )
    return " \\\\\n".join(lines)
