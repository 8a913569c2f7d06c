"""GrabCutModel: the two colour mixtures of a GrabCut segmentation."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

__all__ = ["PARAMS_PER_COMPONENT", "GrabCutModel"]

# Per component: weight, mean[3], covariance[9] (row-major).
PARAMS_PER_COMPONENT = 13


@dataclass(frozen=True)
class GrabCutModel:
    """Background and foreground Gaussian mixtures, as learnt by GrabCut.

    ``params`` is a float64 tensor of shape ``(2 * K, 13)`` for one image or
    ``(B, 2 * K, 13)`` for a batch: K background components, then K foreground
    ones, each ``[weight, mean (3), covariance (3x3, row-major)]``. Colours are in
    the channel order of the image the model was learnt on (BGR for images read by
    OpenCV).
    """

    params: torch.Tensor

    def __post_init__(self) -> None:
        p = self.params
        if not isinstance(p, torch.Tensor):
            raise TypeError(f"GrabCutModel.params: expected a torch.Tensor, got {type(p).__name__}")
        if p.dtype != torch.float64:
            raise TypeError(f"GrabCutModel.params: expected dtype float64, got {p.dtype}")
        if p.dim() not in (2, 3) or p.shape[-1] != PARAMS_PER_COMPONENT or p.shape[-2] % 2 != 0 or p.shape[-2] == 0:
            raise ValueError(
                "GrabCutModel.params: expected shape (2 * K, 13) or (B, 2 * K, 13), got " + str(tuple(p.shape))
            )

    @property
    def components(self) -> int:
        """Number of Gaussian components per class (K)."""
        return int(self.params.shape[-2] // 2)

    @property
    def batched(self) -> bool:
        return self.params.dim() == 3

    @property
    def background(self) -> torch.Tensor:
        """The background mixture, shape (..., K, 13)."""
        return self.params[..., : self.components, :]

    @property
    def foreground(self) -> torch.Tensor:
        """The foreground mixture, shape (..., K, 13)."""
        return self.params[..., self.components :, :]

    def __len__(self) -> int:
        if not self.batched:
            raise TypeError("len() of an unbatched GrabCutModel")
        return int(self.params.shape[0])

    def __getitem__(self, index: int) -> GrabCutModel:
        if not self.batched:
            raise TypeError("indexing an unbatched GrabCutModel")
        return GrabCutModel(self.params[index])

    def to(self, device: str | torch.device) -> GrabCutModel:
        return GrabCutModel(self.params.to(device))

    @classmethod
    def from_cv2(cls, bgd_model: np.ndarray, fgd_model: np.ndarray) -> GrabCutModel:
        """From OpenCV's ``bgdModel`` and ``fgdModel`` (1 x 13K float64 each, K = 5 in OpenCV)."""
        rows = [cls._rows_from_cv2(a, name) for a, name in ((bgd_model, "bgdModel"), (fgd_model, "fgdModel"))]
        if rows[0].shape != rows[1].shape:
            raise ValueError(
                f"bgdModel and fgdModel: expected the same size, got {rows[0].size} and {rows[1].size} values"
            )
        return cls(torch.from_numpy(np.concatenate(rows, axis=0)))

    def to_cv2(self) -> tuple[np.ndarray, np.ndarray]:
        """OpenCV's ``(bgdModel, fgdModel)``: two 1 x 13K float64 arrays."""
        if self.batched:
            raise ValueError("to_cv2: expected the model of one image, got a batch; index it first")
        p = self.params.detach().cpu().numpy()
        k = self.components
        return self._rows_to_cv2(p[:k]), self._rows_to_cv2(p[k:])

    @staticmethod
    def _rows_from_cv2(array: np.ndarray, name: str) -> np.ndarray:
        a = np.asarray(array)
        if a.dtype != np.float64:
            raise TypeError(f"{name}: expected dtype float64, got {a.dtype}")
        flat = a.reshape(-1)
        if flat.size == 0 or flat.size % PARAMS_PER_COMPONENT != 0:
            raise ValueError(f"{name}: expected 13 * K values (1 x 65 for OpenCV's 5 components), got shape {a.shape}")
        if not np.all(np.isfinite(flat)):
            raise ValueError(f"{name}: expected finite values, got NaN or inf")
        k = flat.size // PARAMS_PER_COMPONENT
        # OpenCV's layout: K weights, then K means (3 each), then K covariances (9 each).
        rows = np.empty((k, PARAMS_PER_COMPONENT), dtype=np.float64)
        rows[:, 0] = flat[:k]
        rows[:, 1:4] = flat[k : 4 * k].reshape(k, 3)
        rows[:, 4:] = flat[4 * k :].reshape(k, 9)
        return rows

    @staticmethod
    def _rows_to_cv2(rows: np.ndarray) -> np.ndarray:
        flat = np.concatenate([rows[:, 0], rows[:, 1:4].reshape(-1), rows[:, 4:].reshape(-1)])
        return flat.reshape(1, -1).astype(np.float64)
