"""Images that failed to decode: the run's log of them, and the limit that stops a run.

A sample that cannot be decoded becomes a zero image labelled -1 (ignored by loss and accuracy)
and a ``"<path>\\t<reason>"`` line in the failure log, instead of ending a night's run; only
when more distinct images than ``max_failed_images`` have failed does the run stop
(``check_failed_images``), naming them. Under torchrun every process keeps a log, and the
failures of all of them count.
"""

from __future__ import annotations

import os
import tempfile

from workbench.core.data.dataset_scan import DatasetError

# Failed files named in the message that stops a run; the rest are counted.
NAMED_FAILURES = 5


class TooManyFailedImagesError(DatasetError):
    """More distinct images failed to decode than ``max_failed_images`` allows."""


def check_failed_images(failures: list[tuple[str, str]], max_failed_images: int) -> None:
    """Stop the run when more than ``max_failed_images`` distinct images have failed.

    Raises:
        TooManyFailedImagesError: naming the setting, the count and the first few files.
    """
    if len(failures) <= max_failed_images:
        return
    shown = "; ".join(f"{path} ({reason})" for path, reason in failures[:NAMED_FAILURES])
    more = (f" and {len(failures) - NAMED_FAILURES} more" if len(failures) > NAMED_FAILURES
            else "")
    count = f"{len(failures)} image{'s' if len(failures) != 1 else ''}"
    raise TooManyFailedImagesError(
        f"max_failed_images: {count} could not be decoded, more than the {max_failed_images} "
        f"allowed, so the run stopped: {shown}{more}. Fix or remove these files, or raise "
        "max_failed_images."
    )


def append_failure(failure_log: str, path: str, reason: str) -> None:
    """Log one failed image. One small append per failure: O_APPEND keeps the lines of
    several loader processes whole."""
    try:
        # surrogateescape: a file name that is not valid UTF-8 still round-trips.
        with open(failure_log, "a", encoding="utf-8", errors="surrogateescape") as handle:
            handle.write(_line(path, reason))
    except OSError:
        pass  # the zero image and label -1 already keep the run going


def read_failure_log(failure_log: str | None) -> list[tuple[str, str]]:
    """Parse a failure log into unique ``(path, reason)`` pairs, in the order first seen."""
    if not failure_log or not os.path.exists(failure_log):
        return []
    seen: dict[str, str] = {}
    with open(failure_log, encoding="utf-8", errors="surrogateescape") as handle:
        for line in handle:
            path, _, reason = line.rstrip("\n").partition("\t")
            if path and path not in seen:
                seen[path] = reason
    return list(seen.items())


def record_failures(failure_log: str, failures: list[tuple[str, str]]) -> None:
    """Append the ``(path, reason)`` pairs the log does not hold yet (another process's)."""
    known = {path for path, _ in read_failure_log(failure_log)}
    lines = [_line(path, reason) for path, reason in failures if path not in known]
    if lines:
        with open(failure_log, "a", encoding="utf-8", errors="surrogateescape") as handle:
            handle.writelines(lines)


class FailedImages:
    """One run's failed images: where they are logged, which were reported, and the limit.

    Args:
        run_log: the run folder's log; None for a process under torchrun that writes no run
            folder, which then logs to a private temporary file (deleted by ``close``).
        rank: the process's rank, for the private file's name.
        max_failed_images: the run stops past this many distinct failures.
    """

    def __init__(self, run_log: str | None, rank: int, max_failed_images: int) -> None:
        self.private = run_log is None
        if run_log is None:
            handle, run_log = tempfile.mkstemp(prefix=f"workbench-rank{rank}-",
                                               suffix="-decode-failures.tsv")
            os.close(handle)
        self.log = run_log
        self.max_failed_images = max_failed_images
        self._reported: set[str] = set()

    def logged(self) -> list[tuple[str, str]]:
        """This process's failures so far."""
        return read_failure_log(self.log)

    def not_yet_reported(self, failures: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """The failures not returned before (each is returned once); the run folder's log
        gets those another process logged."""
        new = [(path, reason) for path, reason in failures if path not in self._reported]
        self._reported.update(path for path, _ in new)
        if new and not self.private:
            record_failures(self.log, new)
        return new

    def check(self, failures: list[tuple[str, str]] | None = None) -> None:
        """``check_failed_images`` of ``failures`` (this process's own when None)."""
        check_failed_images(self.logged() if failures is None else failures,
                            self.max_failed_images)

    def close(self) -> None:
        if self.private:
            try:
                os.unlink(self.log)
            except OSError:
                pass


def left_out_message(failures: list[tuple[str, str]]) -> str:
    """The warning that names (up to three of) ``failures`` and says they were left out."""
    shown = "; ".join(f"{path} ({reason})" for path, reason in failures[:3])
    more = f" and {len(failures) - 3} more" if len(failures) > 3 else ""
    return f"{len(failures)} image(s) could not be decoded and were left out: {shown}{more}"


def _line(path: str, reason: str) -> str:
    return f"{_one_line(path)}\t{_one_line(reason)}\n"


def _one_line(text: str) -> str:
    return text.replace("\t", " ").replace("\r", " ").replace("\n", " ")
