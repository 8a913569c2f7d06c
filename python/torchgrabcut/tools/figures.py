"""Pictures for people: a contact sheet of segmentations and a speed plot.

The contact sheet needs only Pillow; the speed plot needs matplotlib
(``pip install torchgrabcut[plot]``), imported when it is drawn.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from PIL import Image, ImageDraw

if TYPE_CHECKING:
    from torchgrabcut.tools.evaluate import EvalResult
    from torchgrabcut.tools.speed import BenchRow

__all__ = [
    "OUTLINE_BGR",
    "TRUTH_BGR",
    "SheetTile",
    "contact_sheet",
    "outline",
    "require_matplotlib",
    "sheet_tiles",
    "speed_plot",
]

OUTLINE_BGR = (0, 255, 0)  # our mask's boundary: green
TRUTH_BGR = (255, 0, 255)  # the ground truth's boundary: magenta
_BACKGROUND_DIM = 0.45  # background pixels keep this much of their brightness
_CAPTION_HEIGHT = 16


@dataclass
class SheetTile:
    image: np.ndarray  # (H, W, 3) uint8, BGR
    foreground: np.ndarray  # (H, W) bool or labels 0..3 (foreground = 1 or 3)
    caption: str = ""
    truth: np.ndarray | None = None  # (H, W) bool foreground of the ground truth, outlined if given


def outline(fg: np.ndarray) -> np.ndarray:
    """Pixels of ``fg`` with a 4-neighbour outside it (the image border counts as outside)."""
    padded = np.pad(fg, 1, constant_values=False)
    interior = padded[:-2, 1:-1] & padded[2:, 1:-1] & padded[1:-1, :-2] & padded[1:-1, 2:]
    return fg & ~interior


def _as_foreground(mask: np.ndarray) -> np.ndarray:
    return mask.astype(bool) if mask.dtype == np.bool_ else (mask & 1).astype(bool)


def _resize(array: np.ndarray, size: tuple[int, int], nearest: bool) -> np.ndarray:
    mode = Image.NEAREST if nearest else Image.BILINEAR
    if array.dtype == np.bool_:
        return np.asarray(Image.fromarray(array.astype(np.uint8) * 255).resize(size, mode)) > 127
    return np.asarray(Image.fromarray(array).resize(size, mode))


def _tile(tile: SheetTile, width: int, height: int) -> np.ndarray:
    """One thumbnail (RGB), the image fitted into width x height with its masks drawn."""
    h, w = tile.image.shape[:2]
    if tile.foreground.shape != (h, w):
        raise ValueError(f"contact sheet: mask {tile.foreground.shape} does not match image {(h, w)}")
    scale = min(width / max(w, 1), height / max(h, 1))
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    rgb = _resize(np.ascontiguousarray(tile.image[:, :, ::-1]), size, nearest=False).astype(np.float32)
    fg = _resize(_as_foreground(tile.foreground), size, nearest=True)
    rgb[~fg] *= _BACKGROUND_DIM
    if tile.truth is not None:
        rgb[outline(_resize(tile.truth.astype(bool), size, nearest=True))] = TRUTH_BGR[::-1]
    rgb[outline(fg)] = OUTLINE_BGR[::-1]
    out = np.full((height + _CAPTION_HEIGHT, width, 3), 255, np.uint8)
    y0, x0 = (height - size[1]) // 2, (width - size[0]) // 2
    out[y0 : y0 + size[1], x0 : x0 + size[0]] = rgb.clip(0, 255).astype(np.uint8)
    return out


def contact_sheet(
    tiles: Sequence[SheetTile], columns: int = 6, tile_width: int = 200, tile_height: int = 150
) -> np.ndarray:
    """All tiles in a grid, each image with its foreground kept bright and outlined, a caption below.

    Returns an (H, W, 3) uint8 array in BGR order (write it with imageio.write_image).
    """
    if not tiles:
        raise ValueError("contact sheet: no images")
    if columns < 1 or tile_width < 8 or tile_height < 8:
        raise ValueError("contact sheet: expected columns >= 1 and tiles of at least 8x8 pixels")
    columns = min(columns, len(tiles))
    rows = math.ceil(len(tiles) / columns)
    gap = 4
    cell_h = tile_height + _CAPTION_HEIGHT
    sheet = Image.new("RGB", (columns * (tile_width + gap) + gap, rows * (cell_h + gap) + gap), "white")
    draw = ImageDraw.Draw(sheet)
    for i, tile in enumerate(tiles):
        x = gap + (i % columns) * (tile_width + gap)
        y = gap + (i // columns) * (cell_h + gap)
        sheet.paste(Image.fromarray(_tile(tile, tile_width, tile_height)), (x, y))
        draw.text((x + 2, y + tile_height + 2), tile.caption, fill=(0, 0, 0))
    return np.ascontiguousarray(np.asarray(sheet)[:, :, ::-1])


def sheet_tiles(res: EvalResult, method: str = "torchgrabcut") -> list[SheetTile]:
    """Contact-sheet tiles of an evaluation: each image with ``method``'s foreground and the ground truth outlined."""
    tiles = []
    for i, it in enumerate(res.items):
        caption = f"{Path(it.name).stem[:18]} IoU {res.iou[method][i]:.2f}"
        if "cv2.grabCut" in res.iou and method != "cv2.grabCut":
            caption += f" (cv2 {res.iou['cv2.grabCut'][i]:.2f})"
        tiles.append(SheetTile(it.image, res.foregrounds[method][i], caption, truth=it.gt > 128))
    return tiles


def require_matplotlib() -> None:
    """RuntimeError with the install command when matplotlib is missing (checked before a bench runs)."""
    try:
        import matplotlib  # optional (the plot extra)
    except ImportError as err:
        raise RuntimeError("--plot needs matplotlib: pip install torchgrabcut[plot]") from err
    del matplotlib


def speed_plot(rows: Sequence[BenchRow], path: str | Path, title: str = "GrabCut, 5 iterations") -> None:
    """Milliseconds against megapixels, both axes logarithmic, one line per method; written to ``path``."""
    require_matplotlib()
    import matplotlib  # optional (the plot extra)

    matplotlib.use("Agg")  # before pyplot: files only, no display
    import matplotlib.pyplot as plt

    if not rows:
        raise ValueError("speed plot: no measurements")
    series = {
        "cv2.grabCut (CPU)": [(r.megapixels, r.cv2_ms) for r in rows if r.cv2_ms is not None],
        "torchgrabcut CPU": [(r.megapixels, r.cpu_ms) for r in rows if r.cpu_ms is not None],
        "torchgrabcut GPU": [(r.megapixels, r.gpu_ms) for r in rows if r.gpu_ms is not None],
    }
    fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
    try:
        for (label, points), marker in zip(series.items(), "os^"):
            if points:
                ax.plot([p[0] for p in points], [p[1] for p in points], marker=marker, label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("image size (megapixels)")
        ax.set_ylabel("time per image (ms, median)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        fig.savefig(path)
    finally:
        plt.close(fig)
