"""The dataset tests' shared fixtures: the clean COCO set, its two-image subset, and a reference run on it.

Module-scoped, as they were in each test file: a test module binds the ones it uses
(`full, small = dataset_fixtures.full, dataset_fixtures.small`; `small` needs `full`) and
builds its own copy. Bound by assignment, not `from dataset_fixtures import full`, which ruff
reads as an unused import shadowed by each test's argument (F401, F811). Not a conftest.py:
tests/python/conftest.py is imported as `conftest`, and a second one here would take its
place in the tests' `from conftest import ...`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from coco_fixtures import clean_coco, reference_annotations, small_coco


@pytest.fixture(scope="module")
def full(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return clean_coco(tmp_path_factory.mktemp("clean"))


@pytest.fixture(scope="module")
def small(full: Path) -> Path:
    """Images 2 and 3 of the clean set (000001.png, 000002.png): a small box, a box outside, 6 boxes."""
    return small_coco(full)


@pytest.fixture(scope="module")
def small_ref(small: Path, tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The annotations of an uninterrupted run on the small set."""
    return reference_annotations(small, tmp_path_factory.mktemp("small_ref") / "out.json")
