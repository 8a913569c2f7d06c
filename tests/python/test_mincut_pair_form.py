"""The CPU's symmetric int32 path (the solver reads the user's source, sink and edges and checks
them as it fills) against the int64 path (the reduction to net terminals, then the solver):
the same cuts, flows and error messages on the same graphs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchgrabcut


def _graph(rng: np.random.Generator, b: int, h: int, w: int, k: int, high: int) -> tuple[torch.Tensor, ...]:
    source = torch.from_numpy(rng.integers(0, high, (b, h, w)).astype(np.int32))
    sink = torch.from_numpy(rng.integers(0, high, (b, h, w)).astype(np.int32))
    edges = torch.from_numpy(rng.integers(0, high, (b, k, h, w)).astype(np.int32))
    return source, sink, edges


@pytest.mark.parametrize("k", [2, 4])
@pytest.mark.parametrize(("h", "w"), [(1, 1), (1, 7), (6, 1), (9, 13), (40, 33)])
def test_int32_equals_int64(k: int, h: int, w: int) -> None:
    rng = np.random.default_rng(h * 100 + w + k)
    for high in (3, 50, 2**26):
        s, t, e = _graph(rng, 3, h, w, k, high)
        a = torchgrabcut.mincut(s, t, e)
        r = torchgrabcut.mincut(s.long(), t.long(), e.long())
        assert torch.equal(a.cut, r.cut)
        assert torch.equal(a.flow, r.flow)


def _message(s: torch.Tensor, t: torch.Tensor, e: torch.Tensor) -> str:
    with pytest.raises(ValueError) as info:
        torchgrabcut.mincut(s, t, e)
    return str(info.value)


@pytest.mark.parametrize("k", [2, 4])
def test_int32_errors_are_the_int64_errors(k: int) -> None:
    rng = np.random.default_rng(7 + k)
    bound = 2**30 - 1
    cases = 0
    for trial in range(60):
        b, h, w = 3, 5, 6
        s, t, e = _graph(rng, b, h, w, k, 100)
        for _ in range(int(rng.integers(1, 3))):
            which = int(rng.integers(0, 3))
            value = int(rng.choice([-1, -(2**31), bound + 1, 2**31 - 1, bound // 2, bound]))
            g, y, x = (int(rng.integers(0, n)) for n in (b, h, w))
            if which == 0:
                s[g, y, x] = value
            elif which == 1:
                t[g, y, x] = value
            else:
                e[g, int(rng.integers(0, k)), y, x] = value
        try:
            expected = _message(s.long(), t.long(), e.long())
        except pytest.fail.Exception:
            # No error (an edge off the grid): both paths must solve it alike.
            a, r = torchgrabcut.mincut(s, t, e), torchgrabcut.mincut(s.long(), t.long(), e.long())
            assert torch.equal(a.cut, r.cut) and torch.equal(a.flow, r.flow)
            continue
        assert _message(s, t, e) == expected, trial
        cases += 1
    assert cases > 30


def test_int32_inputs_untouched_and_repeatable() -> None:
    rng = np.random.default_rng(3)
    s, t, e = _graph(rng, 2, 30, 31, 2, 40)
    copies = [x.clone() for x in (s, t, e)]
    first = torchgrabcut.mincut(s, t, e)
    s[1, 0, 0] = -5
    with pytest.raises(ValueError, match=r"^source: .* got -5 at graph 1, pixel \(y=0, x=0\)$"):
        torchgrabcut.mincut(s, t, e)
    s[1, 0, 0] = copies[0][1, 0, 0]
    for x, c in zip((s, t, e), copies, strict=True):
        assert torch.equal(x, c)
    again = torchgrabcut.mincut(s, t, e)
    assert torch.equal(first.cut, again.cut) and torch.equal(first.flow, again.flow)


def _graph3d(rng: np.random.Generator, b: int, shape: tuple[int, int, int], high: int) -> tuple[torch.Tensor, ...]:
    source = torch.from_numpy(rng.integers(0, high, (b, *shape)).astype(np.int32))
    sink = torch.from_numpy(rng.integers(0, high, (b, *shape)).astype(np.int32))
    edges = torch.from_numpy(rng.integers(0, high, (b, 3, *shape)).astype(np.int32))
    return source, sink, edges


@pytest.mark.parametrize("shape", [(1, 1, 1), (1, 1, 7), (6, 1, 1), (1, 5, 1), (4, 9, 13), (17, 12, 10)])
def test_3d_int32_equals_int64(shape: tuple[int, int, int]) -> None:
    rng = np.random.default_rng(sum(shape))
    for high in (3, 50, 2**26):
        # Twice per size: the solver keeps its buffers for the next graph of the same size.
        for _ in range(2):
            s, t, e = _graph3d(rng, 3, shape, high)
            a = torchgrabcut.mincut(s, t, e)
            r = torchgrabcut.mincut(s.long(), t.long(), e.long())
            assert torch.equal(a.cut, r.cut)
            assert torch.equal(a.flow, r.flow)


def test_3d_int32_errors_are_the_int64_errors() -> None:
    rng = np.random.default_rng(36)
    bound = 2**30 - 1
    cases = 0
    shape = (4, 5, 6)
    for trial in range(60):
        s, t, e = _graph3d(rng, 3, shape, 100)
        for _ in range(int(rng.integers(1, 3))):
            which = int(rng.integers(0, 3))
            value = int(rng.choice([-1, -(2**31), bound + 1, 2**31 - 1, bound // 2, bound]))
            g, z, y, x = int(rng.integers(0, 3)), *(int(rng.integers(0, n)) for n in shape)
            if which == 0:
                s[g, z, y, x] = value
            elif which == 1:
                t[g, z, y, x] = value
            else:
                e[g, int(rng.integers(0, 3)), z, y, x] = value
        try:
            expected = _message(s.long(), t.long(), e.long())
        except pytest.fail.Exception:
            a, r = torchgrabcut.mincut(s, t, e), torchgrabcut.mincut(s.long(), t.long(), e.long())
            assert torch.equal(a.cut, r.cut) and torch.equal(a.flow, r.flow)
            continue
        assert _message(s, t, e) == expected, trial
        cases += 1
        # A solve that stopped on the error leaves nothing behind for the next one.
        s, t, e = _graph3d(rng, 3, shape, 100)
        a, r = torchgrabcut.mincut(s, t, e), torchgrabcut.mincut(s.long(), t.long(), e.long())
        assert torch.equal(a.cut, r.cut) and torch.equal(a.flow, r.flow)
    assert cases > 30
