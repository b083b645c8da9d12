"""A Pygments lexer for .opt models, registered as the `pygments.lexers` entry point `optlang`:
`pygmentize -l optlang model.opt`, and ```opt fences in Markdown rendered with Pygments."""

from __future__ import annotations

from pygments.lexer import RegexLexer, bygroups, words
from pygments.token import Comment, Keyword, Name, Number, Operator, Punctuation, String, Whitespace

from optlang.editors import DECLARATIONS, DOMAINS, FUNCTIONS, KEYWORDS, NAMED_CONSTANTS


class OptlangLexer(RegexLexer):
    """Keywords, declarations, built-in functions, numbers, strings, comments and operators of optlang."""

    name = "optlang"
    aliases = ["optlang", "opt"]
    filenames = ["*.opt"]
    mimetypes = ["text/x-optlang"]
    url = "https://github.com/optlang/optlang"

    tokens = {
        "root": [
            (r"[ \t\f\r\n]+", Whitespace),
            (r"#.*?$", Comment.Single),
            (r'"([^"\\\n]|\\.)*"', String.Double),
            (r"\bsubject[ \t]+to\b", Keyword),
            (r"\bmax[ \t]+over\b", Keyword),
            # the backend a solver block names, hyphens included (weighted-sum, sdp-cvxpy)
            (
                r"\b(solver)([ \t]+)([A-Za-z_][A-Za-z0-9_]*(?:-[A-Za-z0-9_]+)*)",
                bygroups(Keyword, Whitespace, Name.Class),
            ),
            (words(DECLARATIONS, suffix=r"\b"), Keyword.Declaration),
            (words(KEYWORDS, suffix=r"\b"), Keyword),
            (words(DOMAINS, suffix=r"\b"), Keyword.Pseudo),
            (words(FUNCTIONS, suffix=r"(?=\s*\()"), Name.Builtin),
            (words(NAMED_CONSTANTS, prefix=r"\b", suffix=r"\b"), Name.Constant),
            (r"(\d+\.\d*|\.\d+|\d+)[eE][+-]?\d+", Number.Float),
            (r"\d+\.\d*|\.\d+", Number.Float),
            (r"\d+", Number.Integer),
            (r"[A-Za-z_][A-Za-z0-9_]*", Name),
            (r"<=|>=|==|[-+*/^@=:]", Operator),
            (r"[\[\](){},;.]", Punctuation),
        ]
    }
