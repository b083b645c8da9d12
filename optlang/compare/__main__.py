"""`python -m optlang.compare MODEL ...`: the compare subcommand without the full CLI."""

from __future__ import annotations

import argparse
import sys

from optlang.compare.cli import add_parser


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="optlang")
    sub = parser.add_subparsers(dest="command", required=True)
    add_parser(sub)
    args = parser.parse_args(["compare", *(argv if argv is not None else sys.argv[1:])])
    return int(args.func(args))


if __name__ == "__main__":
    raise SystemExit(main())
