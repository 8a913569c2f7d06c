"""torchgrabcut.mincut: the exact s-t minimum cut of a batch of grid graphs, on the CPU or a CUDA GPU.

A grid graph has one node per pixel, an edge from the source and one to the sink at
every pixel, and edges between neighbouring pixels: 2D 4-connected (right, down) or
8-connected (right, down, down-right, down-left), or 3D 6-connected. The cut returned is the canonical
minimum cut: a pixel is on the source side (True) iff it cannot reach the sink in
the residual graph of a maximum flow. It is the largest source set of all minimum
cuts, unique for a graph, and the same bit for bit on both backends.

Capacities are integers; floating-point capacities are scaled and rounded first (see
``mincut``). The bound: at every pixel, source + sink + the capacities of its edges
inside the grid (both directions in the asymmetric form) is at most
``MAX_NODE_SUM = 2**30 - 1``. Flow values are exact int64 (at most 2^59).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np
import torch

from torchgrabcut import _ops

__all__ = ["MAX_NODE_SUM", "MAX_PADDED_PIXELS", "NEIGHBOURS", "NEIGHBOURS_3D", "MinCut", "mincut", "segment"]

# The bound on every pixel's sum of capacities (csrc/bindings/mincut_op.h, kMincutMaxNodeSum).
MAX_NODE_SUM = 2**30 - 1
# One graph's size: (H + 2) * (W + 2) at most this (the CPU solver's padded grid).
MAX_PADDED_PIXELS = 2**28 - 1
# (dy, dx) of the forward neighbour of edges[:, k], by number of edges per pixel K.
NEIGHBOURS: dict[int, tuple[tuple[int, int], ...]] = {
    2: ((0, 1), (1, 0)),
    4: ((0, 1), (1, 0), (1, 1), (1, -1)),
}
# (dz, dy, dx) of the forward neighbour of a 3D grid's edges[:, k] (6-connected, K = 3).
NEIGHBOURS_3D: tuple[tuple[int, int, int], ...] = ((0, 0, 1), (0, 1, 0), (1, 0, 0))
_CONNECTIVITY = {2: 4, 4: 8}
_INT_DTYPES = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.uint16, torch.uint32)

mincut_grid_op = torch.ops.torchgrabcut.mincut_grid.default
mincut_grid3d_op = torch.ops.torchgrabcut.mincut_grid3d.default


@torch.library.register_fake("torchgrabcut::mincut_grid")
def _mincut_grid_fake(
    source: torch.Tensor, sink: torch.Tensor, edges: torch.Tensor, reverse_edges: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    torch._check(source.dim() == 3)
    torch._check(edges.dim() == 4)
    cut = source.new_empty(source.shape, dtype=torch.bool)
    flow = source.new_empty((source.shape[0],), dtype=torch.int64)
    return cut, flow


@torch.library.register_fake("torchgrabcut::mincut_grid3d")
def _mincut_grid3d_fake(
    source: torch.Tensor, sink: torch.Tensor, edges: torch.Tensor, reverse_edges: torch.Tensor | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    torch._check(source.dim() == 4)
    torch._check(edges.dim() == 5)
    cut = source.new_empty(source.shape, dtype=torch.bool)
    flow = source.new_empty((source.shape[0],), dtype=torch.int64)
    return cut, flow


class MinCut(NamedTuple):
    """The result of ``mincut``.

    cut: bool, the shape of ``source``: True = source side (cannot reach the sink in the residual graph).
    flow: int64, one per graph (a 0-dim tensor for one unbatched graph): the maximum flow value of the
        integer graph solved, which equals the capacity of ``cut``.
    scale: float64, one per graph: the integer graph solved is round(capacity * scale); 1 for integer
        capacities. ``flow / scale`` is the flow value in the units of floating-point capacities.
    """

    cut: torch.Tensor
    flow: torch.Tensor
    scale: torch.Tensor


def mincut(
    source: torch.Tensor,
    sink: torch.Tensor,
    edges: torch.Tensor,
    *,
    reverse_edges: torch.Tensor | None = None,
    scale: float | torch.Tensor | None = None,
) -> MinCut:
    """The exact minimum s-t cut and maximum flow value of each grid graph of a batch.

    Args:
        source: ``(B, H, W)`` (or ``(H, W)`` for one graph) capacity of the edge source -> pixel.
        sink: the same shape: capacity of the edge pixel -> sink.
        edges: ``(B, K, H, W)`` (or ``(K, H, W)``): ``edges[:, k, y, x]`` is the capacity of the edge
            between pixel (y, x) and its neighbour (y + dy, x + dx), ``(dy, dx) = NEIGHBOURS[K][k]``:
            K = 2 is 4-connected (right, down), K = 4 is 8-connected (right, down, down-right,
            down-left). Symmetric (the same capacity both ways) unless ``reverse_edges`` is given.
            Edges that leave the grid are ignored, whatever their value. A 3D grid:
            ``source`` ``(B, D, H, W)`` (or ``(D, H, W)``) and ``edges`` ``(B, 3, D, H, W)`` (or
            ``(3, D, H, W)``) to the 6-connected forward neighbours ``NEIGHBOURS_3D`` (x + 1, y + 1,
            z + 1); K = 3 is what makes a grid 3D.
        reverse_edges: the asymmetric form: ``edges`` then holds the capacities from each pixel to
            its neighbour and ``reverse_edges`` (same shape) those from the neighbour back.
        scale: floating-point capacities only: the integer graph solved is round(c * scale), one
            scale for the batch (a number) or one per graph (a tensor of B). None chooses per graph
            the largest power of two that keeps every pixel's sum within ``MAX_NODE_SUM``.

    All tensors are on one device, CPU or CUDA, where the cut is computed (one call, one batch).
    Integer capacities (int8 to int64, uint8 to uint32) are used as they are; floating-point ones
    (float16 to float64) are converted as ``scale`` says, and the cut is exact for that integer
    graph. Every capacity must be finite and non-negative, and at every pixel source + sink + the
    capacities of its edges inside the grid (both directions in the asymmetric form) at most
    ``MAX_NODE_SUM = 2**30 - 1``; larger ones raise ValueError naming the pixel and the bound.

    Not differentiable: the outputs carry no gradient (a bool cut and an integer flow); inputs
    that require grad are read as values. The caller's tensors are never modified.

    Returns:
        ``MinCut(cut, flow, scale)``: ``cut`` bool, True = source side, the canonical cut (the
        pixels that cannot reach the sink in the residual graph of a maximum flow, the same on
        every device); ``flow`` int64 per graph, the maximum flow value (= the cut's capacity) of
        the integer graph solved; ``scale`` float64 per graph (1 for integer capacities).
    """
    tensors = {"source": source, "sink": sink, "edges": edges}
    if reverse_edges is not None:
        tensors["reverse_edges"] = reverse_edges
    _check_dtypes(tensors)
    three_d, unbatched = _check_shapes(source, sink, edges, reverse_edges)
    device = _check_device(tensors)
    batch = 1 if unbatched else source.shape[0]
    if unbatched:
        tensors = {name: t.unsqueeze(0) for name, t in tensors.items()}
    floating = any(t.dtype.is_floating_point for t in tensors.values())
    if not floating and scale is not None:
        raise ValueError("scale: applies to floating-point capacities only; these are integers")
    with torch.no_grad():
        if floating:
            values = {
                name: (_off_grid_zeroed(t) if name.endswith("edges") else t.to(torch.float64))
                for name, t in tensors.items()
            }
            result = _solve_float(values, scale, three_d)
        else:
            ints = _as_int(tensors)
            op = mincut_grid3d_op if three_d else mincut_grid_op
            cut, flow = op(ints["source"], ints["sink"], ints["edges"], ints.get("reverse_edges"))
            result = MinCut(cut, flow, torch.ones(batch, dtype=torch.float64, device=device))
    if unbatched:
        return MinCut(result.cut[0], result.flow[0], result.scale[0])
    return result


def _solve_float(values: dict[str, torch.Tensor], scale: float | torch.Tensor | None, three_d: bool) -> MinCut:
    """The cut of batched float64 capacities (read only), the edges that leave the grid already 0."""
    ints, scales = _scaled(values, scale, values["source"].shape[0])
    try:
        op = mincut_grid3d_op if three_d else mincut_grid_op
        cut, flow = op(ints["source"], ints["sink"], ints["edges"], ints.get("reverse_edges"))
    except ValueError as err:
        scaled = f"after scaling the capacities by scale (per graph {scales.tolist()})"
        raise ValueError(f"{scaled}: {err}") from None
    return MinCut(cut, flow, scales)


def _check_dtypes(tensors: dict[str, torch.Tensor]) -> None:
    """Every input a dense tensor of an integer or floating-point dtype."""
    for name, t in tensors.items():
        if not isinstance(t, torch.Tensor):
            raise TypeError(
                f"{name}: expected a torch.Tensor, got {type(t).__name__}"
                + (" (torch.from_numpy converts a numpy array)" if hasattr(t, "__array__") else "")
            )
        if t.is_sparse or t.layout != torch.strided or getattr(t, "is_nested", False):
            raise TypeError(f"{name}: expected a dense (strided) tensor, got layout {t.layout}")
        if not (t.dtype in _INT_DTYPES or t.dtype.is_floating_point):
            raise TypeError(
                f"{name}: expected an integer (int8..int64, uint8..uint32) or floating-point dtype, got {t.dtype}"
            )


def _check_shapes(
    source: torch.Tensor, sink: torch.Tensor, edges: torch.Tensor, reverse_edges: torch.Tensor | None
) -> tuple[bool, bool]:
    """Whether the grid is 3D and whether it is one unbatched graph; ValueError for shapes that disagree."""
    # 3D (6-connected) when edges has K = 3 edges per voxel, a K that 2D grids never have.
    three_d = source.dim() == 4 or (
        source.dim() == 3 and edges.dim() == 4 and edges.shape[0] == 3 and tuple(edges.shape[1:]) == tuple(source.shape)
    )
    spatial = 3 if three_d else 2
    unbatched = source.dim() == spatial
    grid_names = "(D, H, W)" if three_d else "(H, W)"
    if source.dim() not in (2, 3, 4):
        raise ValueError(
            f"source: expected shape (B, H, W) or (H, W), or (B, D, H, W) or (D, H, W), got {tuple(source.shape)}"
        )
    if sink.shape != source.shape:
        raise ValueError(f"sink: expected the shape of source {tuple(source.shape)}, got {tuple(sink.shape)}")
    grid = tuple(source.shape[-spatial:])
    want = source.dim() + 1
    k = edges.shape[-spatial - 1] if edges.dim() == want else -1
    valid_k = (3,) if three_d else tuple(NEIGHBOURS)
    if (
        edges.dim() != want
        or tuple(edges.shape[-spatial:]) != grid
        or k not in valid_k
        or (not unbatched and edges.shape[0] != source.shape[0])
    ):
        expected = ("" if unbatched else "(B, ") + ("K, " if not unbatched else "(K, ") + grid_names[1:]
        kinds = "K = 3 (6-connected)" if three_d else "K = 2 (4-connected) or 4 (8-connected)"
        raise ValueError(
            f"edges: expected shape {expected} with {kinds} and the grid of source {tuple(source.shape)}, "
            f"got {tuple(edges.shape)}"
        )
    if reverse_edges is not None and reverse_edges.shape != edges.shape:
        raise ValueError(
            f"reverse_edges: expected the shape of edges {tuple(edges.shape)}, got {tuple(reverse_edges.shape)}"
        )
    _check_grid("source", tuple(source.shape), 1 if unbatched else source.shape[0], grid)
    return three_d, unbatched


def _check_grid(name: str, shape: tuple[int, ...], batch: int, grid: tuple[int, ...]) -> None:
    """ValueError for an empty batch or grid, or a grid larger than the solvers take."""
    if batch == 0 or 0 in grid:
        raise ValueError(f"{name}: expected at least one graph of at least one pixel, got shape {shape}")
    padded = 1
    for n in grid:  # a loop, not a generator: torch.compile traces this function
        padded *= n + 2
    if padded > MAX_PADDED_PIXELS:
        sizes = " x ".join(str(n) for n in grid)
        names = ("D", "H", "W")[-len(grid) :]
        bound = " * ".join(f"({c} + 2)" for c in names)
        raise ValueError(
            f"a grid of {sizes} {'voxels' if len(grid) == 3 else 'pixels'} is too large: "
            f"expected {bound} <= 2^28 - 1 = {MAX_PADDED_PIXELS}"
        )


def _check_device(tensors: dict[str, torch.Tensor]) -> torch.device:
    """The one device of the inputs, where the cut is computed."""
    devices = {t.device for t in tensors.values()}
    if len(devices) > 1:
        raise ValueError(
            ", ".join(tensors) + f": expected one device, got {', '.join(str(t.device) for t in tensors.values())}"
        )
    device = tensors["source"].device
    if device.type not in ("cpu", "cuda"):
        raise ValueError(f"device: expected tensors on the CPU or a CUDA GPU, got {device}")
    if device.type == "cuda" and not _ops.cuda_kernels_built():
        raise ValueError("device: the tensors are on a CUDA GPU, but the extension was built without CUDA")
    return device


def _as_int(tensors: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Integer capacities in one dtype the operator reads: int32 if all are int32, else int64 (exact)."""
    if all(t.dtype == torch.int32 for t in tensors.values()):
        return tensors
    if all(t.dtype in (torch.int8, torch.int16, torch.uint8) for t in tensors.values()):
        return {name: t.to(torch.int32) for name, t in tensors.items()}
    return {name: t.to(torch.int64) for name, t in tensors.items()}


def _offsets(edges: torch.Tensor) -> tuple[tuple[int, ...], ...]:
    """The forward neighbour offsets of (B, K, *grid) edges: 2D by K, 3D when the grid has 3 axes."""
    return NEIGHBOURS_3D if edges.dim() == 5 else NEIGHBOURS[edges.shape[1]]


def _shifted(offset: tuple[int, ...], sizes: tuple[int, ...]) -> tuple[tuple[slice, ...], tuple[slice, ...]]:
    """Slices (of the pixels p, of p + offset) over the pixels whose neighbour p + offset is on the grid."""
    here = tuple(slice(max(0, -o), n - max(0, o)) for o, n in zip(offset, sizes, strict=True))
    there = tuple(slice(max(0, o), n - max(0, -o)) for o, n in zip(offset, sizes, strict=True))
    return here, there


def _off_grid_zeroed(edges: torch.Tensor) -> torch.Tensor:
    """A float64 copy of (B, K, *grid) edges with the edges that leave the grid set to 0."""
    out = edges.to(torch.float64, copy=True)
    sizes = tuple(edges.shape[2:])
    for k, offset in enumerate(_offsets(edges)):
        # The edge leaves the grid on the last row (column, slice) for a forward offset, the
        # first for a backward one: zero those borders of plane k.
        for axis, o in enumerate(offset):
            if o == 0:
                continue
            border = [slice(None)] * len(sizes)
            border[axis] = slice(sizes[axis] - o, None) if o > 0 else slice(0, -o)
            out[(slice(None), k, *border)] = 0
    return out


def _node_sums(tensors: dict[str, torch.Tensor]) -> torch.Tensor:
    """(B, *grid) float64: source + sink + every edge of each pixel inside the grid (both directions)."""
    total = tensors["source"] + tensors["sink"]
    for name in ("edges", "reverse_edges"):
        if name not in tensors:
            continue
        e = tensors[name]
        sizes = tuple(e.shape[2:])
        total = total + e.sum(1)
        for k, offset in enumerate(_offsets(e)):
            here, there = _shifted(offset, sizes)
            # The edge into p + offset from p.
            total[(slice(None), *there)] += e[:, k][(slice(None), *here)]
    return total


def _first_bad(t: torch.Tensor, bad: torch.Tensor, spatial: int) -> str:
    """'value at graph b, pixel (y=.., x=..)' (or voxel (z, y, x)) of the first True of bad, in index order."""
    index = [int(i) for i in bad.nonzero()[0].tolist()]
    value = float(t[tuple(index)])
    names = ("z", "y", "x")[-spatial:]
    coords = ", ".join(f"{n}={i}" for n, i in zip(names, index[-spatial:], strict=True))
    where = f"graph {index[0]}, {'voxel' if spatial == 3 else 'pixel'} ({coords})"
    if t.dim() == spatial + 2:
        where += f", edge {index[1]}"
    return f"{value!r} at {where}"


def _scaled(
    values: dict[str, torch.Tensor], scale: float | torch.Tensor | None, batch: int
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """Batched float64 capacities (read only, off-grid edges 0) as int32 round(c * scale), and the
    scales (B,) float64."""
    device = values["source"].device
    spatial = values["source"].dim() - 1
    # One pass a tensor and one host read for all: the least and the most of each (NaN
    # spreads into both), looked at closely only when some value is bad.
    bounds = torch.stack(
        [torch.stack(torch.aminmax(t)) if t.numel() else t.new_zeros(2) for t in values.values()]
    ).tolist()
    for (name, t), (lo, hi) in zip(values.items(), bounds, strict=True):
        if lo >= 0 and hi < float("inf"):
            continue
        finite = torch.isfinite(t)
        if not bool(finite.all()):
            raise ValueError(f"{name}: expected finite capacities, got {_first_bad(t, ~finite, spatial)}")
        negative = t < 0
        if bool(negative.any()):
            raise ValueError(f"{name}: expected non-negative capacities, got {_first_bad(t, negative, spatial)}")
    if scale is None:
        most = _node_sums(values).flatten(1).amax(1)
        if not bool(torch.isfinite(most).all()):
            raise ValueError("the capacities at a pixel add up to more than float64 holds: scale them down first")
        room = float(MAX_NODE_SUM - 16)  # rounding adds at most 1/2 per capacity, 18 at most per pixel
        exponent = torch.floor(torch.log2(torch.tensor(room, dtype=torch.float64, device=device)) - torch.log2(most))
        exponent = torch.where(most > 0, exponent, torch.zeros_like(exponent)).clamp(-1000, 1000)
        scales = torch.exp2(exponent)
        # log2 may round up at a power of two: one step down where the bound would not hold.
        scales = torch.where(most * scales > room, scales / 2, scales)
    else:
        scales = torch.as_tensor(scale, dtype=torch.float64, device=device)
        if scales.dim() == 0:
            scales = scales.expand(batch)
        if scales.shape != (batch,):
            raise ValueError(
                f"scale: expected a number or {batch} numbers (one per graph), got shape {tuple(scales.shape)}"
            )
        if not bool((torch.isfinite(scales) & (scales > 0)).all()):
            raise ValueError(f"scale: expected finite positive numbers, got {scales.tolist()}")
    ints: dict[str, torch.Tensor] = {}
    for name, t in values.items():
        scaled = t * scales.view((-1,) + (1,) * (t.dim() - 1))
        # A chosen scale keeps every pixel's sum, so every capacity, within the bound.
        if scale is not None:
            over = scaled.round() > MAX_NODE_SUM
            if bool(over.any()):
                raise ValueError(
                    f"{name}: a capacity times scale is over the bound 2^30 - 1 = {MAX_NODE_SUM}: "
                    f"{_first_bad(t, over, spatial)} (times {scales.tolist()}); use a smaller scale, or None to "
                    "choose one"
                )
        ints[name] = scaled.round_().to(torch.int32)
    return ints, scales


# torchmaxflow clamps probabilities at float32's machine epsilon before taking logs.
_PROB_EPS = float(torch.finfo(torch.float32).eps)


def segment(
    image: torch.Tensor,
    prob: torch.Tensor,
    *,
    lamda: float,
    sigma: float,
    connectivity: int = 8,
    spacing: Sequence[float] | np.ndarray | torch.Tensor | None = None,
    foreground_seeds: torch.Tensor | None = None,
    background_seeds: torch.Tensor | None = None,
    scale: float | torch.Tensor | None = None,
) -> MinCut:
    """Binary segmentation of foreground probabilities with a contrast-sensitive Potts term, batched.

    The energy of torchmaxflow's ``maxflow(image, prob, lamda, sigma)``, solved exactly by ``mincut``:
    a pixel (voxel) on the foreground (source) side costs -log(max(p_bg, eps)), on the background
    side -log(max(p_fg, eps)), eps = float32's machine epsilon; two neighbours on different sides
    cost ``lamda * exp(-d^2 / (2 sigma^2))`` with d = |image_p - image_q| (L2 over the channels)
    divided by their distance (``spacing``: the pixel's or voxel's size along each axis).

    Args:
        image: 2D ``(B, C, H, W)`` (or ``(C, H, W)``), 3D ``(B, C, D, H, W)`` (or ``(C, D, H, W)``)
            floating-point image, the contrast.
        prob: ``(B, H, W)`` (3D ``(B, D, H, W)``) foreground probabilities (background 1 - p), or
            with a 2-channel axis after B, (background, foreground), as torchmaxflow takes them;
            unbatched forms without B.
        lamda, sigma: the Potts weight (>= 0) and the contrast scale (> 0).
        connectivity: 4 or 8 for images, 6 for volumes (the face neighbours).
        spacing: (dy, dx), or (dz, dy, dx) for volumes (anisotropic voxels), any 1-D sequence of
            numbers; default all 1.
        foreground_seeds, background_seeds: optional bool tensors of prob's grid shape, with B:
            pixels forced to that side (hard: their terminal capacity is 1 + the sum of their
            edges, more than any cut through their edges saves).
        scale: as in ``mincut`` (the capacities are floating point).

    Returns:
        ``MinCut``: ``cut`` (B, H, W) (3D (B, D, H, W)) bool, True = foreground; ``flow`` and
        ``scale`` as in ``mincut``.
    """
    for name, t in (("image", image), ("prob", prob)):
        if not isinstance(t, torch.Tensor) or not t.dtype.is_floating_point:
            raise TypeError(f"{name}: expected a floating-point torch.Tensor, got {getattr(t, 'dtype', type(t))}")
    spatial = 3 if connectivity == 6 else 2
    spacing = _check_potts(connectivity, lamda, sigma, spacing, spatial)
    unbatched = image.dim() == spatial + 1
    img, p_bg, p_fg = _read_prob(image, prob, unbatched, spatial)
    batch = img.shape[0]
    grid = tuple(img.shape[2:])
    _check_grid("prob", tuple(prob.shape), batch, grid)
    with torch.no_grad():
        # -log(max(p, eps)), computed in place on float64 copies (the values torch.maximum,
        # torch.log and a negation give, NaN kept for the checks to name).
        source = p_bg.to(torch.float64, copy=True).clamp_(min=_PROB_EPS).log_().neg_()
        sink = p_fg.to(torch.float64, copy=True).clamp_(min=_PROB_EPS).log_().neg_()
        offsets = NEIGHBOURS_3D if spatial == 3 else NEIGHBOURS[2 if connectivity == 4 else 4]
        edges = _potts_edges(img.to(torch.float64), offsets, spacing, lamda, sigma)
        seeds = {"foreground_seeds": foreground_seeds, "background_seeds": background_seeds}
        masks = {}
        for name, s in seeds.items():
            if s is None:
                continue
            s = s[None] if unbatched else s
            if not isinstance(s, torch.Tensor) or s.dtype != torch.bool or s.shape != (batch, *grid):
                raise ValueError(f"{name}: expected a bool tensor of shape {(batch, *grid)}, got {s!r:.80}")
            masks[name] = s.to(img.device)
        if masks:
            source, sink = _hard_seeds(masks, source, sink, edges)
        result = _solve_float({"source": source, "sink": sink, "edges": edges}, scale, spatial == 3)
    if masks:
        wrong = ("foreground_seeds" in masks and not bool(result.cut[masks["foreground_seeds"]].all())) or (
            "background_seeds" in masks and bool(result.cut[masks["background_seeds"]].any())
        )
        if wrong:
            raise ValueError(f"scale: {result.scale.tolist()} is too coarse to keep the seeds hard; use a larger one")
    if unbatched:
        return MinCut(result.cut[0], result.flow[0], result.scale[0])
    return result


def _read_prob(
    image: torch.Tensor, prob: torch.Tensor, unbatched: bool, spatial: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The batched image and the background and foreground probabilities of each pixel (voxel)."""
    if image.dim() not in (spatial + 1, spatial + 2):
        forms = "(B, C, H, W) or (C, H, W)" if spatial == 2 else "(B, C, D, H, W) or (C, D, H, W) for connectivity 6"
        raise ValueError(f"image: expected shape {forms}, got {tuple(image.shape)}")
    img = image[None] if unbatched else image
    p = prob[None] if unbatched else prob
    batch = img.shape[0]
    grid = tuple(img.shape[2:])
    if p.dim() == spatial + 2 and p.shape[1] == 2 and tuple(p.shape[2:]) == grid and p.shape[0] == batch:
        p_bg, p_fg = p[:, 0], p[:, 1]
    elif p.dim() == spatial + 1 and tuple(p.shape) == (batch, *grid):
        p_fg = p
        p_bg = 1 - p
    else:
        raise ValueError(
            f"prob: expected shape {(batch, *grid) if not unbatched else grid} or with a 2-channel axis "
            f"(background, foreground) after B, for image {tuple(image.shape)}, got {tuple(prob.shape)}"
        )
    if img.device != p.device:
        raise ValueError(f"image and prob: expected one device, got {img.device} and {p.device}")
    return img, p_bg, p_fg


def _check_potts(connectivity: int, lamda: float, sigma: float, spacing: Any, spatial: int) -> tuple[float, ...]:
    """Checks the Potts term's arguments; returns the spacing (all 1 by default)."""
    integral = isinstance(connectivity, (int, np.integer)) and not isinstance(connectivity, bool)
    if not integral or connectivity not in (4, 6, 8):
        raise ValueError(f"connectivity: expected 4 or 8 (images) or 6 (volumes), got {connectivity!r}")
    if not (_finite(lamda) and lamda >= 0):
        raise ValueError(f"lamda: expected a finite value >= 0, got {lamda!r}")
    if not (_finite(sigma) and sigma > 0):
        raise ValueError(f"sigma: expected a finite value > 0, got {sigma!r}")
    if spacing is None:
        return (1.0,) * spatial
    axes = "(dz, dy, dx)" if spatial == 3 else "(dy, dx)"
    if isinstance(spacing, (np.ndarray, torch.Tensor)) and spacing.ndim == 1:
        spacing = tuple(spacing.tolist())
    if (
        not isinstance(spacing, (tuple, list))
        or len(spacing) != spatial
        or not all(_finite(s) and s > 0 for s in spacing)
    ):
        raise ValueError(f"spacing: expected {spatial} finite values > 0 {axes}, got {spacing!r}")
    return tuple(float(s) for s in spacing)


def _potts_edges(
    img64: torch.Tensor, offsets: tuple[tuple[int, ...], ...], spacing: tuple[float, ...], lamda: float, sigma: float
) -> torch.Tensor:
    """The contrast-sensitive Potts weights to the forward neighbours at `offsets`: lamda exp(-d^2 / 2 sigma^2)."""
    batch = img64.shape[0]
    sizes = tuple(img64.shape[2:])
    edges = torch.zeros((batch, len(offsets), *sizes), dtype=torch.float64, device=img64.device)
    for i, offset in enumerate(offsets):
        here, there = _shifted(offset, sizes)
        diff = img64[(slice(None), slice(None), *here)] - img64[(slice(None), slice(None), *there)]
        # hypot, pairwise: a 2D diagonal's distance as np.hypot gives it, an axis's the spacing exactly.
        distance = 0.0
        for o, s in zip(offset, spacing, strict=True):
            distance = float(np.hypot(distance, o * s))
        # lamda * exp(-(d * d) / (2 sigma^2)), d = |diff| / distance, step by step in place.
        d = diff.mul_(diff).sum(1).sqrt_().div_(distance)
        edges[(slice(None), i, *here)] = d.mul_(d).div_(-(2 * sigma * sigma)).exp_().mul_(lamda)
    return edges


def _hard_seeds(
    masks: dict[str, torch.Tensor], source: torch.Tensor, sink: torch.Tensor, edges: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Terminals that tie the seeds to their side: 1 + the sum of a seed's edges, more than a cut through them saves."""
    hard = 1 + _node_sums({"source": torch.zeros_like(source), "sink": torch.zeros_like(sink), "edges": edges})
    if "foreground_seeds" in masks:
        fg = masks["foreground_seeds"]
        source, sink = torch.where(fg, hard, source), torch.where(fg, 0.0, sink)
    if "background_seeds" in masks:
        bg = masks["background_seeds"]
        source, sink = torch.where(bg, 0.0, source), torch.where(bg, hard, sink)
    return source, sink


def _finite(x: float) -> bool:
    """True for a finite real number (a bool or a non-number is not one)."""
    return isinstance(x, (int, float, np.floating, np.integer)) and not isinstance(x, bool) and bool(np.isfinite(x))
