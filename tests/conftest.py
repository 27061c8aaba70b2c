"""Shared fixtures: the real NIST BSSR1 scores in ../shared/data/bssr1.

Outside CI a missing dataset skips the tests that need it, with the reason;
under CI (CI=true) it is a failure, so a broken checkout cannot pass quietly.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BSSR1 = Path(os.environ.get("BIOXR_BSSR1", REPO.parent / "shared" / "data" / "bssr1"))


def _data_file(name: str) -> Path:
    path = BSSR1 / name
    if not path.is_file():
        message = f"BSSR1 file {path} not found (set BIOXR_BSSR1 to its folder)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message + "; under CI the dataset must be present.")
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def face_csv() -> Path:
    """Path to face-C.csv (similarity floats; one reference column all -1)."""
    return _data_file("face-C.csv")


@pytest.fixture(scope="session")
def finger_csv() -> Path:
    """Path to finger-left.csv (integer similarity scores, heavy ties)."""
    return _data_file("finger-left.csv")
