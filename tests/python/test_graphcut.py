"""torchgrabcut.mincut against independent solvers, its bounds and its errors.

References, none of them ours:
- a plain Edmonds-Karp max-flow written here, with the canonical cut found by a
  search backward from the sink in its residual graph (tiny graphs);
- PyMaxflow (Boykov-Kolmogorov) for the flow value, and for the canonical cut on a
  perturbed graph: every capacity times (N + 1) and 1 more on each pixel's source
  edge. A cut then costs (N + 1) * C + (pixels on the sink side), so the perturbed
  graph's only minimum cut is the original's minimum cut with the most pixels on the
  source side, which is the canonical one (the union of all minimum source sets is a
  minimum source set). PyMaxflow's float graph is exact here: every value stays an
  integer below 2^53, which each test asserts.
Every result is also checked on its own: the capacity of the cut returned equals the
flow value returned.
"""

from __future__ import annotations

import collections
from typing import Any

import numpy as np
import pytest
import torch

import torchgrabcut
from conftest import has_cuda
from torchgrabcut.graphcut import MAX_NODE_SUM, NEIGHBOURS

CUDA = pytest.param("cuda", marks=pytest.mark.skipif(not has_cuda(), reason="no CUDA GPU"))
DEVICES = ["cpu", CUDA]
Graph = dict[str, np.ndarray]  # source, sink (H, W); edges, [reverse] (K, H, W): int64


# ---------------------------------------------------------------- graphs


OFFSETS_3D: list[tuple[int, ...]] = [(0, 0, 1), (0, 1, 0), (1, 0, 0)]


def offsets_of(g: Graph) -> list[tuple[int, ...]]:
    """The forward neighbours of the graph's edges[k]: 3D (K = 3) or 2D by K."""
    return OFFSETS_3D if g["source"].ndim == 3 else list(NEIGHBOURS[len(g["edges"])])


def pairs(offset: tuple[int, ...], sizes: tuple[int, ...]) -> tuple[tuple[slice, ...], tuple[slice, ...]]:
    """Slices of the pixels p whose neighbour p + offset is on the grid, and of those neighbours."""
    here = tuple(slice(max(0, -o), n - max(0, o)) for o, n in zip(offset, sizes, strict=True))
    there = tuple(slice(max(0, o), n - max(0, -o)) for o, n in zip(offset, sizes, strict=True))
    return here, there


def edge_mask(kk: int, h: int, w: int) -> np.ndarray:
    """(K, h, w) bool: where each edge stays inside the grid."""
    yy, xx = np.mgrid[0:h, 0:w]
    return np.stack([(yy + dy < h) & (xx + dx >= 0) & (xx + dx < w) for dy, dx in NEIGHBOURS[kk]])


def node_sums(g: Graph) -> np.ndarray:
    """Each pixel's source + sink + its edges inside the grid, both directions."""
    total = g["source"] + g["sink"]
    sizes = total.shape
    for name in ("edges", "reverse"):
        if name not in g:
            continue
        for k, offset in enumerate(offsets_of(g)):
            here, there = pairs(offset, sizes)
            total[here] += g[name][k][here]
            total[there] += g[name][k][here]
    return total


KINDS = ["random", "tiny", "huge", "zero", "all_source", "all_sink", "checkerboard", "snake", "ties", "smooth"]


def make_graph(rng: np.random.Generator, h: int, w: int, kk: int, kind: str, asymmetric: bool = False) -> Graph:
    """A graph of one kind, within the node-sum bound."""
    terms = 2 + (4 if asymmetric else 2) * kk
    big = MAX_NODE_SUM // terms
    shape = (kk, h, w)
    if kind == "random":
        e, s, t = rng.integers(0, 100, shape), rng.integers(0, 300, (h, w)), rng.integers(0, 300, (h, w))
    elif kind == "tiny":
        e, s, t = rng.integers(0, 3, shape), rng.integers(0, 3, (h, w)), rng.integers(0, 3, (h, w))
    elif kind == "huge":
        e, s, t = (
            rng.integers(big // 2, big + 1, shape),
            rng.integers(0, big + 1, (h, w)),
            rng.integers(0, big + 1, (h, w)),
        )
    elif kind == "zero":
        e, s, t = np.zeros(shape, np.int64), np.zeros((h, w), np.int64), np.zeros((h, w), np.int64)
    elif kind == "all_source":
        e, s, t = rng.integers(0, 50, shape), rng.integers(100, 200, (h, w)), rng.integers(0, 5, (h, w))
    elif kind == "all_sink":
        e, s, t = rng.integers(0, 50, shape), rng.integers(0, 5, (h, w)), rng.integers(100, 200, (h, w))
    elif kind == "checkerboard":
        yy, xx = np.mgrid[0:h, 0:w]
        black = (yy + xx) % 2 == 0
        e = rng.integers(20, 60, shape)
        s, t = np.where(black, 90, 0), np.where(black, 0, 90)
    elif kind == "snake":
        # A corridor of strong edges winding through the grid, weak elsewhere: source at
        # its head, sink at its tail, so the flow runs along a path as long as the grid.
        e = np.ones(shape, np.int64)
        for y in range(0, h, 2):
            e[0, y, :] = 1000  # the row, rightward
            x = w - 1 if (y // 2) % 2 == 0 else 0
            e[1, y, x] = 1000  # down to the next row at alternating ends
        if h % 2 == 0:
            e[1, h - 1, :] = 1
        s, t = np.zeros((h, w), np.int64), np.zeros((h, w), np.int64)
        s[0, 0] = 5000
        last = h - 1 - (h - 1) % 2
        t[last, w - 1 if (last // 2) % 2 == 0 else 0] = 5000
    elif kind == "ties":
        # Every cut between equal halves costs the same: many minimum cuts to choose from.
        e, s, t = np.full(shape, 2), np.full((h, w), 4), np.full((h, w), 4)
    elif kind == "smooth":
        # A segmentation-like graph: smooth unary, edges strong inside regions.
        yy, xx = np.mgrid[0:h, 0:w]
        p = 1 / (1 + np.exp(-((xx - w / 2) + 0.5 * (yy - h / 2)) / max(2.0, w / 8)))
        p = np.clip(p + rng.normal(0, 0.1, (h, w)), 0.01, 0.99)
        s, t = np.rint(-np.log(1 - p) * 50), np.rint(-np.log(p) * 50)
        e = rng.integers(30, 40, shape)
    else:
        raise AssertionError(kind)
    g: Graph = {"source": np.asarray(s, np.int64), "sink": np.asarray(t, np.int64), "edges": np.asarray(e, np.int64)}
    if asymmetric:
        g["reverse"] = (
            g["edges"][:, ::-1, ::-1].copy()
            if kind in ("snake", "ties", "zero")
            else rng.integers(0, int(g["edges"].max()) + 1, shape)
        )
    assert node_sums(g).max(initial=0) <= MAX_NODE_SUM, kind
    return g


def call(gs: list[Graph], device: str = "cpu", dtype: torch.dtype = torch.int32) -> torchgrabcut.MinCut:
    def stack(name: str) -> torch.Tensor:
        return torch.from_numpy(np.stack([g[name] for g in gs])).to(device=device, dtype=dtype)

    rev = stack("reverse") if "reverse" in gs[0] else None
    return torchgrabcut.mincut(stack("source"), stack("sink"), stack("edges"), reverse_edges=rev)


# ---------------------------------------------------------------- references


def cut_capacity(g: Graph, cut: np.ndarray) -> int:
    """Capacity of the cut (True = source side) in the graph as given, in Python integers."""
    total = int(g["sink"][cut].sum()) + int(g["source"][~cut].sum())
    rev = g.get("reverse", g["edges"])
    for k, offset in enumerate(offsets_of(g)):
        here, there = pairs(offset, cut.shape)
        p, q = cut[here], cut[there]
        a, r = g["edges"][k][here], rev[k][here]
        total += int(a[p & ~q].sum()) + int(r[~p & q].sum())
    return total


def arcs(g: Graph) -> list[tuple[int, int, int]]:
    """(u, v, capacity) of every arc; pixels 0..N-1 in raster order, source N, sink N + 1."""
    shape = g["source"].shape
    n = g["source"].size
    ids = np.arange(n).reshape(shape)
    out = [(n, int(i), int(c)) for i, c in zip(ids.ravel(), g["source"].ravel(), strict=True)]
    out += [(int(i), n + 1, int(c)) for i, c in zip(ids.ravel(), g["sink"].ravel(), strict=True)]
    rev = g.get("reverse", g["edges"])
    for k, offset in enumerate(offsets_of(g)):
        here, there = pairs(offset, shape)
        for i, j, a, r in zip(
            ids[here].ravel(), ids[there].ravel(), g["edges"][k][here].ravel(), rev[k][here].ravel(), strict=True
        ):
            out += [(int(i), int(j), int(a)), (int(j), int(i), int(r))]
    return out


def edmonds_karp(g: Graph) -> tuple[int, np.ndarray]:
    """Maximum flow value and canonical cut (not reaching the sink in the residual graph)."""
    n = g["source"].size
    s, t = n, n + 1
    residual: dict[int, dict[int, int]] = collections.defaultdict(lambda: collections.defaultdict(int))
    for u, v, c in arcs(g):
        residual[u][v] += c
        residual[v][u] += 0
    flow = 0
    while True:
        parent = {s: s}
        queue = collections.deque([s])
        while queue and t not in parent:
            u = queue.popleft()
            for v, c in residual[u].items():
                if c > 0 and v not in parent:
                    parent[v] = u
                    queue.append(v)
        if t not in parent:
            break
        path, v = [], t
        while v != s:
            path.append((parent[v], v))
            v = parent[v]
        bottleneck = min(residual[u][v] for u, v in path)
        for u, v in path:
            residual[u][v] -= bottleneck
            residual[v][u] += bottleneck
        flow += bottleneck
    reaches_sink = {t}
    queue = collections.deque([t])
    while queue:
        v = queue.popleft()
        for u in list(residual[v]):
            if u not in reaches_sink and residual[u][v] > 0:
                reaches_sink.add(u)
                queue.append(u)
    cut = np.array([p not in reaches_sink for p in range(n)]).reshape(g["source"].shape)
    return flow, cut


def pymaxflow(g: Graph, factor: int = 1, source_bonus: int = 0) -> tuple[float, np.ndarray]:
    """PyMaxflow's flow value and its cut (True = source side) of the graph, capacities * factor."""
    maxflow = pytest.importorskip("maxflow")
    graph = maxflow.Graph[float]()
    ids = graph.add_grid_nodes(g["source"].shape)
    rev = g.get("reverse", g["edges"])
    for k, offset in enumerate(offsets_of(g)):
        here, there = pairs(offset, g["source"].shape)
        a = g["edges"][k][here].ravel().astype(np.float64) * factor
        r = rev[k][here].ravel().astype(np.float64) * factor
        graph.add_edges(ids[here].ravel(), ids[there].ravel(), a, r)
    graph.add_grid_tedges(
        ids, g["source"].astype(np.float64) * factor + source_bonus, g["sink"].astype(np.float64) * factor
    )
    flow = graph.maxflow()
    return flow, ~graph.get_grid_segments(ids)


def reference(g: Graph) -> tuple[int, np.ndarray]:
    """Flow value and canonical cut from PyMaxflow (module docstring)."""
    n = g["source"].size
    total = int(node_sums(g).sum()) * (n + 1) + n
    assert total < 2**53, "the perturbed graph would not be exact in float64"
    flow, _ = pymaxflow(g)
    _, cut = pymaxflow(g, factor=n + 1, source_bonus=1)
    return round(flow), cut


def check(g: Graph, cut: torch.Tensor, flow: torch.Tensor, ref: tuple[int, np.ndarray] | None = None) -> None:
    ours = cut.cpu().numpy()
    assert cut.dtype == torch.bool and flow.dtype == torch.int64
    assert cut_capacity(g, ours) == int(flow), "the cut's capacity differs from the flow value"
    ref_flow, ref_cut = ref if ref is not None else reference(g)
    assert int(flow) == ref_flow
    assert np.array_equal(ours, ref_cut), f"{int((ours != ref_cut).sum())} pixels differ from the canonical cut"


# ---------------------------------------------------------------- against the references


@pytest.mark.parametrize("asymmetric", [False, True])
@pytest.mark.parametrize("kk", [2, 4])
@pytest.mark.parametrize("kind", KINDS)
def test_tiny_graphs_match_edmonds_karp(kind: str, kk: int, asymmetric: bool) -> None:
    rng = np.random.default_rng([KINDS.index(kind), kk, asymmetric])
    for h, w in [(1, 1), (1, 5), (4, 1), (3, 4), (6, 5)]:
        g = make_graph(rng, h, w, kk, kind, asymmetric)
        cut, flow, scale = call([g])
        check(g, cut[0], flow[0], edmonds_karp(g))
        assert scale.tolist() == [1.0]


SIZES = [(1, 1), (1, 17), (17, 1), (2, 2), (31, 33), (64, 48)]


@pytest.mark.parametrize("asymmetric", [False, True])
@pytest.mark.parametrize("kk", [2, 4])
@pytest.mark.parametrize("kind", KINDS)
def test_graphs_match_pymaxflow(kind: str, kk: int, asymmetric: bool) -> None:
    rng = np.random.default_rng([KINDS.index(kind), kk, asymmetric, 1])
    graphs = [make_graph(rng, h, w, kk, kind, asymmetric) for h, w in SIZES]
    for g in graphs:
        cut, flow, _ = call([g])
        check(g, cut[0], flow[0])


@pytest.mark.parametrize("kk", [2, 4])
def test_a_512_by_512_graph_matches_pymaxflow(kk: int) -> None:
    g = make_graph(np.random.default_rng(kk), 512, 512, kk, "smooth")
    cut, flow, _ = call([g])
    check(g, cut[0], flow[0])


def test_a_mixed_batch_equals_its_graphs_one_by_one() -> None:
    rng = np.random.default_rng(5)
    graphs = [make_graph(rng, 40, 56, 4, kind) for kind in KINDS]
    cut, flow, _ = call(graphs)
    for b, g in enumerate(graphs):
        one_cut, one_flow, _ = call([g])
        assert torch.equal(cut[b], one_cut[0]) and int(flow[b]) == int(one_flow[0])
        check(g, cut[b], flow[b])


def test_repeated_calls_are_identical() -> None:
    g = make_graph(np.random.default_rng(3), 300, 257, 4, "smooth")
    first = call([g])
    for _ in range(3):
        again = call([g])
        assert torch.equal(first.cut, again.cut) and torch.equal(first.flow, again.flow)


def test_threads_do_not_change_the_result() -> None:
    g = make_graph(np.random.default_rng(4), 300, 300, 4, "smooth")
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = call([g, g])
        torch.set_num_threads(max(2, threads))
        many = call([g, g])
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(one.cut, many.cut) and torch.equal(one.flow, many.flow)


# ---------------------------------------------------------------- the API's forms


def test_unbatched_int64_and_small_dtypes() -> None:
    g = make_graph(np.random.default_rng(6), 12, 10, 2, "random")
    batched = call([g])
    s, t, e = (torch.from_numpy(g[n]) for n in ("source", "sink", "edges"))
    one = torchgrabcut.mincut(s, t, e)
    assert one.cut.shape == (12, 10) and one.flow.shape == () and float(one.scale) == 1.0
    assert torch.equal(one.cut, batched.cut[0]) and int(one.flow) == int(batched.flow[0])
    small = torchgrabcut.mincut(s.to(torch.int16), t.to(torch.uint8).clamp(max=255).to(torch.int16), e.to(torch.int16))
    tiny = make_graph(np.random.default_rng(7), 5, 6, 4, "tiny")
    as_uint8 = torchgrabcut.mincut(*(torch.from_numpy(tiny[n]).to(torch.uint8) for n in ("source", "sink", "edges")))
    check(tiny, as_uint8.cut, as_uint8.flow, edmonds_karp(tiny))
    assert small.cut.shape == (12, 10)


def test_a_symmetric_graph_equals_its_asymmetric_form() -> None:
    g = make_graph(np.random.default_rng(8), 33, 35, 4, "random")
    sym = call([g])
    asym = call([{**g, "reverse": g["edges"].copy()}])
    assert torch.equal(sym.cut, asym.cut) and torch.equal(sym.flow, asym.flow)


def test_edges_that_leave_the_grid_are_ignored() -> None:
    g = make_graph(np.random.default_rng(2), 9, 7, 4, "random")
    a = call([g], dtype=torch.int64)
    for junk in (10**12, -5):
        b = call([{**g, "edges": np.where(edge_mask(4, 9, 7), g["edges"], junk)}], dtype=torch.int64)
        assert torch.equal(a.cut, b.cut) and torch.equal(a.flow, b.flow)
    f = call([g], dtype=torch.float64)
    fn = torchgrabcut.mincut(
        torch.from_numpy(g["source"]).double()[None],
        torch.from_numpy(g["sink"]).double()[None],
        torch.from_numpy(np.where(edge_mask(4, 9, 7), g["edges"], np.nan))[None],
    )
    assert torch.equal(f.cut, fn.cut) and torch.equal(f.flow, fn.flow)


def test_float_capacities_with_a_scale_chosen_from_the_data() -> None:
    rng = np.random.default_rng(12)
    s, t = rng.uniform(0, 1, (2, 20, 30)), rng.uniform(0, 1, (2, 20, 30))
    e = rng.uniform(0, 0.5, (2, 4, 20, 30))
    e[1] *= 1000  # the second graph's scale is chosen for it alone
    r = torchgrabcut.mincut(torch.from_numpy(s), torch.from_numpy(t), torch.from_numpy(e))
    scales = r.scale.tolist()
    assert all(x > 0 and np.log2(x) == int(np.log2(x)) for x in scales) and scales[0] > scales[1]
    for b in range(2):
        g = {n: np.rint(v[b] * scales[b]).astype(np.int64) for n, v in (("source", s), ("sink", t), ("edges", e))}
        sums = node_sums(g)
        assert MAX_NODE_SUM // 2 < sums.max() <= MAX_NODE_SUM  # the largest power of two that fits
        check(g, r.cut[b], r.flow[b])
        assert abs(int(r.flow[b]) / scales[b] - cut_capacity(g, r.cut[b].numpy()) / scales[b]) < 1e-9
    fixed = torchgrabcut.mincut(
        torch.from_numpy(s).float(), torch.from_numpy(t).float(), torch.from_numpy(e).float(), scale=1000
    )
    assert fixed.scale.tolist() == [1000.0, 1000.0]
    g0 = {
        n: np.rint(v[0].astype(np.float32).astype(np.float64) * 1000).astype(np.int64)
        for n, v in (("source", s), ("sink", t), ("edges", e))
    }
    check(g0, fixed.cut[0], fixed.flow[0])


def test_inputs_are_left_untouched_and_outputs_need_no_grad() -> None:
    rng = np.random.default_rng(13)
    s = torch.rand(2, 8, 9, requires_grad=True)
    t = torch.rand(2, 8, 9)
    e = torch.rand(2, 4, 8, 9)
    copies = [x.detach().clone() for x in (s, t, e)]
    r = torchgrabcut.mincut(s, t, e)
    assert not r.cut.requires_grad and not r.flow.requires_grad
    assert all(torch.equal(a.detach(), b) for a, b in zip((s, t, e), copies, strict=True))
    ints = [torch.from_numpy(rng.integers(0, 50, shape)) for shape in ((1, 8, 9), (1, 8, 9), (1, 2, 8, 9))]
    backup = [x.clone() for x in ints]
    torchgrabcut.mincut(*ints)
    assert all(torch.equal(a, b) for a, b in zip(ints, backup, strict=True))
    # float64 capacities, which the float path reads without a copy (off-grid edges nonzero too).
    floats = [torch.from_numpy(rng.uniform(0, 9, shape)) for shape in ((2, 8, 9), (2, 8, 9), (2, 4, 8, 9))]
    backup = [x.clone() for x in floats]
    torchgrabcut.mincut(*floats)
    torchgrabcut.mincut(*floats, reverse_edges=floats[2].flip(1), scale=100.0)
    assert all(torch.equal(a, b) for a, b in zip(floats, backup, strict=True))
    # segment's image and probabilities, float64, 2D and 3D, with seeds.
    for grid, connectivity in (((8, 9), 8), ((4, 8, 9), 6)):
        image = torch.from_numpy(rng.uniform(0, 1, (2, 3, *grid)))
        prob = torch.from_numpy(rng.uniform(0, 1, (2, *grid)))
        seeds = torch.from_numpy(rng.uniform(0, 1, (2, *grid)) < 0.1)
        backup = [x.clone() for x in (image, prob, seeds)]
        torchgrabcut.segment(image, prob, lamda=2.0, sigma=0.3, connectivity=connectivity, foreground_seeds=seeds)
        assert all(torch.equal(a, b) for a, b in zip((image, prob, seeds), backup, strict=True))


def test_non_contiguous_inputs() -> None:
    g = make_graph(np.random.default_rng(14), 20, 30, 4, "random")
    ref = call([g])
    s, t = (torch.from_numpy(g[n].T.copy()).t() for n in ("source", "sink"))
    e = torch.from_numpy(g["edges"].transpose(0, 2, 1).copy()).transpose(1, 2)
    r = torchgrabcut.mincut(s[None].to(torch.int32), t[None].to(torch.int32), e[None].to(torch.int32))
    assert torch.equal(r.cut, ref.cut) and torch.equal(r.flow, ref.flow)


# ---------------------------------------------------------------- bounds and errors


def test_the_node_sum_bound_is_exact() -> None:
    # Pixel (0, 0) of a 1 x 2 grid: source + sink + its one edge.
    s = torch.tensor([[[MAX_NODE_SUM - 3, 0]]])
    t = torch.tensor([[[1, 5]]])
    e = torch.tensor([[[[2, 0]], [[0, 0]]]])
    r = torchgrabcut.mincut(s, t, e)
    assert r.flow.tolist() == [3]
    with pytest.raises(ValueError, match=r"graph 0, pixel \(y=0, x=0\) add up to 1073741824 .* 2\^30 - 1 = 1073741823"):
        torchgrabcut.mincut(s + 1, t, e)
    with pytest.raises(
        ValueError, match=r"edges: expected capacities in \[0, 2\^30 - 1 = 1073741823\], got 1073741824"
    ):
        torchgrabcut.mincut(s * 0, t * 0, e * 0 + 2**30)
    with pytest.raises(ValueError, match=r"source: expected capacities in .* got 9223372036854775807 at graph 0"):
        torchgrabcut.mincut(s * 0 + 2**63 - 1, t, e)


@pytest.mark.parametrize("device", DEVICES)
def test_capacities_out_of_range_name_graph_and_pixel(device: str) -> None:
    base = make_graph(np.random.default_rng(15), 6, 7, 4, "random", asymmetric=True)

    def run(**change: Any) -> None:
        g = {n: torch.from_numpy(np.stack([v, v])).to(device) for n, v in base.items()}
        for name, (index, value) in change.items():
            g[name][index] = value
        torchgrabcut.mincut(g["source"], g["sink"], g["edges"], reverse_edges=g["reverse"])

    with pytest.raises(ValueError, match=r"^source: expected capacities .* got -1 at graph 1, pixel \(y=2, x=3\)$"):
        run(source=((1, 2, 3), -1))
    with pytest.raises(ValueError, match=r"^sink: .* got -7 at graph 0, pixel \(y=0, x=0\)$"):
        run(sink=((0, 0, 0), -7), source=((1, 2, 3), -1))
    with pytest.raises(
        ValueError, match=r"^reverse_edges: .* got -2 at graph 1, pixel \(y=4, x=1\), edge 3 \(down-left\)$"
    ):
        run(reverse=((1, 3, 4, 1), -2))
    with pytest.raises(ValueError, match=r"graph 0, pixel \(y=1, x=1\) add up to"):
        run(edges=((0, 2, 1, 1), MAX_NODE_SUM - 5))


def test_float_errors() -> None:
    s, t, e = torch.rand(1, 4, 5), torch.rand(1, 4, 5), torch.rand(1, 2, 4, 5)
    for bad, name in ((float("nan"), "finite"), (float("inf"), "finite"), (-0.5, "non-negative")):
        x = s.clone()
        x[0, 1, 2] = bad
        with pytest.raises(
            ValueError, match=rf"^source: expected {name} capacities, got .* at graph 0, pixel \(y=1, x=2\)"
        ):
            torchgrabcut.mincut(x, t, e)
    big = e.clone().double()
    big[0, 0, 0, 0] = 1e300
    big[0, 1, 0, 0] = 1e300  # the node sums stay finite in float64: scale chosen, finer elsewhere
    r = torchgrabcut.mincut(s.double(), t.double(), big)
    assert float(r.scale[0]) < 1e-290
    with pytest.raises(ValueError, match=r"a capacity times scale is over the bound 2\^30 - 1 = 1073741823"):
        torchgrabcut.mincut(s, t, e, scale=2.0**31)
    with pytest.raises(ValueError, match=r"after scaling the capacities by scale .* add up to"):
        torchgrabcut.mincut(s, t, e + 1, scale=2.0**28)
    with pytest.raises(ValueError, match="scale: expected finite positive numbers"):
        torchgrabcut.mincut(s, t, e, scale=-1.0)
    with pytest.raises(ValueError, match=r"scale: expected a number or 1 numbers \(one per graph\)"):
        torchgrabcut.mincut(s, t, e, scale=torch.ones(3))
    with pytest.raises(ValueError, match="scale: applies to floating-point capacities only"):
        torchgrabcut.mincut(s.int(), t.int(), e.int(), scale=2.0)


def test_shape_dtype_and_device_errors() -> None:
    s, t, e = (
        torch.zeros(2, 4, 5, dtype=torch.int32),
        torch.zeros(2, 4, 5, dtype=torch.int32),
        torch.zeros(2, 4, 4, 5, dtype=torch.int32),
    )
    cases: list[tuple[tuple, dict, type, str]] = [
        ((s.numpy(), t, e), {}, TypeError, r"source: expected a torch.Tensor, got ndarray \(torch.from_numpy"),
        ((s.bool(), t, e), {}, TypeError, "source: expected an integer .* got torch.bool"),
        ((s, t.to(torch.complex64), e), {}, TypeError, "sink: expected an integer"),
        ((s.to(torch.uint64), t, e), {}, TypeError, "got torch.uint64"),
        ((s.to_sparse(), t, e), {}, TypeError, "source: expected a dense"),
        ((s[0, 0], t, e), {}, ValueError, "source: expected shape"),
        ((s, t[:1], e), {}, ValueError, r"sink: expected the shape of source \(2, 4, 5\), got \(1, 4, 5\)"),
        ((s, t, e[:, :3]), {}, ValueError, r"edges: expected shape \(B, K, H, W\) with K = 2 .* got \(2, 3, 4, 5\)"),
        ((s, t, e[:1]), {}, ValueError, "edges: expected shape"),
        ((s, t, e), {"reverse_edges": e[:, :2]}, ValueError, "reverse_edges: expected the shape of edges"),
        ((s, t, e.to("meta")), {}, ValueError, "expected one device, got cpu, cpu, meta"),
        ((s.to("meta"), t.to("meta"), e.to("meta")), {}, ValueError, "expected tensors on the CPU or a CUDA GPU"),
        ((s[:0], t[:0], e[:0]), {}, ValueError, "at least one graph of at least one pixel"),
        ((s[:, :0], t[:, :0], e[:, :, :0]), {}, ValueError, "at least one graph of at least one pixel"),
    ]
    for args, kwargs, error, message in cases:
        with pytest.raises(error, match=message):
            torchgrabcut.mincut(*args, **kwargs)


def test_huge_declared_sizes_are_refused_before_any_allocation() -> None:
    one = torch.zeros(1, 1, 1, dtype=torch.int32)
    s = one.expand(1, 20000, 20000)
    e = torch.zeros(1, 1, 1, 1, dtype=torch.int32).expand(1, 4, 20000, 20000)
    with pytest.raises(
        ValueError, match=r"a grid of 20000 x 20000 pixels is too large: expected \(H \+ 2\) \* \(W \+ 2\)"
    ):
        torchgrabcut.mincut(s, s, e)
    with pytest.raises(ValueError, match="too large"):
        torch.ops.torchgrabcut.mincut_grid(s, s, e)
    with pytest.raises(ValueError, match="too large"):
        torchgrabcut.mincut(*(x[..., :1, :1].double().expand(x.shape) for x in (s, s, e)))


# ---------------------------------------------------------------- as an operator


def test_opcheck_and_torch_compile() -> None:
    rng = np.random.default_rng(16)
    s, t = (torch.from_numpy(rng.integers(0, 60, (2, 9, 11))).to(torch.int32) for _ in range(2))
    e = torch.from_numpy(rng.integers(0, 30, (2, 4, 9, 11))).to(torch.int32)
    torch.library.opcheck(torch.ops.torchgrabcut.mincut_grid.default, (s, t, e, None))
    torch.library.opcheck(
        torch.ops.torchgrabcut.mincut_grid.default, (s.long(), t.long(), e[:, :2].long(), e[:, 2:].long())
    )

    def fg_pixels(s: torch.Tensor, t: torch.Tensor, e: torch.Tensor) -> torch.Tensor:
        return torchgrabcut.mincut(s, t, e).cut.sum((1, 2))

    compiled = torch.compile(fg_pixels, fullgraph=True, backend="aot_eager")
    assert torch.equal(compiled(s, t, e), fg_pixels(s, t, e))


# ---------------------------------------------------------------- the GPU equals the CPU


@pytest.mark.parametrize("asymmetric", [False, True])
@pytest.mark.parametrize("kk", [2, 4])
@pytest.mark.skipif(not has_cuda(), reason="no CUDA GPU")
def test_cuda_equals_cpu(kk: int, asymmetric: bool) -> None:
    rng = np.random.default_rng([kk, asymmetric, 77])
    for h, w in [(1, 1), (1, 300), (300, 1), (31, 33), (64, 64), (257, 129), (512, 512)]:
        graphs = [make_graph(rng, h, w, kk, kind, asymmetric) for kind in KINDS]
        for dtype in (torch.int32, torch.int64):
            cpu = call(graphs, "cpu", dtype)
            gpu = call(graphs, "cuda", dtype)
            assert gpu.cut.device.type == "cuda" and gpu.flow.device.type == "cuda"
            assert torch.equal(gpu.cut.cpu(), cpu.cut) and torch.equal(gpu.flow.cpu(), cpu.flow), (h, w, dtype)
    s, t, e = torch.rand(3, 50, 60), torch.rand(3, 50, 60), torch.rand(3, kk, 50, 60)
    a, b = torchgrabcut.mincut(s, t, e), torchgrabcut.mincut(s.cuda(), t.cuda(), e.cuda())
    assert torch.equal(a.cut, b.cut.cpu()) and torch.equal(a.flow, b.flow.cpu()) and torch.equal(a.scale, b.scale.cpu())


@pytest.mark.skipif(not has_cuda(), reason="no CUDA GPU")
def test_cuda_opcheck_and_repeated_calls() -> None:
    g = make_graph(np.random.default_rng(17), 200, 300, 4, "smooth")
    first = call([g, g], "cuda")
    for _ in range(3):
        again = call([g, g], "cuda")
        assert torch.equal(first.cut, again.cut) and torch.equal(first.flow, again.flow)
    s, t, e = (torch.from_numpy(np.stack([g[n]])).int().cuda() for n in ("source", "sink", "edges"))
    torch.library.opcheck(torch.ops.torchgrabcut.mincut_grid.default, (s, t, e, None))


def call_tensors(g: dict[str, torch.Tensor]) -> torchgrabcut.MinCut:
    """mincut of tensors by name (source, sink, edges and, if there, reverse)."""
    return torchgrabcut.mincut(g["source"], g["sink"], g["edges"], reverse_edges=g.get("reverse"))


def non_contiguous(x: torch.Tensor, how: str) -> torch.Tensor:
    """The values of x in another memory layout: its last two dimensions transposed in memory
    (3D), its K dimension last in memory (4D), or every other element of a wider row ("step")."""
    if how == "step":
        wide = x.new_zeros(*x.shape[:-1], 2 * x.shape[-1])
        wide[..., ::2] = x
        return wide[..., ::2]
    if x.dim() == 4:
        return x.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)
    return x.transpose(1, 2).contiguous().transpose(1, 2)


@pytest.mark.parametrize("asymmetric", [False, True])
@pytest.mark.parametrize("kk", [2, 4])
@pytest.mark.skipif(not has_cuda(), reason="no CUDA GPU")
def test_cuda_errors_are_the_cpu_errors(kk: int, asymmetric: bool) -> None:
    """A value the CUDA kernel refuses raises the CPU kernel's message, word for word (same
    graph, pixel, edge and value; the first in (graph, y, x) order), for int32 and int64; the
    caller's tensors are left as they were, and the next call works."""
    base = make_graph(np.random.default_rng([kk, asymmetric, 78]), 7, 9, kk, "random", asymmetric)
    names = ["source", "sink", "edges"] + (["reverse"] if asymmetric else [])
    big = MAX_NODE_SUM
    cases: list[list[tuple[str, tuple[int, ...], int]]] = [
        [("source", (1, 2, 3), -1)],
        [("sink", (0, 6, 8), big + 1)],
        [("edges", (1, kk - 1, 3, 4), -2)],
        [("edges", (0, 0, 0, 0), big + 1)],
        [("edges", (1, 1, 2, 5), big - 1), ("sink", (1, 2, 5), 5)],  # each value in range, the node sum over
        [("source", (1, 0, 0), big), ("sink", (1, 0, 0), 1)],
        [("source", (1, 6, 8), big), ("sink", (1, 6, 8), 1)],
        [("sink", (1, 4, 4), -5), ("source", (0, 6, 8), -1)],  # graph 0's comes first
        [("source", (0, 3, 3), -1), ("edges", (0, 0, 3, 2), -1)],  # (3, 2)'s comes first
    ]
    if asymmetric:
        cases += [[("reverse", (0, kk - 1, 5, 1), big + 7)], [("reverse", (1, 0, 6, 0), -1)]]
    wide = [
        [("source", (0, 0, 0), 2**63 - 1)],
        [("edges", (1, 0, 2, 2), -(2**63))],
        [("sink", (1, 3, 3), 2**40), ("edges", (1, 1, 3, 3), -(2**40))],
    ]
    for dtype in (torch.int32, torch.int64):
        for case in cases + (wide if dtype == torch.int64 else []):
            tensors = {}
            for device in ("cpu", "cuda"):
                g = {n: torch.from_numpy(np.stack([base[n], base[n]])).to(device=device, dtype=dtype) for n in names}
                for name, index, value in case:
                    g[name][index] = value
                tensors[device] = g
            with pytest.raises(ValueError) as on_cpu:
                call_tensors(tensors["cpu"])
            backup = {n: x.clone() for n, x in tensors["cuda"].items()}
            with pytest.raises(ValueError) as on_cuda:
                call_tensors(tensors["cuda"])
            assert str(on_cuda.value) == str(on_cpu.value), (dtype, case)
            assert all(torch.equal(tensors["cuda"][n], backup[n]) for n in names)
    good = call([base, base], "cuda")
    assert torch.equal(good.flow.cpu(), call([base, base]).flow)


@pytest.mark.parametrize("asymmetric", [False, True])
@pytest.mark.parametrize("kk", [2, 4])
@pytest.mark.skipif(not has_cuda(), reason="no CUDA GPU")
def test_cuda_non_contiguous_inputs_off_grid_junk_and_untouched_inputs(kk: int, asymmetric: bool) -> None:
    """The CUDA kernel on inputs in other layouts (transposed in memory, strided), with any
    value where an edge leaves the grid (ignored), int32 and int64: the CPU's cut and flow, on
    small grids (the CPU's border-only rows) and larger ones; the inputs are left as they were."""
    rng = np.random.default_rng([kk, asymmetric, 79])
    for h, w in [(1, 1), (2, 2), (3, 2), (1, 6), (6, 1), (9, 13), (40, 33)]:
        graphs = [make_graph(rng, h, w, kk, kind, asymmetric) for kind in ("random", "huge", "smooth", "all_sink")]
        ref = call(graphs)
        mask = torch.from_numpy(edge_mask(kk, h, w))
        for dtype, junk in (
            (torch.int32, -(2**31)),
            (torch.int32, 2**31 - 1),
            (torch.int64, 10**12),
            (torch.int64, -5),
        ):
            g = {
                n: torch.from_numpy(np.stack([x[n] for x in graphs])).to(device="cuda", dtype=dtype) for n in graphs[0]
            }
            for name in ("edges", "reverse"):
                if name in g:
                    g[name] = torch.where(mask.cuda(), g[name], junk)
            laid_out = {
                "source": non_contiguous(g["source"], "transpose"),
                "sink": non_contiguous(g["sink"], "step"),
                "edges": non_contiguous(g["edges"], "transpose"),
            }
            if asymmetric:
                laid_out["reverse"] = non_contiguous(g["reverse"], "step")
            if h > 1 and w > 1:
                assert not laid_out["source"].is_contiguous() and not laid_out["edges"].is_contiguous()
            assert not laid_out["sink"].is_contiguous()
            backup = {n: x.clone() for n, x in laid_out.items()}
            for inputs in (g, laid_out):
                out = call_tensors(inputs)
                same = torch.equal(out.cut.cpu(), ref.cut) and torch.equal(out.flow.cpu(), ref.flow)
                assert same, (h, w, dtype, junk)
            assert all(torch.equal(laid_out[n], backup[n]) for n in laid_out)


@pytest.mark.skipif(not has_cuda(), reason="no CUDA GPU")
def test_cuda_a_batch_of_more_graphs_than_a_grid_has_rows() -> None:
    """70,000 graphs in one call: the kernel's grid holds 65,535 graphs in y and strides over
    the rest; every graph's cut, flow (the offsets summed per graph) and errors as on the CPU."""
    rng = np.random.default_rng(80)
    b, h, w = 70000, 2, 3
    s, t = (torch.from_numpy(rng.integers(0, 40, (b, h, w))) for _ in range(2))
    e, r = (torch.from_numpy(rng.integers(0, 30, (b, 4, h, w))) for _ in range(2))
    for rev in (None, r):
        for dtype in (torch.int32, torch.int64):
            args = [x.to(dtype) for x in (s, t, e)]
            reverse = None if rev is None else rev.to(dtype)
            cpu = torchgrabcut.mincut(*args, reverse_edges=reverse)
            on_gpu = [x.cuda() for x in args]
            gpu = torchgrabcut.mincut(*on_gpu, reverse_edges=None if reverse is None else reverse.cuda())
            assert torch.equal(gpu.cut.cpu(), cpu.cut) and torch.equal(gpu.flow.cpu(), cpu.flow)
    bad = s.clone()
    bad[-1, 1, 2] = -1
    with pytest.raises(ValueError, match=rf"^source: .* got -1 at graph {b - 1}, pixel \(y=1, x=2\)$"):
        torchgrabcut.mincut(bad.cuda(), t.cuda(), e.cuda())


# ---------------------------------------------------------------- segment: torchmaxflow's energy


def potts_graph(
    image: np.ndarray, p_fg: np.ndarray, lamda: float, sigma: float, connectivity: int, spacing: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """torchmaxflow's graph written out here, float64: unary -log(max(p, eps)), Potts on |dI| / distance."""
    eps = float(np.finfo(np.float32).eps)
    source = -np.log(np.maximum(1 - p_fg, eps))
    sink = -np.log(np.maximum(p_fg, eps))
    offsets = [(0, 1), (1, 0)] + ([(1, 1), (1, -1)] if connectivity == 8 else [])
    _, h, w = image.shape
    edges = np.zeros((len(offsets), h, w))
    for k, (dy, dx) in enumerate(offsets):
        for y in range(h - dy):
            for x in range(w):
                if 0 <= x + dx < w:
                    d = np.sqrt(((image[:, y, x] - image[:, y + dy, x + dx]) ** 2).sum())
                    d /= np.hypot(dy * spacing[0], dx * spacing[1])
                    edges[k, y, x] = lamda * np.exp(-(d * d) / (2 * sigma * sigma))
    return source, sink, edges


@pytest.mark.parametrize("connectivity", [4, 8])
def test_segment_is_the_cut_of_torchmaxflows_energy(connectivity: int) -> None:
    rng = np.random.default_rng(connectivity)
    b, c, h, w = 2, 3, 23, 31
    yy, xx = np.mgrid[0:h, 0:w]
    inside = (yy - h / 2) ** 2 + (xx - w / 2) ** 2 < (h / 3) ** 2
    image = np.stack([np.where(inside, 0.8, 0.2) + rng.normal(0, 0.05, (c, h, w)) for _ in range(b)])
    prob = np.clip(np.where(inside, 0.7, 0.3) + rng.normal(0, 0.25, (b, h, w)), 0, 1)
    prob[0, 0, :5] = 0.0  # log(0) clamped at eps
    spacing = (1.0, 1.5)
    r = torchgrabcut.segment(
        torch.from_numpy(image),
        torch.from_numpy(prob),
        lamda=2.0,
        sigma=0.2,
        connectivity=connectivity,
        spacing=spacing,
    )
    assert r.cut.shape == (b, h, w) and r.cut.dtype == torch.bool
    for i in range(b):
        s, t, e = potts_graph(image[i], prob[i], 2.0, 0.2, connectivity, spacing)
        scale = float(r.scale[i])
        g = {n: np.rint(v * scale).astype(np.int64) for n, v in (("source", s), ("sink", t), ("edges", e))}
        check(g, r.cut[i], r.flow[i])
    # torchmaxflow's 2-channel probabilities (background, foreground) give the same.
    two = torchgrabcut.segment(
        torch.from_numpy(image),
        torch.from_numpy(np.stack([1 - prob, prob], 1)),
        lamda=2.0,
        sigma=0.2,
        connectivity=connectivity,
        spacing=spacing,
    )
    assert torch.equal(two.cut, r.cut) and torch.equal(two.flow, r.flow)


def test_segment_seeds_are_hard_and_forms() -> None:
    rng = np.random.default_rng(21)
    image = torch.from_numpy(rng.uniform(0, 1, (1, 16, 20)))
    prob = torch.from_numpy(rng.uniform(0, 1, (16, 20)))
    fg = torch.zeros(16, 20, dtype=torch.bool)
    bg = torch.zeros(16, 20, dtype=torch.bool)
    fg[2:4, 2:5] = True
    bg[10:12, 10:15] = True
    prob[2:4, 2:5] = 0.0  # the network is sure of the opposite: the seeds still win
    prob[10:12, 10:15] = 1.0
    r = torchgrabcut.segment(image, prob, lamda=50.0, sigma=0.5, foreground_seeds=fg, background_seeds=bg)
    assert r.cut.shape == (16, 20) and r.flow.shape == ()
    assert bool(r.cut[fg].all()) and not bool(r.cut[bg].any())
    with pytest.raises(ValueError, match=r"connectivity: expected 4 or 8 \(images\) or 6 \(volumes\), got 5"):
        torchgrabcut.segment(image, prob, lamda=1.0, sigma=1.0, connectivity=5)
    with pytest.raises(
        ValueError, match=r"image: expected shape \(B, C, D, H, W\) or \(C, D, H, W\) for connectivity 6"
    ):
        torchgrabcut.segment(image, prob, lamda=1.0, sigma=1.0, connectivity=6)
    with pytest.raises(ValueError, match=r"spacing: expected 2 finite values > 0 \(dy, dx\)"):
        torchgrabcut.segment(image, prob, lamda=1.0, sigma=1.0, spacing=(1.0, 1.0, 1.0))
    with pytest.raises(ValueError, match="sigma: expected a finite value > 0"):
        torchgrabcut.segment(image, prob, lamda=1.0, sigma=0.0)
    with pytest.raises(ValueError, match="lamda: expected a finite value >= 0"):
        torchgrabcut.segment(image, prob, lamda=float("nan"), sigma=1.0)
    with pytest.raises(ValueError, match="prob: expected shape"):
        torchgrabcut.segment(image, prob[:3], lamda=1.0, sigma=1.0)
    with pytest.raises(TypeError, match="image: expected a floating-point"):
        torchgrabcut.segment(image.to(torch.uint8), prob, lamda=1.0, sigma=1.0)
    with pytest.raises(ValueError, match="foreground_seeds: expected a bool tensor"):
        torchgrabcut.segment(image, prob, lamda=1.0, sigma=1.0, foreground_seeds=fg.int())


def potts_volume(
    image: np.ndarray, p_fg: np.ndarray, lamda: float, sigma: float, spacing: tuple[float, float, float]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The same energy on a (C, D, H, W) volume, 6-connected, written out voxel by voxel."""
    eps = float(np.finfo(np.float32).eps)
    source = -np.log(np.maximum(1 - p_fg, eps))
    sink = -np.log(np.maximum(p_fg, eps))
    _, d, h, w = image.shape
    edges = np.zeros((3, d, h, w))
    for k, axis in enumerate((2, 1, 0)):  # x + 1, y + 1, z + 1: OFFSETS_3D
        for z in range(d):
            for y in range(h):
                for x in range(w):
                    q = [z, y, x]
                    q[axis] += 1
                    if q[axis] >= (d, h, w)[axis]:
                        continue
                    diff = np.sqrt(((image[:, z, y, x] - image[(slice(None), *q)]) ** 2).sum()) / spacing[axis]
                    edges[k, z, y, x] = lamda * np.exp(-(diff * diff) / (2 * sigma * sigma))
    return source, sink, edges


def test_segment_3d_is_the_cut_of_the_potts_energy() -> None:
    rng = np.random.default_rng(23)
    b, c, d, h, w = 2, 2, 5, 6, 7
    zz, yy, xx = np.mgrid[0:d, 0:h, 0:w]
    inside = ((zz - d / 2) / 2.0) ** 2 + ((yy - h / 2) / 2.5) ** 2 + ((xx - w / 2) / 3.0) ** 2 < 1
    image = np.stack([np.where(inside, 0.8, 0.2) + rng.normal(0, 0.05, (c, d, h, w)) for _ in range(b)])
    prob = np.clip(np.where(inside, 0.7, 0.3) + rng.normal(0, 0.25, (b, d, h, w)), 0, 1)
    prob[0, 0, 0, :3] = 0.0  # log(0) clamped at eps
    spacing = (2.0, 1.0, 0.5)  # anisotropic voxels (dz, dy, dx)
    kwargs: dict[str, Any] = {"lamda": 1.5, "sigma": 0.2, "connectivity": 6, "spacing": spacing}
    r = torchgrabcut.segment(torch.from_numpy(image), torch.from_numpy(prob), **kwargs)
    assert r.cut.shape == (b, d, h, w) and r.cut.dtype == torch.bool and r.flow.shape == (b,)
    for i in range(b):
        s, t, e = potts_volume(image[i], prob[i], 1.5, 0.2, spacing)
        scale = float(r.scale[i])
        g = {n: np.rint(v * scale).astype(np.int64) for n, v in (("source", s), ("sink", t), ("edges", e))}
        check(g, r.cut[i], r.flow[i], edmonds_karp(g))
    assert 0 < int(r.cut.sum()) < r.cut.numel()  # a real segmentation, not all or nothing
    two = torchgrabcut.segment(torch.from_numpy(image), torch.from_numpy(np.stack([1 - prob, prob], 1)), **kwargs)
    assert torch.equal(two.cut, r.cut) and torch.equal(two.flow, r.flow)
    one = torchgrabcut.segment(torch.from_numpy(image[1]), torch.from_numpy(prob[1]), **kwargs)
    assert one.cut.shape == (d, h, w) and torch.equal(one.cut, r.cut[1]) and torch.equal(one.flow, r.flow[1])
    # Hard seeds in a volume: a background corner inside the object, a foreground voxel outside it.
    fg = torch.zeros((b, d, h, w), dtype=torch.bool)
    bg = torch.zeros((b, d, h, w), dtype=torch.bool)
    fg[:, 0, 0, 0] = True
    bg[:, d // 2, h // 2, w // 2] = True
    r = torchgrabcut.segment(
        torch.from_numpy(image), torch.from_numpy(prob), foreground_seeds=fg, background_seeds=bg, **kwargs
    )
    assert bool(r.cut[fg].all()) and not bool(r.cut[bg].any())
    with pytest.raises(ValueError, match=r"spacing: expected 3 finite values > 0 \(dz, dy, dx\)"):
        torchgrabcut.segment(
            torch.from_numpy(image), torch.from_numpy(prob), lamda=1.0, sigma=1.0, connectivity=6, spacing=(1.0, 1.0)
        )
    with pytest.raises(ValueError, match="prob: expected shape"):
        torchgrabcut.segment(
            torch.from_numpy(image), torch.from_numpy(prob[:, :2]), lamda=1.0, sigma=1.0, connectivity=6
        )
    # Spacing as any 1-D sequence of numbers (a numpy array, a tensor); connectivity a numpy integer.
    same = torchgrabcut.segment(
        torch.from_numpy(image),
        torch.from_numpy(prob),
        lamda=1.5,
        sigma=0.2,
        connectivity=np.int64(6),
        spacing=np.array(spacing),
        foreground_seeds=fg,
        background_seeds=bg,
    )
    assert torch.equal(same.cut, r.cut) and torch.equal(same.flow, r.flow)
    for bad in [(1.0, float("nan"), 1.0), (1.0, 0.0, 1.0), (True, 1.0, 1.0), "abc", np.ones((3, 1))]:
        with pytest.raises(ValueError, match="spacing: expected 3 finite values > 0"):
            torchgrabcut.segment(
                torch.from_numpy(image), torch.from_numpy(prob), lamda=1.0, sigma=1.0, connectivity=6, spacing=bad
            )
    for bad_connectivity in [6.0, True, "6", 26]:
        with pytest.raises(ValueError, match="connectivity: expected 4 or 8"):
            torchgrabcut.segment(
                torch.from_numpy(image), torch.from_numpy(prob), lamda=1.0, sigma=1.0, connectivity=bad_connectivity
            )
    with pytest.raises(ValueError, match="foreground_seeds: expected a bool tensor of shape"):
        torchgrabcut.segment(
            torch.from_numpy(image),
            torch.from_numpy(prob),
            lamda=1.0,
            sigma=1.0,
            connectivity=6,
            foreground_seeds=fg[:, 0],
        )


def test_segment_refuses_empty_and_huge_grids_before_building_them() -> None:
    for image_shape, prob_shape, connectivity in [
        ((1, 1, 0, 5), (1, 0, 5), 8),
        ((0, 1, 3, 3), (0, 3, 3), 8),
        ((1, 1, 0, 5, 5), (1, 0, 5, 5), 6),
        ((0, 2, 3, 3, 3), (0, 3, 3, 3), 6),
    ]:
        with pytest.raises(ValueError, match=r"^prob: expected at least one graph of at least one pixel, got shape"):
            torchgrabcut.segment(
                torch.rand(image_shape), torch.rand(prob_shape), lamda=1.0, sigma=0.5, connectivity=connectivity
            )
    # Declared sizes far beyond the bound, as views of one element: refused before any graph
    # is built (a 20000^2 float64 graph would need gigabytes).
    image = torch.zeros(1, 1, 1, 1).expand(1, 1, 20000, 20000)
    prob = torch.zeros(1, 1, 1).expand(1, 20000, 20000)
    with pytest.raises(ValueError, match=r"a grid of 20000 x 20000 pixels is too large"):
        torchgrabcut.segment(image, prob, lamda=1.0, sigma=1.0)
    volume = torch.zeros(1, 1, 1, 1, 1).expand(1, 1, 700, 700, 700)
    vprob = torch.zeros(1, 1, 1, 1).expand(1, 700, 700, 700)
    with pytest.raises(ValueError, match=r"a grid of 700 x 700 x 700 voxels is too large: expected \(D \+ 2\)"):
        torchgrabcut.segment(volume, vprob, lamda=1.0, sigma=1.0, connectivity=6)


@pytest.mark.skipif(not has_cuda(), reason="no CUDA GPU")
def test_segment_cuda_equals_cpu() -> None:
    rng = np.random.default_rng(22)
    image = torch.from_numpy(rng.uniform(0, 1, (3, 3, 64, 80)))
    prob = torch.from_numpy(rng.uniform(0, 1, (3, 64, 80)))
    fg = torch.from_numpy(rng.uniform(0, 1, (3, 64, 80)) < 0.01)
    a = torchgrabcut.segment(image, prob, lamda=3.0, sigma=0.3, foreground_seeds=fg)
    b = torchgrabcut.segment(image.cuda(), prob.cuda(), lamda=3.0, sigma=0.3, foreground_seeds=fg.cuda())
    assert torch.equal(a.cut, b.cut.cpu()) and torch.equal(a.flow, b.flow.cpu()) and torch.equal(a.scale, b.scale.cpu())
    volume = torch.from_numpy(rng.uniform(0, 1, (2, 1, 12, 16, 20)))
    vprob = torch.from_numpy(rng.uniform(0, 1, (2, 12, 16, 20)))
    kwargs: dict[str, Any] = {"lamda": 3.0, "sigma": 0.3, "connectivity": 6, "spacing": (2.0, 1.0, 1.0)}
    a = torchgrabcut.segment(volume, vprob, **kwargs)
    b = torchgrabcut.segment(volume.cuda(), vprob.cuda(), **kwargs)
    assert torch.equal(a.cut, b.cut.cpu()) and torch.equal(a.flow, b.flow.cpu()) and torch.equal(a.scale, b.scale.cpu())


# ---------------------------------------------------------------- 3D, 6-connected

KINDS_3D = ["random", "tiny", "huge", "zero", "all_source", "all_sink", "checkerboard", "ties", "smooth"]


def make_graph3d(rng: np.random.Generator, shape: tuple[int, int, int], kind: str, asymmetric: bool = False) -> Graph:
    """A 6-connected graph of one kind, within the node-sum bound."""
    big = MAX_NODE_SUM // (2 + (12 if asymmetric else 6))
    eshape = (3, *shape)
    if kind == "random":
        e, s, t = rng.integers(0, 100, eshape), rng.integers(0, 300, shape), rng.integers(0, 300, shape)
    elif kind == "tiny":
        e, s, t = rng.integers(0, 3, eshape), rng.integers(0, 3, shape), rng.integers(0, 3, shape)
    elif kind == "huge":
        e, s, t = (
            rng.integers(big // 2, big + 1, eshape),
            rng.integers(0, big + 1, shape),
            rng.integers(0, big + 1, shape),
        )
    elif kind == "zero":
        e, s, t = np.zeros(eshape, np.int64), np.zeros(shape, np.int64), np.zeros(shape, np.int64)
    elif kind == "all_source":
        e, s, t = rng.integers(0, 50, eshape), rng.integers(100, 200, shape), rng.integers(0, 5, shape)
    elif kind == "all_sink":
        e, s, t = rng.integers(0, 50, eshape), rng.integers(0, 5, shape), rng.integers(100, 200, shape)
    elif kind == "checkerboard":
        black = np.indices(shape).sum(0) % 2 == 0
        e, s, t = rng.integers(20, 60, eshape), np.where(black, 90, 0), np.where(black, 0, 90)
    elif kind == "ties":
        e, s, t = np.full(eshape, 2), np.full(shape, 6), np.full(shape, 6)
    elif kind == "smooth":
        zz, yy, xx = np.indices(shape)
        d = (zz - shape[0] / 2) ** 2 + (yy - shape[1] / 2) ** 2 + (xx - shape[2] / 2) ** 2
        p = np.clip(np.where(d < (min(shape) / 3) ** 2, 0.7, 0.3) + rng.normal(0, 0.2, shape), 0.01, 0.99)
        s, t = np.rint(-np.log(1 - p) * 50), np.rint(-np.log(p) * 50)
        e = rng.integers(20, 30, eshape)
    else:
        raise AssertionError(kind)
    g: Graph = {"source": np.asarray(s, np.int64), "sink": np.asarray(t, np.int64), "edges": np.asarray(e, np.int64)}
    if asymmetric:
        g["reverse"] = rng.integers(0, int(g["edges"].max()) + 1, eshape)
    assert node_sums(g).max(initial=0) <= MAX_NODE_SUM, kind
    return g


@pytest.mark.parametrize("asymmetric", [False, True])
@pytest.mark.parametrize("kind", KINDS_3D)
def test_3d_graphs_match_edmonds_karp_and_pymaxflow(kind: str, asymmetric: bool) -> None:
    rng = np.random.default_rng([KINDS_3D.index(kind), asymmetric, 3])
    for shape in [(1, 1, 1), (1, 1, 6), (5, 1, 1), (2, 3, 4), (3, 4, 3)]:
        g = make_graph3d(rng, shape, kind, asymmetric)
        cut, flow, _ = call([g])
        check(g, cut[0], flow[0], edmonds_karp(g))
    # Huge capacities on many voxels would leave the perturbed reference's float64 range.
    for shape in [(7, 9, 11)] + ([] if kind == "huge" else [(16, 20, 24)]):
        g = make_graph3d(rng, shape, kind, asymmetric)
        cut, flow, _ = call([g], dtype=torch.int64)
        check(g, cut[0], flow[0])


def test_a_64_cubed_volume_and_a_batch_match_pymaxflow() -> None:
    rng = np.random.default_rng(31)
    g = make_graph3d(rng, (64, 64, 64), "smooth")
    cut, flow, _ = call([g])
    check(g, cut[0], flow[0])
    graphs = [make_graph3d(rng, (10, 12, 14), kind) for kind in KINDS_3D]
    cut, flow, _ = call(graphs)
    for b, gb in enumerate(graphs):
        check(gb, cut[b], flow[b])
    again = call(graphs)
    assert torch.equal(again.cut, cut) and torch.equal(again.flow, flow)


def test_3d_forms_bounds_and_errors() -> None:
    rng = np.random.default_rng(32)
    g = make_graph3d(rng, (4, 5, 6), "random")
    one = torchgrabcut.mincut(*(torch.from_numpy(g[n]) for n in ("source", "sink", "edges")))
    assert one.cut.shape == (4, 5, 6) and one.flow.shape == ()
    check(g, one.cut, one.flow)
    f = torchgrabcut.mincut(*(torch.from_numpy(g[n]).double() / 7 for n in ("source", "sink", "edges")))
    gi = {n: np.rint(g[n] / 7 * float(f.scale)).astype(np.int64) for n in ("source", "sink", "edges")}
    check(gi, f.cut, f.flow)
    s, t, e = (torch.from_numpy(g[n])[None] for n in ("source", "sink", "edges"))
    bad = e.clone()
    bad[0, 2, 1, 2, 3] = -3
    with pytest.raises(ValueError, match=r"^edges: .* got -3 at graph 0, voxel \(z=1, y=2, x=3\), edge 2 \(z \+ 1\)$"):
        torchgrabcut.mincut(s, t, bad)
    with pytest.raises(ValueError, match=r"graph 0, voxel \(z=0, y=0, x=0\) add up to"):
        torchgrabcut.mincut(s + MAX_NODE_SUM // 2, t + MAX_NODE_SUM // 2, e)
    negative = r"^source: expected non-negative capacities, got -\d+\.0 at graph 0, voxel \(z=0, y=0, x=0\)$"
    with pytest.raises(ValueError, match=negative):
        torchgrabcut.mincut(s.double() - 1000, t.double(), e.double())
    big = torch.zeros(1, 1, 1, 1, dtype=torch.int32).expand(1, 700, 700, 700)
    with pytest.raises(ValueError, match=r"a grid of 700 x 700 x 700 voxels is too large"):
        torchgrabcut.mincut(big, big, torch.zeros(1, 1, 1, 1, 1, dtype=torch.int32).expand(1, 3, 700, 700, 700))
    with pytest.raises(ValueError, match=r"edges: expected shape \(B, K, D, H, W\) with K = 3"):
        torchgrabcut.mincut(s, t, e[:, :2])
    torch.library.opcheck(torch.ops.torchgrabcut.mincut_grid3d.default, (s.int(), t.int(), e.int(), None))


# ---------------------------------------------------------------- 3D on the GPU: CUDA = CPU

SHAPES_3D = [(1, 1, 1), (1, 1, 7), (1, 7, 1), (7, 1, 1), (2, 3, 4), (5, 6, 7)]


def make_snake3d(shape: tuple[int, int, int], asymmetric: bool = False) -> Graph:
    """A corridor of strong edges through every voxel in serpentine order, weak edges elsewhere,
    the source at its head and the sink at its tail: the flow runs a path as long as the volume."""
    d, h, w = shape
    order = []
    for z in range(d):
        for yy in range(h):
            y = yy if z % 2 == 0 else h - 1 - yy
            for xx in range(w):
                order.append((z, y, xx if (z * h + yy) % 2 == 0 else w - 1 - xx))
    e = np.ones((3, *shape), np.int64)
    for i in range(len(order) - 1):
        p, q = order[i], order[i + 1]
        k = 2 - [abs(a - b) for a, b in zip(p, q, strict=True)].index(1)  # x: 0, y: 1, z: 2
        e[(k, *min(p, q))] = 1000
    s, t = np.zeros(shape, np.int64), np.zeros(shape, np.int64)
    s[order[0]] += 5000
    t[order[-1]] += 5000
    g: Graph = {"source": s, "sink": t, "edges": e}
    if asymmetric:
        g["reverse"] = e.copy()
    return g


def graphs3d(rng: np.random.Generator, shape: tuple[int, int, int], asymmetric: bool) -> list[Graph]:
    """One graph of every 3D kind, and a snake."""
    return [make_graph3d(rng, shape, kind, asymmetric) for kind in KINDS_3D] + [make_snake3d(shape, asymmetric)]


def stacked3d(graphs: list[Graph], dtype: torch.dtype, device: str = "cpu") -> list[torch.Tensor | None]:
    """(source, sink, edges, reverse or None) of a batch, for the ops."""
    names = ("source", "sink", "edges", "reverse")
    return [
        torch.from_numpy(np.stack([g[n] for g in graphs])).to(device=device, dtype=dtype) if n in graphs[0] else None
        for n in names
    ]


def emulated_hook() -> Any:
    if not hasattr(torch.ops.torchgrabcut, "_mincut_grid3d_emulated"):
        pytest.skip("the extension was built without TORCHGRABCUT_TEST_HOOKS=1 (make build sets it)")
    return torch.ops.torchgrabcut._mincut_grid3d_emulated


@pytest.mark.parametrize("asymmetric", [False, True])
def test_3d_cuda_path_replayed_on_the_cpu_equals_the_cpu_kernel(asymmetric: bool) -> None:
    """The CUDA kernel's path (its reduction, its push-relabel phases, its outputs) with each
    kernel's per-voxel step run in a host loop: the CPU kernel's flow and cut, voxel for voxel."""
    hook = emulated_hook()
    rng = np.random.default_rng([asymmetric, 36])
    for shape in SHAPES_3D + [(9, 10, 11)]:
        graphs = graphs3d(rng, shape, asymmetric)
        for dtype in (torch.int32, torch.int64):
            args = stacked3d(graphs, dtype)
            want = torch.ops.torchgrabcut.mincut_grid3d(*args)
            got = hook(*args)
            assert got[0].dtype == torch.bool and got[1].dtype == torch.int64
            assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1]), (shape, dtype)
            for b, g in enumerate(graphs):
                assert cut_capacity(g, got[0][b].numpy()) == int(got[1][b])
    snake = make_snake3d((12, 12, 12))
    args = stacked3d([snake], torch.int32)
    got, want = hook(*args), torch.ops.torchgrabcut.mincut_grid3d(*args)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    check(snake, got[0][0], got[1][0])


def test_3d_cuda_path_replayed_on_the_cpu_raises_the_cpu_messages() -> None:
    hook = emulated_hook()
    rng = np.random.default_rng(37)
    g = make_graph3d(rng, (4, 5, 6), "random", asymmetric=True)
    big = MAX_NODE_SUM
    cases: list[list[tuple[str, tuple[int, ...], int]]] = [
        [("source", (1, 2, 3, 4), -1)],
        [("sink", (0, 3, 4, 5), big + 1)],
        [("edges", (1, 2, 1, 2, 3), -3)],
        [("reverse", (0, 0, 3, 0, 1), big + 7)],
        [("source", (1, 0, 0, 0), big), ("sink", (1, 0, 0, 0), 1)],  # each in range, the node sum over
        [("sink", (1, 1, 1, 1), -5), ("source", (0, 3, 4, 5), -1)],  # graph 0's comes first
    ]
    wide = [[("source", (0, 0, 0, 0), 2**63 - 1)], [("edges", (1, 0, 2, 2, 2), -(2**63))]]
    for dtype in (torch.int32, torch.int64):
        for case in cases + (wide if dtype == torch.int64 else []):
            args = stacked3d([g, g], dtype)
            named = dict(zip(("source", "sink", "edges", "reverse"), args, strict=True))
            for name, index, value in case:
                named[name][index] = value  # type: ignore[index]
            with pytest.raises(ValueError) as on_cpu:
                torch.ops.torchgrabcut.mincut_grid3d(*args)
            backup = [x.clone() for x in args if x is not None]
            with pytest.raises(ValueError) as replayed:
                hook(*args)
            assert str(replayed.value) == str(on_cpu.value), (dtype, case)
            assert all(torch.equal(x, y) for x, y in zip([x for x in args if x is not None], backup, strict=True))


@pytest.mark.parametrize("asymmetric", [False, True])
@pytest.mark.skipif(not has_cuda(), reason="no CUDA GPU")
def test_3d_cuda_equals_cpu(asymmetric: bool) -> None:
    """Every kind of 3D graph, lines along each axis, a batch of mixed content, int32 and int64:
    the CUDA kernel's flow and cut are the CPU's, voxel for voxel, and stay on the GPU."""
    rng = np.random.default_rng([asymmetric, 38])
    for shape in SHAPES_3D + [(1, 300, 1), (1, 1, 300), (300, 1, 1), (16, 20, 24), (33, 17, 9)]:
        graphs = graphs3d(rng, shape, asymmetric)
        for dtype in (torch.int32, torch.int64):
            cpu = torch.ops.torchgrabcut.mincut_grid3d(*stacked3d(graphs, dtype))
            gpu = call(graphs, "cuda", dtype)
            assert gpu.cut.device.type == "cuda" and gpu.flow.device.type == "cuda"
            assert torch.equal(gpu.cut.cpu(), cpu[0]) and torch.equal(gpu.flow.cpu(), cpu[1]), (shape, dtype)
    s, t, e = torch.rand(3, 9, 10, 11), torch.rand(3, 9, 10, 11), torch.rand(3, 3, 9, 10, 11)
    a, b = torchgrabcut.mincut(s, t, e), torchgrabcut.mincut(s.cuda(), t.cuda(), e.cuda())
    assert torch.equal(a.cut, b.cut.cpu()) and torch.equal(a.flow, b.flow.cpu()) and torch.equal(a.scale, b.scale.cpu())


@pytest.mark.skipif(not has_cuda(), reason="no CUDA GPU")
def test_3d_cuda_long_paths_and_a_64_cubed_volume() -> None:
    rng = np.random.default_rng(39)
    for g in (make_snake3d((1, 64, 64)), make_snake3d((16, 16, 16)), make_graph3d(rng, (64, 64, 64), "smooth")):
        cpu, gpu = call([g]), call([g], "cuda")
        assert torch.equal(gpu.cut.cpu(), cpu.cut) and torch.equal(gpu.flow.cpu(), cpu.flow)
        check(g, gpu.cut[0], gpu.flow[0])


@pytest.mark.skipif(not has_cuda(), reason="no CUDA GPU")
def test_3d_cuda_holds_at_most_48_bytes_a_voxel() -> None:
    """Issue 36's memory bound for 3D on the GPU: the call's peak device memory beside its int32
    inputs (the solver's form of the graph, its state and the cut) is at most 48 bytes a voxel."""
    rng = np.random.default_rng(42)
    shape = (96, 96, 96)
    g = make_graph3d(rng, shape, "smooth")
    s, t, e, _ = stacked3d([g], torch.int32, "cuda")
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    result = torchgrabcut.mincut(s, t, e)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    voxels = 96**3
    assert peak <= 48 * voxels, f"{peak / voxels:.1f} bytes a voxel"
    cpu = call([g])
    assert torch.equal(result.cut.cpu(), cpu.cut) and torch.equal(result.flow.cpu(), cpu.flow)


@pytest.mark.skipif(not has_cuda(), reason="no CUDA GPU")
def test_3d_cuda_repeated_calls_opcheck_errors_and_layouts() -> None:
    rng = np.random.default_rng(40)
    graphs = graphs3d(rng, (6, 7, 8), asymmetric=False)
    first = call(graphs, "cuda")
    for _ in range(3):
        again = call(graphs, "cuda")
        assert torch.equal(first.cut, again.cut) and torch.equal(first.flow, again.flow)
    s, t, e, _ = stacked3d(graphs[:2], torch.int32, "cuda")
    torch.library.opcheck(torch.ops.torchgrabcut.mincut_grid3d.default, (s, t, e, None))
    torch.library.opcheck(torch.ops.torchgrabcut.mincut_grid3d.default, (s.long(), t.long(), e.long(), e.long()))
    # Non-contiguous inputs, unbatched: the values count, not the layout; inputs untouched.
    g = graphs[0]
    cpu = torchgrabcut.mincut(*(torch.from_numpy(g[n]) for n in ("source", "sink", "edges")))
    src = torch.from_numpy(g["source"]).cuda().transpose(0, 2).contiguous().transpose(0, 2)
    edg = torch.from_numpy(g["edges"]).cuda().permute(1, 2, 3, 0).contiguous().permute(3, 0, 1, 2)
    snk = torch.from_numpy(np.repeat(g["sink"], 2, axis=-1)).cuda()[..., ::2]
    assert not (src.is_contiguous() or edg.is_contiguous() or snk.is_contiguous())
    backup = [x.clone() for x in (src, snk, edg)]
    one = torchgrabcut.mincut(src, snk, edg)
    assert one.cut.shape == (6, 7, 8) and one.flow.shape == ()
    assert torch.equal(one.cut.cpu(), cpu.cut) and torch.equal(one.flow.cpu(), cpu.flow)
    assert all(torch.equal(x, y) for x, y in zip((src, snk, edg), backup, strict=True))
    # A value out of range: the CPU kernel's message, on the GPU.
    bad = e.clone()
    bad[1, 2, 3, 4, 5] = -3
    with pytest.raises(ValueError, match=r"^edges: .* got -3 at graph 1, voxel \(z=3, y=4, x=5\), edge 2 \(z \+ 1\)$"):
        torchgrabcut.mincut(s, t, bad)
    with pytest.raises(ValueError, match=r"graph 0, voxel \(z=0, y=0, x=0\) add up to"):
        torchgrabcut.mincut(s + MAX_NODE_SUM // 2, t + MAX_NODE_SUM // 2, e)
    with pytest.raises(ValueError, match="expected one device"):
        torchgrabcut.mincut(s, t.cpu(), e)


@pytest.mark.skipif(not has_cuda(), reason="no CUDA GPU")
def test_3d_cuda_a_batch_of_more_graphs_than_a_grid_has_rows() -> None:
    """70,000 graphs in one call: the per-graph kernels' grids hold 65,535 graphs in y and
    stride over the rest; every graph's cut and flow (offsets summed per graph) as on the CPU."""
    rng = np.random.default_rng(41)
    b, shape = 70000, (1, 2, 3)
    s, t = (torch.from_numpy(rng.integers(0, 40, (b, *shape))) for _ in range(2))
    e, r = (torch.from_numpy(rng.integers(0, 30, (b, 3, *shape))) for _ in range(2))
    for rev in (None, r):
        cpu = torchgrabcut.mincut(s, t, e, reverse_edges=rev)
        gpu = torchgrabcut.mincut(s.cuda(), t.cuda(), e.cuda(), reverse_edges=None if rev is None else rev.cuda())
        assert torch.equal(gpu.cut.cpu(), cpu.cut) and torch.equal(gpu.flow.cpu(), cpu.flow)
