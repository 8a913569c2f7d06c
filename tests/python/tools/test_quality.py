"""Quality on all of GrabCut-50: at least as good as cv2.grabCut, measured in the same run."""

from __future__ import annotations

import numpy as np
import pytest

from torchgrabcut.tools.evaluate import evaluate_dataset, format_eval


@pytest.mark.slow
def test_grabcut50_at_least_as_good_as_cv2(grabcut50) -> None:  # type: ignore[no-untyped-def]
    pytest.importorskip("cv2")
    res = evaluate_dataset(grabcut50, device="cpu", max_iter=5, with_cv2=True)
    print("\n" + format_eval(res))
    ours_err, cv2_err = np.mean(res.error["torchgrabcut"]), np.mean(res.error["cv2.grabCut"])
    ours_iou, cv2_iou = np.mean(res.iou["torchgrabcut"]), np.mean(res.iou["cv2.grabCut"])
    assert len(res.names) == 50
    assert ours_err <= cv2_err, (ours_err, cv2_err)
    assert ours_iou >= cv2_iou, (ours_iou, cv2_iou)
    assert np.mean(res.agreement_iou) > 0.9
