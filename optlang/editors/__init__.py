"""Editor support: the Pygments lexer (`pygmentize -l optlang`) and the TextMate grammar generator.

Both list the language's keywords and built-in functions: the keywords are checked against the lark
grammar by tests/test_editors.py; the functions are read from the atom table (ir/atoms.py).
"""

from optlang.ir.atoms import AMBIGUITY_FUNCS, CONSTANTS, user_functions

# Words of the grammar (optlang.lark), declarations first; `subject to` and `max over` are two-word keywords.
DECLARATIONS = ("model", "param", "data", "graph", "var", "spin", "binary", "let", "solver")
KEYWORDS = ("minimize", "maximize", "maxcut", "robust", "within", "prefer", "in", "argmin", "over")
DOMAINS = ("simplex", "ball")
TWO_WORD = ("subject to", "max over")

# Functions a model may call: read from the atom table (user atoms and generators) and the ambiguity
# sets, so adding an atom needs no edit here (the committed TextMate grammar is regenerated from it).
FUNCTIONS: tuple[str, ...] = tuple(user_functions()) + AMBIGUITY_FUNCS
# Named constants (pi): usable without a declaration
NAMED_CONSTANTS: tuple[str, ...] = tuple(CONSTANTS)
