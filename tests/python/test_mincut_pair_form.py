"""The CPU's symmetric int32 path (the solver reads the user's source, sink and edges and checks
them as it fills) against the int64 path (the reduction to net terminals, then the solver):
the same cuts, flows and error messages on the same graphs, 2D and 3D."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchgrabcut


def _graph(rng: np.random.Generator, b: int, shape: tuple[int, ...], k: int, high: int) -> tuple[torch.Tensor, ...]:
    """(source, sink, edges) int32 of b graphs of `shape`, k edge planes each."""
    source = torch.from_numpy(rng.integers(0, high, (b, *shape)).astype(np.int32))
    sink = torch.from_numpy(rng.integers(0, high, (b, *shape)).astype(np.int32))
    edges = torch.from_numpy(rng.integers(0, high, (b, k, *shape)).astype(np.int32))
    return source, sink, edges


def _same_result(s: torch.Tensor, t: torch.Tensor, e: torch.Tensor) -> None:
    a, r = torchgrabcut.mincut(s, t, e), torchgrabcut.mincut(s.long(), t.long(), e.long())
    assert torch.equal(a.cut, r.cut)
    assert torch.equal(a.flow, r.flow)


@pytest.mark.parametrize("k", [2, 4])
@pytest.mark.parametrize(("h", "w"), [(1, 1), (1, 7), (6, 1), (9, 13), (40, 33)])
def test_int32_equals_int64(k: int, h: int, w: int) -> None:
    rng = np.random.default_rng(h * 100 + w + k)
    for high in (3, 50, 2**26):
        _same_result(*_graph(rng, 3, (h, w), k, high))


@pytest.mark.parametrize("shape", [(1, 1, 1), (1, 1, 7), (6, 1, 1), (1, 5, 1), (4, 9, 13), (17, 12, 10)])
def test_3d_int32_equals_int64(shape: tuple[int, int, int]) -> None:
    rng = np.random.default_rng(sum(shape))
    for high in (3, 50, 2**26):
        # Twice per size: the solver keeps its buffers for the next graph of the same size.
        for _ in range(2):
            _same_result(*_graph(rng, 3, shape, 3, high))


def _message(s: torch.Tensor, t: torch.Tensor, e: torch.Tensor) -> str:
    with pytest.raises(ValueError) as info:
        torchgrabcut.mincut(s, t, e)
    return str(info.value)


def _errors_match(rng: np.random.Generator, shape: tuple[int, ...], k: int) -> None:
    """Graphs with one or two values out of bounds: the int32 path raises the int64 path's message,
    and a solve that stopped on an error leaves nothing behind for the next one."""
    bound = 2**30 - 1
    b = 3
    cases = 0
    for trial in range(60):
        s, t, e = _graph(rng, b, shape, k, 100)
        for _ in range(int(rng.integers(1, 3))):
            which = int(rng.integers(0, 3))
            value = int(rng.choice([-1, -(2**31), bound + 1, 2**31 - 1, bound // 2, bound]))
            at = (int(rng.integers(0, b)), *(int(rng.integers(0, n)) for n in shape))
            if which == 0:
                s[at] = value
            elif which == 1:
                t[at] = value
            else:
                e[(at[0], int(rng.integers(0, k)), *at[1:])] = value
        try:
            expected = _message(s.long(), t.long(), e.long())
        except pytest.fail.Exception:
            # No error (an edge off the grid): both paths must solve it alike.
            _same_result(s, t, e)
            continue
        assert _message(s, t, e) == expected, trial
        cases += 1
        _same_result(*_graph(rng, b, shape, k, 100))
    assert cases > 30


@pytest.mark.parametrize("k", [2, 4])
def test_int32_errors_are_the_int64_errors(k: int) -> None:
    _errors_match(np.random.default_rng(7 + k), (5, 6), k)


def test_3d_int32_errors_are_the_int64_errors() -> None:
    _errors_match(np.random.default_rng(36), (4, 5, 6), 3)


def test_int32_inputs_untouched_and_repeatable() -> None:
    rng = np.random.default_rng(3)
    s, t, e = _graph(rng, 2, (30, 31), 2, 40)
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
