"""Helpers shared by the option-range tests (test_option_ranges_*.py): small models ending in a solver block,
the line each option lands on, the refusal check, and one bad value per declared rule family."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable

import pytest

import optlang
from optlang.backends import registry
from optlang.errors import OptlangError

# a value outside each rule (integers where the rule's lower end is an integer, so int options take them too)
BAD = {">0": "0", ">=0": "-1", ">=1": "0", "(0,1]": "0", "[0,1]": "2", "(0,1)": "1", "[0,1)": "1"}


@dataclasses.dataclass(frozen=True)
class SolverBlocks:
    """Small models by kind (source text) and which kind's model a backend is tested on."""

    models: dict[str, str]
    kind_of: Callable[[str], str]

    def model(self, name: str, *options: str) -> optlang.Model:
        """The kind's small model with `solver name { ... }`, one option a line (line_of gives their lines)."""
        body = "".join(f"  {o}\n" for o in options)
        return optlang.parse(self.models[self.kind_of(name)] + f"solver {name} {{\n{body}}}\n")

    def line_of(self, name: str, i: int) -> int:
        """The line of the i-th option (from 0) of `model(name, ...)`."""
        return self.models[self.kind_of(name)].count("\n") + 2 + i


def refused_at(m: optlang.Model, line: int, key: str) -> None:
    """`optlang check`'s path (Model.check_solver) refuses the model with E700 at `line`, naming `key`."""
    with pytest.raises(OptlangError) as info:
        m.check_solver()
    assert info.value.code == "E700", info.value
    assert info.value.line == line, info.value
    assert f"'{key}'" in info.value.message or key in info.value.message, info.value.message


def assert_tables_name_real_options(name: str) -> None:
    """Every key of the backend's tables is a field of its Options, and each choice default is among its words."""
    backend = registry.get(name)
    fields = {f.name: f for f in dataclasses.fields(backend.Options)}
    for key in backend.option_ranges:
        assert key in fields, f"{name}: option_ranges names '{key}', which is not an option"
    for key, words in backend.option_choices.items():
        assert key in fields, f"{name}: option_choices names '{key}', which is not an option"
        assert fields[key].default in words, f"{name}: the default of '{key}' is not among its words"


def rule_cases(backends: Iterable[str], every_choice: bool = False) -> list[tuple[str, str, str]]:
    """(backend, option, bad value): the first option of each rule family, and the first (or every) choice option."""
    cases = []
    for name in backends:
        backend = registry.get(name)
        seen: set[str] = set()
        for key, rule in backend.option_ranges.items():
            if rule not in seen:
                seen.add(rule)
                cases.append((name, key, BAD[rule]))
        choices = list(backend.option_choices)
        for key in choices if every_choice else choices[:1]:
            cases.append((name, key, '"nonsense"'))
    return cases


def bad_block(name: str, key: str, value: str) -> tuple[str, ...]:
    """The options of a block that refuses `key = value`: a valid option first (when the backend has another
    declared range), so the refusal must point at the second line, not the block's first."""
    first = next((k for k in registry.get(name).option_ranges if k != key), None)
    lines = [f"{first} = {getattr(registry.get(name).Options(), first)!r}".replace("'", '"')] if first else []
    return (*lines, f"{key} = {value}")
