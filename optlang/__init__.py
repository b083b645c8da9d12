"""optlang: a declarative language for Ising/Max-Cut, bilevel, minimax, DRO and multi-objective problems.

Public API: load, parse, Model, Result, Status, OptlangError (and its subclasses in optlang.errors).
"""

from optlang.api import Model, SolveError, load, parse
from optlang.errors import OptlangError
from optlang.result import Result, Status

__version__ = "0.1.0"
__all__ = ["load", "parse", "Model", "Result", "Status", "OptlangError", "SolveError", "__version__"]
