"""The states a job can be in, and what can be said of its deadlines: declared apart from the
job book so that the command line names them without loading it."""

from typing import Literal

RELEASED = {"finished": "finished", "deadline_missed": "missed", "cancelled": "cancelled",
            "failed": "failed"}
"""The state of a job released for each cause."""
ACTIVE_STATES = ("pending", "waiting", "running", "cancelling")
"""The states of a job the service still schedules."""
STATES = (*ACTIVE_STATES, *RELEASED.values(), "rejected")
"""Every state of a job, active first."""
Deadline = Literal["soft", "hard"]
