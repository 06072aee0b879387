"""Where the public traces folder is, for tests that read the real traces.

``SPOTSCHED_TRACES_DIR`` overrides the default ``../shared/traces``; a relative value is taken
from the repository root (the parent of ``tests/``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent


def traces_dir() -> Path:
    """The traces folder (which may not exist)."""
    return (REPO_ROOT / os.environ.get("SPOTSCHED_TRACES_DIR", "../shared/traces")).resolve()


needs_traces = pytest.mark.skipif(
    not traces_dir().exists(),
    reason="public traces folder not found (set SPOTSCHED_TRACES_DIR)",
)
