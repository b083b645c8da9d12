"""LaTeX of a model's mathematical form, for reports (plain string building; no evaluation)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from optlang.ir.nodes import Const, Node, Op, Var

if TYPE_CHECKING:
    from optlang.ir.model import ModelIR

_FUNCS = {
    "sum": r"\textstyle\sum",
    "mean": r"\operatorname{mean}",
    "exp": r"\exp",
    "log": r"\log",
    "tanh": r"\tanh",
    "sqrt": r"\sqrt",
}


def expr_latex(n: Node) -> str:
    if isinstance(n, Const):
        if n.label:
            return n.label.replace("_", r"\_")
        v = n.value
        return f"{v:g}" if isinstance(v, float) else r"\mathrm{const}"
    if isinstance(n, Var):
        return n.name.replace("_", r"\_")
    assert isinstance(n, Op)
    a = [expr_latex(x) for x in n.args]
    op = n.atom
    if op == "add":
        return f"{a[0]} + {a[1]}"
    if op == "sub":
        return f"{a[0]} - {_p(n.args[1], a[1])}"
    if op == "mul":
        return f"{_p(n.args[0], a[0])} \\cdot {_p(n.args[1], a[1])}"
    if op == "div":
        return f"\\frac{{{a[0]}}}{{{a[1]}}}"
    if op == "matmul":
        return f"{_p(n.args[0], a[0])} {_p(n.args[1], a[1])}"
    if op == "pow":
        return f"{_p(n.args[0], a[0])}^{{{a[1]}}}"
    if op == "neg":
        return f"-{_p(n.args[0], a[0])}"
    if op == "transpose":
        return f"{_p(n.args[0], a[0])}^\\top"
    if op == "index":
        return f"{a[0]}_{{{n.static.get('text', '')}}}"
    if op == "sumsq":
        return f"\\lVert {a[0]} \\rVert_2^2"
    if op == "norm2":
        return f"\\lVert {a[0]} \\rVert_2"
    if op == "norm1":
        return f"\\lVert {a[0]} \\rVert_1"
    if op == "quad":
        return f"{a[0]}^\\top {a[1]} {a[0]}"
    if op == "dot":
        return f"\\langle {a[0]}, {a[1]} \\rangle"
    if op == "sqrt":
        return f"\\sqrt{{{a[0]}}}"
    name = _FUNCS.get(op, f"\\operatorname{{{op}}}")
    return f"{name}\\left({', '.join(a)}\\right)"


def _p(n: Node, s: str) -> str:
    return f"\\left({s}\\right)" if isinstance(n, Op) and n.atom in ("add", "sub") else s


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
