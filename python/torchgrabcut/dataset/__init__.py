"""Box-to-mask for a COCO-format dataset (the ``torchgrabcut dataset`` job).

Detector or annotated boxes in, instance masks out: every box of a COCO
annotation file is segmented with GrabCut on a crop around it, and the file is
written back with each annotation's ``segmentation`` as COCO RLE.

Modules: :mod:`.job` (the run as a sequence of steps), :mod:`.options` (the
settings and their checks), :mod:`.plan` (reading the file, boxes, crops,
skips, ground truth), :mod:`.pipeline` and :mod:`.calls` (reading, segmenting
and post-processing a rank's images), :mod:`.distributed` (the torchrun
group), :mod:`.parts` (resumable part files and the merge), :mod:`.summary` and
:mod:`.timing` (what rank 0 prints), :mod:`.cli` (the subcommand). pycocotools and tqdm are imported
only when the job runs (``pip install torchgrabcut[dataset]``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["DatasetOptions", "DatasetSummary", "run_dataset"]


def __getattr__(name: str) -> Any:  # lazy: `import torchgrabcut.dataset.cli` (and so --help) stays light
    if name in __all__:
        from torchgrabcut.dataset import job

        return getattr(job, name)
    raise AttributeError(name)
