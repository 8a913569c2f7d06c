"""docs/graphcuts.md's Python examples run as written, one after the other, and say what their comments say."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import torch

DOC = Path(__file__).resolve().parents[2] / "docs" / "graphcuts.md"


def test_graphcuts_examples_run_as_written() -> None:
    blocks = re.findall(r"^```python\n(.*?)^```", DOC.read_text(), flags=re.S | re.M)
    assert len(blocks) == 3, f"docs/graphcuts.md has {len(blocks)} python blocks; check each new one here"
    ns: dict[str, Any] = {}
    for i, block in enumerate(blocks):
        exec(compile(block, f"docs/graphcuts.md (block {i + 1})", "exec"), ns)
    assert int(ns["flow"]) == 2 and ns["cut"].tolist() == [[True, True, False]]
    assert ns["foreground"].shape == (4, 128, 128) and ns["foreground"].dtype == torch.bool
    assert ns["volume"].cut.shape == (32, 32, 32) and ns["volume"].flow.dtype == torch.int64
    seg = ns["seg"]
    assert seg.cut.shape == (1, 64, 128, 128) and seg.cut.dtype == torch.bool
    assert 0 < int(seg.cut.sum()) < seg.cut.numel()
