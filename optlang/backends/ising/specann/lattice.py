"""Bit-packed annealing of ±J tori (multi-spin coding): 64 spins per int64 word, ~25 word ops per colour.

A torus rows × cols (node i·cols + j, as the language's `torus` numbers it) whose couplings all have one
magnitude and whose field is zero is the 2-D ±J spin glass. There a spin's energy change is set by how many
of its four bonds are unsatisfied, so the Metropolis test of 64 spins at once is a handful of bitwise
operations (Jacobs & Rebbi 1981; Zorn, Herrmann & Rebbi 1981): the general annealer's sparse products
move ~12 bytes per coupling, this one 1/64 of a word per spin. On the 8.41·10⁶-spin torus of issue 23
a sweep costs ~2–3 ms on one core against ~68 ms on two (docs/backends/specann.md).

Layout: bit b of word (r, j) holds spin (r + b·R, j), R = ⌈rows/64⌉ rounded up to even, so a spin's left
and right neighbours sit in the neighbouring words of the same bit, and its up and down neighbours in the
adjacent word row — or, at the edge of a stripe, the next or previous bit of the first or last word row.
Rows from `rows` to 64·R − 1 are padding: they never flip, and the one bond that the layout would send
into them (row rows − 1 to row 0, the torus's wrap) is rerouted by a one-bit fix. With R even a word's
bits share one checkerboard colour, and the two colours' words are kept apart (PackedTorus). Random
acceptances (RandomWords): p's binary digits over per-word xorshift streams, or for small p the positions
of the accepted bits drawn directly as geometric gaps, whichever is cheaper.
"""

from __future__ import annotations

import math
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp

from optlang.lazy import lazy_module, no_grad

if TYPE_CHECKING:
    import torch
else:
    torch = lazy_module("torch")

_LOW63 = (1 << 63) - 1  # every bit but the sign bit: clears what an arithmetic right shift drags in


def _signed(u: int) -> int:
    """The int64 value of an unsigned 64-bit pattern (torch's bitwise operations take signed scalars)."""
    return u - (1 << 64) if u >= 1 << 63 else u


@dataclass(frozen=True)
class TorusShape:
    """A detected ±J torus: rows × cols spins (node i·cols + j), every coupling ±magnitude, no field."""

    rows: int
    cols: int
    magnitude: float
    down_sign: np.ndarray  # (rows, cols) bool: J between (i, j) and (i + 1, j) is positive
    right_sign: np.ndarray  # (rows, cols) bool: J between (i, j) and (i, j + 1) is positive


def detect_torus(J: sp.csr_matrix, h: np.ndarray) -> TorusShape | None:
    """The torus shape when J is a rows × cols periodic grid numbered row by row (both sides ≥ 3, so its
    four bonds per spin are distinct) with couplings of one magnitude and h = 0; else None. O(nnz),
    vectorized."""
    n = J.shape[0]
    if n < 9 or (h.size and np.any(h != 0)):
        return None
    A = sp.csr_matrix(J)
    if A.nnz != 4 * n or np.any(np.diff(A.indptr) != 4):
        return None
    if not A.has_sorted_indices:
        A = A.sorted_indices()
    nb0 = A.indices[:4]
    cols = int(nb0[2])
    if cols < 3 or n % cols:
        return None
    rows = n // cols
    if rows < 3 or nb0.tolist() != sorted([1, cols - 1, cols, n - cols]):
        return None
    mag = abs(float(A.data[0]))
    if mag == 0 or np.any(np.abs(A.data) != mag):
        return None
    idx = np.arange(n, dtype=np.int64).reshape(rows, cols)
    down = np.roll(idx, -1, axis=0).ravel()
    right = np.roll(idx, -1, axis=1).ravel()
    up = np.roll(idx, 1, axis=0).ravel()
    left = np.roll(idx, 1, axis=1).ravel()
    expect = np.sort(np.stack([down, right, up, left], 1), axis=1)
    ind = A.indices.reshape(n, 4)
    if not np.array_equal(ind, expect):
        return None
    val = A.data.reshape(n, 4)
    down_pos = np.argmax(ind == down[:, None], axis=1)
    right_pos = np.argmax(ind == right[:, None], axis=1)
    at = np.arange(n)
    return TorusShape(
        rows=rows,
        cols=cols,
        magnitude=mag,
        down_sign=(val[at, down_pos] > 0).reshape(rows, cols),
        right_sign=(val[at, right_pos] > 0).reshape(rows, cols),
    )


def pack_rows(bits: np.ndarray, R: int, device: Any) -> torch.Tensor:
    """(rows, cols) bools → (R, cols) int64 words: bit b of word (r, j) = bits[r + b·R, j] (padding 0)."""
    rows, cols = bits.shape
    pad = np.zeros((64 * R, cols), dtype=np.uint64)
    pad[:rows] = bits
    stripes = pad.reshape(64, R, cols)
    w = np.zeros((R, cols), dtype=np.uint64)
    for b in range(64):
        w |= stripes[b] << np.uint64(b)
    return torch.as_tensor(w.view(np.int64), device=device)


class _Stripes(ABC):
    """What both layouts share: the stripes (bit b of word (r, ·) is row r + b·R), the shifts of whole word
    rows to a spin's up / down neighbour across stripe edges and the torus's wrap, unpacking, energy."""

    def __init__(self, shape: TorusShape, R: int, device: Any) -> None:
        self.shape = shape
        self.rows, self.cols = shape.rows, shape.cols
        self.R = R
        self.device = torch.device(device)
        self.n = self.rows * self.cols
        # the last real row's place (word row, bit): its down bond wraps to row 0, bit 0 of word row 0
        self.last_r, self.last_b = (self.rows - 1) % R, (self.rows - 1) // R
        self._buf: list[torch.Tensor] = []

    def _pack_full(self, bits: np.ndarray) -> torch.Tensor:
        return pack_rows(bits, self.R, self.device)

    def _unpack_full(self, full: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """(R, cols) words → spins (n,) of ±1 in `dtype` (bit 1 is s = −1), on the words' device."""
        shifts = torch.arange(64, device=full.device, dtype=torch.int64).view(64, 1, 1)
        bits = torch.bitwise_and(torch.bitwise_right_shift(full.unsqueeze(0), shifts), 1)
        bits = bits.reshape(64 * self.R, self.cols)[: self.rows].reshape(-1)
        return (1 - 2 * bits).to(dtype)

    def _buffers(self, like: torch.Tensor) -> list[torch.Tensor]:
        """Six scratch word arrays shaped like `like` (kept: a fresh tensor per operation cost as much as
        the operation)."""
        if not self._buf or self._buf[0].shape != like.shape or self._buf[0].device != like.device:
            self._buf = [torch.empty_like(like) for _ in range(6)]
        return self._buf

    def up(self, w: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """Each bit's up neighbour (row i − 1; the last row for row 0), from word rows w (R, ·) — for
        PackedTorus the other colour's words, which hold a spin's vertical neighbours at the same k."""
        out = torch.empty_like(w) if out is None else out
        low = torch.bitwise_and(torch.bitwise_right_shift(w[self.last_r], self.last_b), 1)
        out[1:] = w[:-1]
        torch.bitwise_or(torch.bitwise_left_shift(w[-1], 1), low, out=out[0])
        return out

    def down(self, w: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """Each bit's down neighbour (row i + 1; row 0 for the last row), from word rows w (R, ·)."""
        out = torch.empty_like(w) if out is None else out
        out[:-1] = w[1:]
        torch.bitwise_and(torch.bitwise_right_shift(w[0], 1), _LOW63, out=out[-1])
        r, b = self.last_r, self.last_b
        keep = torch.bitwise_and(out[r], _signed(~(1 << b) & ((1 << 64) - 1)))
        torch.bitwise_or(keep, torch.bitwise_left_shift(torch.bitwise_and(w[0], 1), b), out=out[r])
        return out

    @abstractmethod
    def unsatisfied(self, w: torch.Tensor) -> int:
        """The number of unsatisfied bonds (J·sᵢ·sⱼ > 0)."""

    def energy(self, w: torch.Tensor) -> float:
        """sᵀJs of the state (SpecAnn's energy without the constant): each bond counts ±2·magnitude."""
        return 4.0 * self.shape.magnitude * (self.unsatisfied(w) - self.n)


class PackedTorus(_Stripes):
    """The bit layout of a detected torus on a device: packing, neighbour words, energy and one sweep.

    A state is an int64 tensor (2, R, H), H = cols / 2: the words of each colour apart. R is even, so
    every bit of word (r, j) has the colour (r + j) mod 2 (a spin of row r + b·R), and colour c keeps
    word (r, 2k + (r + c) mod 2) at [c, r, k]. A half sweep then touches only the half of the words that
    it updates and the other half, which holds all their neighbours: up and down at the same k (the
    adjacent word row, or the next/previous bit at a stripe's edge), one horizontal neighbour at the same
    k and the other at k ∓ 1 depending on the row's parity.
    """

    def __init__(self, shape: TorusShape, device: Any) -> None:
        R = -(-shape.rows // 64)
        super().__init__(shape, R + R % 2, device)
        self.H = self.cols // 2
        r = np.arange(self.R)[:, None]
        k = np.arange(self.H)[None, :]
        self.colidx = [torch.as_tensor(2 * k + (r + c) % 2, device=self.device) for c in (0, 1)]
        down, right = self._pack_full(shape.down_sign), self._pack_full(shape.right_sign)
        up = self.up(down)  # spin i's up bond is spin i − 1's down bond
        left = torch.roll(right, 1, dims=1)
        self.p_up = self._split(up)
        self.p_down = self._split(down)
        # horizontal bonds: 'same' is the neighbour at the same k (right for even (r + c), left for odd),
        # 'shift' the one at k ∓ 1 (left for even, right for odd)
        even = torch.as_tensor(((r + np.arange(2)[:, None, None]) % 2 == 0), device=self.device)  # (2, R, 1)
        L, Rt = self._split(left), self._split(right)
        self.p_same = torch.where(even, Rt, L)
        self.p_shift = torch.where(even, L, Rt)
        self.real = self._split(self._pack_full(np.ones((self.rows, self.cols), dtype=bool)))
        self.words = 2 * self.R * self.H
        self.n_colors = 2

    def _split(self, full: torch.Tensor) -> torch.Tensor:
        """(R, cols) words → (2, R, H), each colour's words apart."""
        return torch.stack([torch.gather(full, 1, self.colidx[c]) for c in (0, 1)])

    def pack(self, s: torch.Tensor) -> torch.Tensor:
        """Spins (n,) of ±1 → a state (2, R, H), bit 1 for s = −1."""
        return self._split(self._pack_full((s.detach().to("cpu") < 0).numpy().reshape(self.rows, self.cols)))

    def unpack(self, X: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """A state → spins (n,) of ±1 in `dtype`, on the state's device."""
        full = torch.empty((self.R, self.cols), dtype=torch.int64, device=X.device)
        for c in (0, 1):
            full.scatter_(1, self.colidx[c], X[c])
        return self._unpack_full(full, dtype)

    @staticmethod
    def shifted(Y: torch.Tensor, c: int, out: torch.Tensor) -> torch.Tensor:
        """For each spin of colour c, its horizontal neighbour at k ∓ 1: k − 1 (left) on rows r ≡ c, k + 1
        (right) on the others (periodic in k)."""
        a, b = c % 2, 1 - c % 2
        out[a::2, 1:] = Y[a::2, :-1]
        out[a::2, 0] = Y[a::2, -1]
        out[b::2, :-1] = Y[b::2, 1:]
        out[b::2, -1] = Y[b::2, 0]
        return out

    def _unsatisfied_words(self, X: torch.Tensor, c: int) -> list[torch.Tensor]:
        """Four word arrays: bit set where a colour-c spin's up / down / same / shifted bond is unsatisfied."""
        u1, u2, u3, u4 = self._buffers(X[0])[:4]
        Xc, Y = X[c], X[1 - c]
        self.up(Y, u1)
        self.down(Y, u2)
        self.shifted(Y, c, u4)
        torch.bitwise_xor(Y, Xc, out=u3)
        for u, bond in ((u1, self.p_up), (u2, self.p_down), (u3, self.p_same), (u4, self.p_shift)):
            if u is not u3:
                u ^= Xc
            u ^= bond[c]
        return [u1, u2, u3, u4]

    def unsatisfied(self, X: torch.Tensor) -> int:
        """The number of unsatisfied bonds (J·sᵢ·sⱼ > 0): each bond has one end of colour 0."""
        return sum(popcount(torch.bitwise_and(u, self.real[0])) for u in self._unsatisfied_words(X, 0))

    def half_sweep(self, X: torch.Tensor, c: int, one: torch.Tensor, zero: torch.Tensor) -> None:
        """Metropolis on colour c, in place: a spin with 2+ of its 4 bonds unsatisfied flips (ΔE ≤ 0), one
        with 1 flips where `one` (R, H) has its bit, one with none where `zero` has it."""
        u1, u2, u3, u4 = self._unsatisfied_words(X, c)
        a, b = self._buf[4:6]
        flip = metropolis_flips(u1, u2, u3, u4, a, b, one, zero)
        flip &= self.real[c]
        X[c] ^= flip

    def sweep(self, X: torch.Tensor, one: torch.Tensor, zero: torch.Tensor) -> None:
        """Both colours in turn; `one` and `zero` are shaped like X (each colour reads its own half)."""
        for c in (0, 1):
            self.half_sweep(X, c, one[c], zero[c])


class MaskedTorus(_Stripes):
    """The plain bit layout for any torus (sides ≥ 3, odd ones too): a state is (R, cols) words, bit b of
    word (r, j) spin (r + b·R, j), R = ⌈rows/64⌉, and a proper colouring of the spins (three colours for
    odd sides, which have no checkerboard) is kept as one bit mask per colour. A colour's update computes
    every word and flips only its own bits: k colours cost k full passes (the even case, PackedTorus, two
    half passes)."""

    def __init__(self, shape: TorusShape, colors: np.ndarray, device: Any) -> None:
        super().__init__(shape, -(-shape.rows // 64), device)
        self.p_down = self._pack_full(shape.down_sign)
        self.p_right = self._pack_full(shape.right_sign)
        self.p_up = self.up(self.p_down)
        self.p_left = self.left(self.p_right)
        col = np.asarray(colors).reshape(self.rows, self.cols)
        self.color = [self._pack_full(col == c) for c in range(int(col.max()) + 1)]
        self.real = self._pack_full(np.ones((self.rows, self.cols), dtype=bool))
        self.words = self.R * self.cols
        self.n_colors = len(self.color)

    def pack(self, s: torch.Tensor) -> torch.Tensor:
        """Spins (n,) of ±1 → words (R, cols), bit 1 for s = −1."""
        return self._pack_full((s.detach().to("cpu") < 0).numpy().reshape(self.rows, self.cols))

    def unpack(self, w: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """Words → spins (n,) of ±1 in `dtype`, on the words' device."""
        return self._unpack_full(w, dtype)

    @staticmethod
    def left(w: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """Each spin's left neighbour (column j − 1, periodic)."""
        out = torch.empty_like(w) if out is None else out
        out[:, 1:] = w[:, :-1]
        out[:, 0] = w[:, -1]
        return out

    @staticmethod
    def right(w: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
        """Each spin's right neighbour (column j + 1, periodic)."""
        out = torch.empty_like(w) if out is None else out
        out[:, :-1] = w[:, 1:]
        out[:, -1] = w[:, 0]
        return out

    def unsatisfied(self, w: torch.Tensor) -> int:
        """The number of unsatisfied bonds (J·sᵢ·sⱼ > 0): each spin's down and right bonds."""
        d = torch.bitwise_and(self.down(w) ^ w ^ self.p_down, self.real)
        r = torch.bitwise_and(self.right(w) ^ w ^ self.p_right, self.real)
        return popcount(d) + popcount(r)

    def half_sweep(self, w: torch.Tensor, c: int, one: torch.Tensor, zero: torch.Tensor) -> None:
        """Metropolis on colour c, in place (the rule of PackedTorus.half_sweep, over all the words)."""
        u1, u2, u3, u4, a, b = self._buffers(w)
        for u, nb, bond in (
            (u1, self.up, self.p_up),
            (u2, self.down, self.p_down),
            (u3, self.left, self.p_left),
            (u4, self.right, self.p_right),
        ):
            nb(w, out=u)
            u ^= w
            u ^= bond
        flip = metropolis_flips(u1, u2, u3, u4, a, b, one, zero)
        flip &= self.color[c]
        w ^= flip

    def sweep(self, w: torch.Tensor, one: torch.Tensor, zero: torch.Tensor) -> None:
        """Every colour in turn; `one` and `zero` (shaped like w) serve all of them (disjoint bits)."""
        for c in range(self.n_colors):
            self.half_sweep(w, c, one, zero)


def torus_colors(rows: int, cols: int) -> np.ndarray:
    """A proper 3-colouring of the rows × cols torus (sides ≥ 3), node i·cols + j: (f(i) + g(j)) mod 3 with
    f, g proper colourings of the two cycles by 0, 1 (and 2 for the last node of an odd cycle) —
    neighbours differ in one term by a nonzero amount below 3, so their sums differ mod 3."""

    def cycle(m: int) -> np.ndarray:
        c = np.arange(m) % 2
        if m % 2:
            c[-1] = 2
        return c

    return ((cycle(rows)[:, None] + cycle(cols)[None, :]) % 3).ravel()


def pack_torus(shape: TorusShape, device: Any) -> PackedTorus | MaskedTorus:
    """The layout for a detected torus: colours apart (PackedTorus) when both sides are even, else the
    plain layout with the 3-colouring of `torus_colors` as masks."""
    if shape.rows % 2 == 0 and shape.cols % 2 == 0:
        return PackedTorus(shape, device)
    return MaskedTorus(shape, torus_colors(shape.rows, shape.cols), device)


def metropolis_flips(
    u1: torch.Tensor,
    u2: torch.Tensor,
    u3: torch.Tensor,
    u4: torch.Tensor,
    a: torch.Tensor,
    b: torch.Tensor,
    one: torch.Tensor,
    zero: torch.Tensor,
) -> torch.Tensor:
    """The Metropolis decision of 64 spins per word from their four unsatisfied-bond words u1..u4: a
    spin flips with 2+ unsatisfied bonds (ΔE ≤ 0), with 1 where `one` has its bit, with none where `zero`
    has it. In place: u1..u4, a and b are overwritten; the flip words are returned in u2's storage."""
    torch.bitwise_xor(u1, u2, out=a)  # u1 + u2 = a + 2·(u1 & u2)
    u1 &= u2
    torch.bitwise_xor(u3, u4, out=b)
    u3 &= u4
    torch.bitwise_and(a, b, out=u2)  # 2+ unsatisfied: a carry, or both half sums
    u2 |= u1
    u2 |= u3
    a |= b  # 1+ unsatisfied
    a |= u1
    a |= u3
    torch.bitwise_and(a, one, out=b)
    u2 |= b
    torch.bitwise_not(a, out=a)
    a &= zero
    u2 |= a
    return u2


def popcount(w: torch.Tensor) -> int:
    """Set bits of an int64 tensor (SWAR to byte counts, then a byte sum)."""
    x = w - torch.bitwise_and(torch.bitwise_right_shift(w, 1), 0x5555555555555555)
    m2 = 0x3333333333333333
    x = torch.bitwise_and(x, m2) + torch.bitwise_and(torch.bitwise_right_shift(x, 2), m2)
    x = torch.bitwise_and(x + torch.bitwise_right_shift(x, 4), 0x0F0F0F0F0F0F0F0F)
    return int(x.view(torch.uint8).sum())


class RandomWords:
    """Words of independent Bernoulli(p) bits. Large p: p's binary digits combine uniform words (x ← x | R
    for a 1, x & R for a 0, least significant digit first), the uniform words coming from one xorshift64
    stream per word (Marsaglia 2003; six in-place word operations per fresh word). Small p: the set
    positions are drawn directly as geometric gaps (distinct, O(p · bits) work). Each call takes
    whichever is cheaper (a drawn position costs about a hundred word operations)."""

    _LOW57 = (1 << 57) - 1

    def __init__(self, words: int, generator: torch.Generator, device: Any) -> None:
        self.words = words
        self.generator = generator
        self.x = torch.empty(words, dtype=torch.int64, device=device).random_(-(1 << 63), None, generator=generator)
        self.x[self.x == 0] = 1  # xorshift's one fixed point
        self.tmp = torch.empty_like(self.x)

    def uniform(self) -> torch.Tensor:
        """The next uniform word of each stream (the state itself: valid until the next call)."""
        x, t = self.x, self.tmp
        torch.bitwise_left_shift(x, 13, out=t)
        x ^= t
        torch.bitwise_right_shift(x, 7, out=t)
        t &= self._LOW57  # a logical shift: clear what the arithmetic shift dragged in
        x ^= t
        torch.bitwise_left_shift(x, 17, out=t)
        x ^= t
        return x

    def bernoulli(self, p: float, out: torch.Tensor) -> torch.Tensor:
        """Fill `out` (words int64) with Bernoulli(p) bits; p's digits are kept to within 1/8 of p."""
        if p <= 0.0:
            return out.zero_()
        if p >= 1.0:
            return out.fill_(-1)
        digits = min(62, math.ceil(-math.log2(p)) + 3)
        if 64.0 * p * 100.0 >= 8.0 * digits:  # the digits are cheaper
            q = min(max(int(round(p * (1 << digits))), 1), (1 << digits) - 1)
            low = (q & -q).bit_length() - 1  # below p's lowest 1 digit, x & R would keep x = 0
            out.copy_(self.uniform())
            for k in range(low + 1, digits):
                if (q >> k) & 1:
                    out |= self.uniform()
                else:
                    out &= self.uniform()
            return out
        out.zero_()
        nbits = 64 * self.words
        log_q = math.log1p(-p)
        pos_end = -1
        expected = nbits * p
        while True:
            k = int(expected + 6.0 * math.sqrt(expected) + 64)
            # float32 suffices: ln u ≥ ln 2⁻²⁴ truncates the geometric tail at probability e^(−16.6)
            u = torch.rand(k, generator=self.generator, device=out.device, dtype=torch.float32)
            gaps = u.log_().mul_(1.0 / log_q).floor_().clamp_(max=float(nbits)).to(torch.int64).add_(1)
            pos = torch.cumsum(gaps, 0).add_(pos_end)
            inside = pos[: int(torch.searchsorted(pos, nbits))]  # pos is increasing
            if inside.numel():
                out.index_add_(0, inside >> 6, torch.bitwise_left_shift(torch.ones_like(inside), inside & 63))
            if inside.numel() < k:  # the walk left the words
                return out
            pos_end = int(pos[-1])
            expected = (nbits - pos_end) * p


@no_grad
def anneal_torus(
    packed: PackedTorus | MaskedTorus,
    s: torch.Tensor,
    t_start: float,
    t_end: float,
    sweeps: int,
    generator: torch.Generator,
    time_budget: float = math.inf,
    stop: Callable[[], bool] | None = None,
    progress: Callable[[float], None] | None = None,
    track_every: int = 32,
) -> tuple[torch.Tensor, float, int]:
    """Anneal one state s (n,) of ±1 from t_start to t_end on the bit layout: geometric schedule driven by
    max(sweep fraction, time fraction), like `anneal` (same temperature units: a flip's ΔE is
    4·magnitude·(4 − 2·unsatisfied bonds)). The best state is tracked every `track_every` sweeps, four
    times as often in the last tenth, and at the end (an energy costs about a sweep); `progress(best
    energy)` is called on each improvement. Returns (the best state (n,) in s's dtype, its energy sᵀJs,
    sweeps done)."""
    start = time.perf_counter()
    log_ratio = math.log(t_end / t_start)
    w = packed.pack(s)
    best_w = w.clone()
    best_E = packed.energy(w)
    dE = 8.0 * packed.shape.magnitude  # one unsatisfied bond of four: ΔE = +8·magnitude (none: 16·magnitude)
    rand = RandomWords(packed.words, generator, w.device)
    one, zero = torch.empty_like(w), torch.empty_like(w)  # one draw serves every colour: their bits are disjoint
    done = 0
    for k in range(sweeps):
        frac = max(k / sweeps, (time.perf_counter() - start) / time_budget)
        if frac >= 1.0 or (stop is not None and stop()):
            break
        T = t_start * math.exp(log_ratio * frac)
        p_one = math.exp(-dE / T)
        rand.bernoulli(p_one, one.view(-1))
        rand.bernoulli(p_one * p_one, zero.view(-1))
        packed.sweep(w, one, zero)
        done = k + 1
        if done % (track_every if frac <= 0.9 else max(1, track_every // 4)) == 0:
            E = packed.energy(w)
            if E < best_E:
                best_E = E
                best_w.copy_(w)
                if progress is not None:
                    progress(best_E)
    E = packed.energy(w)
    if E < best_E:
        best_E, best_w = E, w
        if progress is not None:
            progress(best_E)
    return packed.unpack(best_w, s.dtype), best_E, done
