"""Editor support: the Pygments lexer (`pygmentize -l optlang`) and the TextMate grammar generator.

Both list the language's keywords and built-in functions; tests/test_editors.py checks them against the
lark grammar and the function registry so they cannot drift apart.
"""

# Words of the grammar (optlang.lark), declarations first; `subject to` and `max over` are two-word keywords.
DECLARATIONS = ("model", "param", "data", "graph", "var", "spin", "binary", "let", "solver")
KEYWORDS = ("minimize", "maximize", "maxcut", "robust", "within", "prefer", "in", "argmin", "over")
DOMAINS = ("simplex", "ball")
TWO_WORD = ("subject to", "max over")

# Functions a model may call (ir/atoms.py ATOMS without the operators, GENERATORS, AMBIGUITY_FUNCS).
FUNCTIONS = (
    "abs", "cos", "cut", "dot", "exp", "log", "log1p", "logsumexp", "max", "maximum", "mean", "min",
    "minimum", "norm1", "norm2", "norminf", "quad", "relu", "sigmoid", "sin", "softplus", "sqrt", "square",
    "sum", "sumsq", "tanh",
    "adjacency", "erdos_renyi", "eye", "laplacian", "load", "ones", "rand", "randn", "random_regular", "torus",
    "zeros",
    "chi2", "kl", "wasserstein", "target_conditional",
)  # fmt: skip
