"""torchgrabcut: GrabCut for PyTorch, with an exact min-cut on the CPU and the GPU.

Quick start::

    import cv2, torchgrabcut
    img = cv2.imread("photo.jpg")
    mask = torchgrabcut.grabcut(img, box=(50, 40, 300, 260))   # labels 0..3, as OpenCV's
    fg = (mask == torchgrabcut.GC_FGD) | (mask == torchgrabcut.GC_PR_FGD)

``torchgrabcut.grabCut`` is a drop-in for ``cv2.grabCut``.
"""

# First, before torch is imported: in the command line, Ctrl-C during the import is one
# line, not a traceback (importing _startup does it; see there).
from torchgrabcut import _startup  # noqa: F401  # isort: skip
from torchgrabcut._ops import cuda_kernels_built
from torchgrabcut.api import GC_BGD, GC_FGD, GC_PR_BGD, GC_PR_FGD, grabcut
from torchgrabcut.cv2_compat import (
    GC_EVAL,
    GC_EVAL_FREEZE_MODEL,
    GC_INIT_WITH_MASK,
    GC_INIT_WITH_RECT,
    grabCut,
)
from torchgrabcut.graphcut import MinCut, mincut, segment
from torchgrabcut.model import GrabCutModel

__version__ = "0.1.0"

__all__ = [
    "GC_BGD",
    "GC_EVAL",
    "GC_EVAL_FREEZE_MODEL",
    "GC_FGD",
    "GC_INIT_WITH_MASK",
    "GC_INIT_WITH_RECT",
    "GC_PR_BGD",
    "GC_PR_FGD",
    "GrabCutModel",
    "MinCut",
    "__version__",
    "cuda_kernels_built",
    "grabCut",
    "grabcut",
    "mincut",
    "segment",
]
