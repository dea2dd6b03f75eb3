"""The finished epochs of a run folder, read back from its metrics.jsonl: what a run resumed from
its last checkpoint continues after, so its earlier curves can be drawn before it starts."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from workbench.core.runs.events import EpochEnd, RunStart, StepStats
from workbench.core.runs.run_follower import RunFollower


@dataclass
class RunHistory:
    """A run's finished epochs.

    Attributes:
        start: the run's first ``RunStart`` (its device, epochs, steps per epoch); None when
            the file has none.
        events: the steps of each finished epoch followed by its ``EpochEnd``, in order.
    """

    start: RunStart | None = None
    events: list[StepStats | EpochEnd] = field(default_factory=list)

    @property
    def epochs_done(self) -> int:
        """The last finished epoch (0 when none finished)."""
        ends = [event.epoch for event in self.events if isinstance(event, EpochEnd)]
        return max(ends, default=0)


def read_run_history(run_dir: str | os.PathLike[str]) -> RunHistory:
    """Read the finished epochs of ``run_dir``; a missing or unreadable file gives an empty
    history. Steps of an epoch that did not finish (the run stopped or crashed in it) are left
    out, and so are those an earlier attempt wrote for an epoch a resumed run then trained
    again: each epoch's steps are those of the attempt that finished it."""
    follower = RunFollower(run_dir)
    history = RunHistory()
    pending: list[StepStats] = []
    while True:
        batch = follower.poll()
        for event in batch.events:
            if isinstance(event, RunStart):
                history.start = history.start or event
                pending = []  # an attempt starts: the unfinished epoch of the last one is gone
            elif isinstance(event, StepStats):
                pending.append(event)
            elif isinstance(event, EpochEnd):
                history.events.extend(step for step in pending if step.epoch == event.epoch)
                history.events.append(event)
                pending = []
        if not batch.more_pending:
            return history
