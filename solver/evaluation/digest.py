"""SHA-256 digests of arrays by their content: dtype, shape and values."""

from __future__ import annotations

import hashlib

import numpy as np


def add_array(digest: hashlib._Hash, array: np.ndarray) -> None:
    """Feed ``array``'s dtype, shape and values to ``digest``."""
    array = np.ascontiguousarray(array)
    digest.update(f"{array.dtype.str}{array.shape}".encode())
    digest.update(array.tobytes())


def arrays_digest(*arrays: np.ndarray) -> str:
    """The SHA-256 hex digest of ``arrays`` in order."""
    digest = hashlib.sha256()
    for array in arrays:
        add_array(digest, array)
    return digest.hexdigest()
