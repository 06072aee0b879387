"""A solver-neutral mixed-integer linear program, built once and handed to a backend."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

INFINITY = math.inf


@dataclass
class LinearProgram:
    """Variables with bounds and integrality, rows ``lower <= sum(coef * var) <= upper`` and a
    linear objective to maximise. Variables and rows are numbered in order of creation."""

    lower: list[float] = field(default_factory=list)
    upper: list[float] = field(default_factory=list)
    integer: list[bool] = field(default_factory=list)
    objective: dict[int, float] = field(default_factory=dict)
    offset: float = 0.0
    row_lower: list[float] = field(default_factory=list)
    row_upper: list[float] = field(default_factory=list)
    row_vars: list[list[int]] = field(default_factory=list)
    row_coefs: list[list[float]] = field(default_factory=list)

    @property
    def n_vars(self) -> int:
        return len(self.lower)

    @property
    def n_rows(self) -> int:
        return len(self.row_lower)

    def var(self, lower: float, upper: float, integer: bool = False, gain: float = 0.0) -> int:
        """A new variable; ``gain`` is its objective coefficient."""
        if lower > upper:
            raise ValueError(
                f"variable bounds lower={lower} upper={upper}: expected lower <= upper")
        self.lower.append(float(lower))
        self.upper.append(float(upper))
        self.integer.append(integer)
        index = len(self.lower) - 1
        if gain:
            self.objective[index] = float(gain)
        return index

    def gain(self, var: int, amount: float) -> None:
        """Add ``amount`` to the objective coefficient of ``var``."""
        self.objective[var] = self.objective.get(var, 0.0) + float(amount)

    def row(
        self, terms: Sequence[tuple[int, float]], lower: float = -INFINITY, upper: float = INFINITY
    ) -> None:
        """``lower <= sum(coef * var for var, coef in terms) <= upper``; repeated variables add."""
        merged: dict[int, float] = {}
        for var, coef in terms:
            merged[var] = merged.get(var, 0.0) + float(coef)
        merged = {v: c for v, c in merged.items() if c != 0.0}
        if not merged:
            if lower > 1e-9 or upper < -1e-9:
                raise ValueError(f"empty row with bounds [{lower}, {upper}] cannot hold")
            return
        self.row_vars.append(list(merged))
        self.row_coefs.append(list(merged.values()))
        self.row_lower.append(float(lower))
        self.row_upper.append(float(upper))

    def value(self, values: np.ndarray) -> float:
        """The objective at ``values``."""
        return self.offset + sum(c * float(values[v]) for v, c in self.objective.items())
