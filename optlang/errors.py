"""One error family for everything a user can get wrong, rendered as `file:line:col: error[CODE]`.

Errors are raised where the span is known (parser, lowering, checker, data, planner, options);
backends never invent user-facing errors. `ModelErrors` carries several diagnostics at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from optlang.source import Source, Span


class OptlangError(Exception):
    """Base of every error optlang raises for bad input. Has .code, .line, .column, .hint."""

    code = "E000"
    category = "error"

    def __init__(
        self,
        message: str,
        span: Span | None = None,
        hint: str | None = None,
        source: Source | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.span = span
        self.hint = hint
        self.source = source
        if code:
            self.code = code
        self.errors: list[OptlangError] = [self]

    @property
    def line(self) -> int | None:
        return self.span.line if self.span else None

    @property
    def column(self) -> int | None:
        return self.span.col if self.span else None

    def with_source(self, source: Source) -> OptlangError:
        if self.source is None:
            self.source = source
        return self

    def render(self) -> str:
        """`file:line:col: error[CODE]: message`, the source line, a caret, then the hint."""
        path = self.source.path if self.source else "<input>"
        if self.span is None:
            head = f"{path}: error[{self.code}]: {self.message}"
            return head + (f"\n  = hint: {self.hint}" if self.hint else "")
        sp = self.span
        head = f"{path}:{sp.line}:{sp.col}: error[{self.code}]: {self.message}"
        out = [head]
        if self.source is not None:
            text = self.source.line_text(sp.line).replace("\t", " ")
            width = (sp.end_col - sp.col) if sp.end_line == sp.line else len(text) - sp.col + 1
            width = max(1, min(width, max(1, len(text) - sp.col + 1)))
            gutter = f"{sp.line} | "
            out.append(gutter + text)
            out.append(" " * (len(gutter) + sp.col - 1) + "^" * width)
        if self.hint:
            out.append(f"  = hint: {self.hint}")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.render()


class ParseError(OptlangError):
    """The text is not a well-formed model (syntax, encoding, unclosed bracket)."""

    code = "E100"


class NameResolutionError(OptlangError):
    """A name that is not defined, or defined twice, or a keyword used as a name."""

    code = "E200"


class ShapeError(OptlangError):
    """Shapes that do not agree (operands, arguments, dimensions)."""

    code = "E300"


class KindError(OptlangError):
    """Element kinds or problem structure that do not fit (spin in a smooth model, cubic spins)."""

    code = "E400"


class ModelError(OptlangError):
    """The model's statements do not form one problem (two objectives, none, bad domains)."""

    code = "E500"


class DataError(OptlangError):
    """A data file or generator problem: missing file, wrong format, NaN/inf, too large."""

    code = "E600"


class OptionError(OptlangError):
    """A bad solver option, backend name, device or CLI override."""

    code = "E700"

    def __init__(
        self, key: str, message: str, span: Span | None = None, hint: str | None = None, code: str | None = None
    ) -> None:
        super().__init__(message, span=span, hint=hint, code=code)
        self.key = key


class PlanError(OptlangError):
    """No backend can solve the model, or a forced backend refuses it."""

    code = "E800"


class ModelErrors(OptlangError):
    """Several diagnostics found in one pass; `.errors` holds them in source order."""

    def __init__(self, errors: list[OptlangError]) -> None:
        errors = sorted(errors, key=lambda e: (e.line or 0, e.column or 0))
        first = errors[0]
        super().__init__(first.message, span=first.span, hint=first.hint, source=first.source, code=first.code)
        self.errors = errors

    def with_source(self, source: Source) -> OptlangError:
        for e in self.errors:
            e.with_source(source)
        return super().with_source(source)

    def render(self) -> str:
        body = "\n\n".join(e.render() for e in self.errors)
        n = len(self.errors)
        return body + (f"\n\n{n} errors" if n > 1 else "")
