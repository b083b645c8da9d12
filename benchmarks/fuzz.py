"""Fuzz the front end: grammar-aware random models and mutated shipped models through parse + plan.

Every input must end in a located OptlangError or a Model. Prints counts by outcome: ok, each
error code family, traceback (by exception type and place), MemoryError, hang (over --hang
seconds, stopped by SIGALRM). Exit status 1 when any traceback, MemoryError or hang occurred.
With --fmt, each input that parses also goes through `optlang fmt` (fmt_roundtrip) into a second table;
any round-trip failure also makes the exit status 1.

    python benchmarks/fuzz.py --count 100000 --seed 0 --memory-limit 8G
    python benchmarks/fuzz.py --count 5000 --show 5     # print the first inputs of each bad outcome
    python benchmarks/fuzz.py --count 2000 --fmt        # also round-trip every input that parses through fmt
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import signal
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

NUMBERS = ["0", "1", "2", "3", "-1", "0.5", ".5", "1e-3", "10", "1e308", "1e400", "4e9", "1e9", "1e30", "7", "1e5"]
STRINGS = ['"t.csv"', '"g.txt"', '"a.npy"', '"z.npz"', '"m.mtx"', '"j.json"', '"\\x"', '"é.csv"', '"../t.csv"']
STRINGS += ['"/etc/passwd"', '"y"', '"unit"', '"signed"', '"a"', '""', '"\\\\n"', '"bad.csv"', '"deep.json"']
ATOMS = ["abs", "sqrt", "exp", "log", "log1p", "square", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh"]
ATOMS += ["tanh", "relu", "softplus", "sigmoid"]
ATOMS += ["sum", "mean", "sumsq", "norm1", "norm2", "norminf", "logsumexp", "max", "min"]
BINARY_ATOMS = ["maximum", "minimum", "atan2", "dot", "quad", "cut"]
GENERATORS = ["zeros", "ones", "eye", "randn", "rand"]
GRAPHS = ["erdos_renyi", "random_regular", "torus"]
AMBIG = ["chi2", "kl", "wasserstein", "target_conditional"]
BINOPS = ["+", "-", "*", "/", "@", "^"]
TOKENS = ["(", ")", "[", "]", "{", "}", ",", ";", "\n", "+", "-", "*", "/", "@", "^", ":", "=", ".T", ".X", ".n"]
TOKENS += ["in", "var", "spin", "minimize", "max over", "argmin", "1e400", "-1", "0", "x", '"', "#", "\xff", "é"]
TOKENS += ["robust", "within", "axis = 0", "seed = -1", "load(", "eye(", "adjacency(G)", '"\\x"', "1e308", "sum("]


class Fuzzer:
    """Random models that mostly follow the grammar, with hostile values in the leaves."""

    def __init__(self, rng: random.Random) -> None:
        self.r = rng
        self.names: list[str] = []
        self.graphs: list[str] = []
        self.tables: list[str] = []

    def pick(self, xs: list[str]) -> str:
        return self.r.choice(xs)

    def number(self) -> str:
        return self.pick(NUMBERS)

    def leaf(self) -> str:
        c = self.r.random()
        if c < 0.35 and self.names:
            return self.pick(self.names)
        if c < 0.45:
            return self.pick(STRINGS)
        if c < 0.5 and self.tables:
            return f"{self.pick(self.tables)}.{self.pick(['X', 'y', 'n', 'p', 'q'])}"
        if c < 0.55 and self.graphs:
            return f"{self.pick(['adjacency', 'laplacian'])}({self.pick(self.graphs)})"
        return self.number()

    def expr(self, depth: int = 0) -> str:
        if depth > 4 or self.r.random() < 0.3:
            return self.leaf()
        c = self.r.random()
        if c < 0.35:
            return f"{self.expr(depth + 1)} {self.pick(BINOPS)} {self.expr(depth + 1)}"
        if c < 0.5:
            kw = ", axis = " + self.number() if self.r.random() < 0.2 else ""
            return f"{self.pick(ATOMS)}({self.expr(depth + 1)}{kw})"
        if c < 0.58:
            return f"{self.pick(BINARY_ATOMS)}({self.expr(depth + 1)}, {self.expr(depth + 1)})"
        if c < 0.66:
            args = ", ".join(self.leaf() for _ in range(self.r.randint(0, 3)))
            seed = f", seed = {self.number()}" if self.r.random() < 0.3 else ""
            return f"{self.pick(GENERATORS)}({args}{seed})"
        if c < 0.72:
            return f"[{', '.join(self.expr(depth + 1) for _ in range(self.r.randint(1, 3)))}]"
        if c < 0.8:
            idx = self.pick([self.number(), f"{self.number()}:{self.number()}", ":", f"{self.number()}, :"])
            return f"{self.expr(depth + 1)}[{idx}]"
        if c < 0.86:
            return f"({self.expr(depth + 1)}).T"
        if c < 0.9:
            return f"-{self.expr(depth + 1)}"
        if c < 0.95:
            kw = self.r.choice(["", ", key = " + self.leaf(), ", target = " + self.leaf()])
            return f"load({self.pick(STRINGS)}{kw})"
        return " + ".join(self.leaf() for _ in range(self.r.randint(2, 40)))

    def name(self) -> str:
        return self.pick(["x", "y", "z", "w", "s", "c", "n", "A", "b", "G", "D", "t", "sum", "x"]) + str(
            self.r.randint(0, 2) if self.r.random() < 0.5 else ""
        )

    def statement(self) -> str:
        c = self.r.random()
        name = self.name()
        if c < 0.2:
            self.names.append(name)
            return f"param {name} = {self.expr()}"
        if c < 0.4:
            self.names.append(name)
            dims = f"[{', '.join(self.leaf() for _ in range(self.r.randint(1, 3)))}]" if self.r.random() < 0.7 else ""
            dom = self.pick(["", "", f" in [{self.leaf()}, {self.leaf()}]", f" >= {self.leaf()}", " in simplex"])
            dom = dom if self.r.random() < 0.8 else f" in ball({self.leaf()})"
            kind = self.pick(["var", "var", "spin", "binary"])
            if kind != "var":
                return f"{kind} {name}[{self.leaf()}]"
            return f"{kind} {name}{dims}{dom}"
        if c < 0.5:
            self.names.append(name)
            return f"let {name} = {self.expr()}"
        if c < 0.58:
            self.graphs.append(name)
            args = ", ".join(self.leaf() for _ in range(self.r.randint(1, 3)))
            if self.r.random() < 0.3:
                return f"graph {name} = load({self.pick(STRINGS)})"
            return f"graph {name} = {self.pick(GRAPHS)}({args})"
        if c < 0.64:
            self.tables.append(name)
            return f"data {name} = load({self.pick(STRINGS)}, target = {self.leaf()})"
        if c < 0.8:
            return f"{self.pick(['minimize', 'maximize'])} {self.expr()}"
        if c < 0.84 and self.graphs:
            return f"maxcut {self.pick(self.graphs)}"
        if c < 0.88:
            kws = ", ".join(f"{k} = {self.leaf()}" for k in self.r.sample(["radius", "p", "bins", "edges"], 2))
            return f"minimize robust mean({self.expr()}) within {self.pick(AMBIG)}({kws})"
        if c < 0.94:
            return f"subject to {{ {self.expr()} <= {self.expr()} }}"
        opt = self.pick(["max_iter", "lr", "x", "time_limit"])
        return f"solver {self.pick(['auto', 'gd', 'neal', 'nope'])} {{ {opt} = {self.leaf()} }}"

    def model(self) -> str:
        self.names, self.graphs, self.tables = [], [], []
        return "\n".join(self.statement() for _ in range(self.r.randint(1, 7)))


def mutate(rng: random.Random, text: str) -> str:
    """A few character- and token-level edits of a valid model."""
    for _ in range(rng.randint(1, 4)):
        pos = rng.randint(0, max(0, len(text) - 1))
        op = rng.choice(["delete", "insert", "replace", "dup", "swap"])
        if op == "delete":
            text = text[:pos] + text[pos + rng.randint(1, 8) :]
        elif op == "insert":
            text = text[:pos] + rng.choice(TOKENS) + text[pos:]
        elif op == "replace":
            text = text[:pos] + rng.choice(TOKENS) + text[pos + 1 :]
        elif op == "dup":
            end = pos + rng.randint(1, 20)
            text = text[:end] + text[pos:end] * rng.randint(1, 3) + text[end:]
        else:
            lines = text.splitlines()
            if len(lines) > 1:
                i = rng.randint(0, len(lines) - 2)
                lines[i], lines[i + 1] = lines[i + 1], lines[i]
                text = "\n".join(lines)
    return text


def seed_corpus() -> list[str]:
    """The shipped models and the golden error fixtures: the material for mutation."""
    out = []
    for folder in (ROOT / "models", ROOT / "tests" / "fixtures" / "errors", ROOT / "tests" / "fixtures" / "compare"):
        for p in sorted(folder.glob("*.opt")):
            try:
                out.append(p.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError):
                continue
    return out


def data_folder(base: Path) -> Path:
    """Small good and bad data files the fuzzed models may load()."""
    (base / "t.csv").write_text("a,b,y\n1,2,3\n4,5,6\n7,8,9\n", encoding="utf-8")
    (base / "bad.csv").write_text("a,b,y\n1,nan,3\n4,5,6,7\nAPI_KEY sk-live-xyz,1,2\n", encoding="utf-8")
    (base / "g.txt").write_text("3 3\n1 2 1\n2 3 1.5\n1 3 -1\n", encoding="utf-8")
    np.save(base / "a.npy", np.arange(6.0).reshape(2, 3))
    np.savez(base / "z.npz", M=np.eye(3), v=np.ones(3))
    (base / "m.mtx").write_text("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 1.0\n2 3 nan\n")
    (base / "j.json").write_text('{"n": 3.9, "edges": [[0, 1, 1], [1, 2, 1e308]]}', encoding="utf-8")
    (base / "deep.json").write_text("[" * 5000 + "]" * 5000, encoding="utf-8")
    return base


class _Hang(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise _Hang


def run_one(text: str, base: Path) -> str:
    """The outcome of one input: 'ok', 'E1xx'…'E9xx', 'traceback …', 'MemoryError', 'hang'."""
    import optlang

    try:
        m = optlang.parse(text, base_dir=base)
        m.plan()
        return "ok"
    except _Hang:
        return "hang"
    except optlang.OptlangError as e:
        bad = [x for x in e.errors if x.span is None and x.code not in ("E701",)]
        if bad:
            return f"unlocated {bad[0].code}"
        e.render()
        return f"{e.code[:2]}xx"
    except MemoryError:
        return "MemoryError"
    except Exception as e:  # the point of the exercise: count, never crash
        tb = traceback.extract_tb(e.__traceback__)[-1]
        return f"traceback {type(e).__name__} at {Path(tb.filename).name}:{tb.lineno}"


def ir_signature(m: Any) -> tuple:
    """What lowering made of a Model, without source positions (two texts of one model give equal ones)."""
    ir = m.ir
    params = {k: np.asarray(v.toarray() if hasattr(v, "toarray") else v).tolist() for k, v in ir.params.items()}
    variables = {n: (v.kind, v.shape, v.domain) for n, v in ir.variables.items()}
    solver = (ir.solver.name, ir.solver.options) if ir.solver else None
    cons = [(c.sense, c.names, c.over) for c in ir.constraints]
    return (ir.name if ir.name != "<t>" else None, m.form, params, variables, solver, cons, ir.objective.form)


FMT_GOOD = ("fmt ok", "fmt ok (no model)", "fmt skip (no parse)")


def fmt_roundtrip(text: str, base: Path | None) -> tuple[str, str]:
    """`optlang fmt` on one input: (outcome, formatted text). Good outcomes are FMT_GOOD: 'fmt ok' (the
    formatted text is stable, parses to the same canonical tree and lowers to an equal IR), 'fmt ok (no
    model)' (same, but the original does not lower, or base is None: IR not compared), 'fmt skip (no
    parse)'. Anything else names the failure: refused, output does not parse, not idempotent, tree
    changed, IR changed, output does not lower, or a traceback."""
    import optlang
    from optlang.fmt import canonical, format_text
    from optlang.grammar.parser import parse_tree
    from optlang.source import Source

    def tree(t: str) -> Any:
        return canonical(parse_tree(Source(t, "<t>", Path("."))))

    try:
        before = tree(text)
    except optlang.OptlangError:
        return "fmt skip (no parse)", ""
    once = ""
    try:
        once = format_text(text)
        try:
            after = tree(once)
        except optlang.OptlangError:
            return "fmt output does not parse", once
        if format_text(once) != once:
            return "fmt not idempotent", once
        if after != before:
            return "fmt tree changed", once
        if base is None:
            return "fmt ok (no model)", once
        try:
            model = optlang.parse(text, base_dir=base)
        except optlang.OptlangError:
            return "fmt ok (no model)", once
        try:
            formatted = optlang.parse(once, base_dir=base)
        except optlang.OptlangError as e:
            return f"fmt output does not lower ({e.code})", once
        return ("fmt ok" if ir_signature(formatted) == ir_signature(model) else "fmt IR changed"), once
    except _Hang:
        raise
    except optlang.OptlangError as e:
        return f"fmt refused ({e.code})", once
    except Exception as e:
        tb = traceback.extract_tb(e.__traceback__)[-1]
        return f"fmt traceback {type(e).__name__} at {Path(tb.filename).name}:{tb.lineno}", once


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=100_000, help="inputs to run (default 10^5)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--mutate", type=float, default=0.5, help="share of inputs that are mutated shipped models")
    ap.add_argument("--hang", type=float, default=10.0, help="seconds after which one input counts as a hang")
    ap.add_argument("--memory-limit", default="8G", help="the model memory budget during the run")
    ap.add_argument("--show", type=int, default=0, help="print this many inputs of each bad outcome")
    ap.add_argument(
        "--fmt", action="store_true", help="also round-trip each input that parses through `optlang fmt` (own table)"
    )
    a = ap.parse_args(argv)
    os.environ["OPTLANG_MEMORY_LIMIT"] = a.memory_limit
    rng = random.Random(a.seed)
    fz = Fuzzer(rng)
    corpus = seed_corpus()
    counts: collections.Counter[str] = collections.Counter()
    fmt_counts: collections.Counter[str] = collections.Counter()
    examples: dict[str, list[str]] = collections.defaultdict(list)
    slowest = (0.0, "")
    signal.signal(signal.SIGALRM, _alarm)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        base = data_folder(Path(tmp))
        for k in range(a.count):
            text = mutate(rng, rng.choice(corpus)) if rng.random() < a.mutate else fz.model()
            t = time.perf_counter()
            signal.setitimer(signal.ITIMER_REAL, a.hang)
            try:
                outcome = run_one(text, base)
            except _Hang:
                outcome = "hang"
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
            if a.fmt:
                signal.setitimer(signal.ITIMER_REAL, a.hang)
                try:
                    fmt_outcome, formatted = fmt_roundtrip(text, base)
                except _Hang:
                    fmt_outcome, formatted = "fmt hang", ""
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                fmt_counts[fmt_outcome] += 1
                if len(examples[fmt_outcome]) < a.show and fmt_outcome not in FMT_GOOD:
                    examples[fmt_outcome].append(f"{text}\n--- formatted:\n{formatted}")
            dt = time.perf_counter() - t
            if dt > slowest[0]:
                slowest = (dt, text[:200])
            counts[outcome] += 1
            if len(examples[outcome]) < a.show and not outcome.startswith(("ok", "E")):
                examples[outcome].append(text)
            if (k + 1) % 10000 == 0:
                print(f"  {k + 1} inputs, {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    total = time.perf_counter() - t0
    print(
        f"fuzz: {a.count} inputs (seed {a.seed}, {a.mutate:.0%} mutated), {total:.1f} s, "
        f"{1e3 * total / max(1, a.count):.2f} ms/input, slowest {slowest[0]:.2f} s"
    )
    print(f"{'outcome':48s} {'count':>8s} {'share':>7s}")
    for outcome, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"{outcome:48s} {n:8d} {n / a.count:7.2%}")
    bad = {k: v for k, v in counts.items() if not (k == "ok" or (k[0] == "E" and k.endswith("xx")))}
    print(f"bad outcomes (traceback, MemoryError, hang, unlocated): {sum(bad.values())}")
    fmt_bad = {k: v for k, v in fmt_counts.items() if k not in FMT_GOOD}
    if a.fmt:
        print(f"\n{'fmt round trip (tree and IR compared)':48s} {'count':>8s} {'share':>7s}")
        for outcome, n in sorted(fmt_counts.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"{outcome:48s} {n:8d} {n / a.count:7.2%}")
        print(f"fmt failures (not idempotent, tree/IR changed, refused, traceback): {sum(fmt_bad.values())}")
    for outcome, texts in examples.items():
        for text in texts:
            print(f"--- {outcome}\n{text}\n")
    return 1 if bad or fmt_bad else 0


if __name__ == "__main__":
    sys.exit(main())
