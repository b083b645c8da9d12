"""Source text and spans: where every node and every diagnostic points."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Span:
    """1-based line/column range in a source (end exclusive in columns)."""

    line: int
    col: int
    end_line: int
    end_col: int

    @staticmethod
    def of(meta: object) -> Span:
        """From a lark Meta/Token (propagate_positions)."""
        line = getattr(meta, "line", None) or 1
        col = getattr(meta, "column", None) or 1
        end_line = getattr(meta, "end_line", None) or line
        end_col = getattr(meta, "end_column", None) or col + 1
        return Span(line, col, end_line, end_col)

    def merge(self, other: Span) -> Span:
        a, b = (self, other) if (self.line, self.col) <= (other.line, other.col) else (other, self)
        end = max((self.end_line, self.end_col), (other.end_line, other.end_col))
        return Span(a.line, a.col, end[0], end[1])


NOWHERE = Span(1, 1, 1, 2)


@dataclass(frozen=True)
class Source:
    """The text of a model and where it came from (path for diagnostics, base_dir for load())."""

    text: str
    path: str = "<string>"
    base_dir: Path = Path(".")

    def line_text(self, line: int) -> str:
        lines = self.text.splitlines()
        return lines[line - 1] if 1 <= line <= len(lines) else ""
