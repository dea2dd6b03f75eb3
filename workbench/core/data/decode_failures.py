"""Images that failed to decode: the run's log of them, and the limit that stops a run.

A sample that cannot be decoded becomes a zero image labelled -1 (ignored by loss and accuracy)
and a ``"<path>\\t<reason>"`` line in the failure log (the path as ``stored_name`` writes it),
instead of ending a night's run; only when more distinct images than ``max_failed_images``
have failed does the run stop (``check_failed_images``), naming them. Under torchrun every
process keeps a log, and the failures of all of them count.
"""

from __future__ import annotations

import os
import tempfile

from workbench.core.data.dataset_scan import DatasetError
from workbench.core.file_names import read_stored_name, shown_name, stored_name
from workbench.core.runs.atomic_io import describe_os_error

# Failed files named in the message that stops a run; the rest are counted.
NAMED_FAILURES = 5
# Reasons starting with this are warnings Pillow or libtiff gave about an image that did
# decode: logged beside the failures, never counted as one.
WARNING_PREFIX = "warning: "


class TooManyFailedImagesError(DatasetError):
    """More distinct images failed to decode than ``max_failed_images`` allows."""


class FailureLogError(DatasetError):
    """The failure log cannot be written, so failed images could no longer be counted."""


def check_failed_images(failures: list[tuple[str, str]], max_failed_images: int) -> None:
    """Stop the run when more than ``max_failed_images`` distinct images have failed.

    Raises:
        TooManyFailedImagesError: naming the setting, the count and the first few files.
    """
    if len(failures) <= max_failed_images:
        return
    shown = "; ".join(f"{shown_name(path)} ({reason})"
                      for path, reason in failures[:NAMED_FAILURES])
    more = (f" and {len(failures) - NAMED_FAILURES} more" if len(failures) > NAMED_FAILURES
            else "")
    count = f"{len(failures)} image{'s' if len(failures) != 1 else ''}"
    raise TooManyFailedImagesError(
        f"max_failed_images: {count} could not be decoded, more than the {max_failed_images} "
        f"allowed, so the run stopped: {shown}{more}. Fix or remove these files, or raise "
        "max_failed_images."
    )


def append_failure(failure_log: str, path: str, reason: str) -> None:
    """Log one failed image, once: a file that fails every epoch keeps its one line.

    One small append per failure: O_APPEND keeps the lines of several loader processes whole.

    Raises:
        FailureLogError: the log cannot be read or written; the run must stop, because
            ``max_failed_images`` counts the images in this log.
    """
    _append_once(failure_log, path, reason)


def append_warning(failure_log: str, path: str, text: str) -> None:
    """Log, once, a warning Pillow or libtiff gave while decoding ``path`` (which decoded)."""
    _append_once(failure_log, path, WARNING_PREFIX + text)


def _append_once(failure_log: str, path: str, reason: str) -> None:
    warning = reason.startswith(WARNING_PREFIX)
    try:
        if any(logged == path and logged_reason.startswith(WARNING_PREFIX) == warning
               for logged, logged_reason in _log_lines(failure_log)):
            return
        with open(failure_log, "a", encoding="utf-8", errors="surrogateescape") as handle:
            handle.write(_line(path, reason))
    except OSError as exc:
        what = "a warning about" if warning else "that it could not decode"
        raise FailureLogError(
            f"{failure_log}: cannot record {what} {shown_name(path)} ({describe_os_error(exc)}); "
            "the run "
            "stops, because images that fail to decode could no longer be counted against "
            "max_failed_images"
        ) from exc


def read_failure_log(failure_log: str | None) -> list[tuple[str, str]]:
    """Parse a failure log into unique ``(path, reason)`` pairs, in the order first seen.

    Warning lines (``WARNING_PREFIX``) are left out: those images decoded.
    """
    seen: dict[str, str] = {}
    for path, reason in _log_lines(failure_log):
        if path not in seen and not reason.startswith(WARNING_PREFIX):
            seen[path] = reason
    return list(seen.items())


def read_warning_log(failure_log: str | None) -> list[tuple[str, str]]:
    """The ``(path, warning)`` lines of a failure log, without the prefix."""
    return [(path, reason[len(WARNING_PREFIX):]) for path, reason in _log_lines(failure_log)
            if reason.startswith(WARNING_PREFIX)]


def _log_lines(failure_log: str | None) -> list[tuple[str, str]]:
    if not failure_log or not os.path.exists(failure_log):
        return []
    with open(failure_log, encoding="utf-8", errors="surrogateescape") as handle:
        pairs = [line.rstrip("\n").partition("\t") for line in handle]
    return [(read_stored_name(path), reason) for path, _, reason in pairs if path]


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
    shown = "; ".join(f"{shown_name(path)} ({reason})" for path, reason in failures[:3])
    more = f" and {len(failures) - 3} more" if len(failures) > 3 else ""
    return f"{len(failures)} image(s) could not be decoded and were left out: {shown}{more}"


def _line(path: str, reason: str) -> str:
    # The path as stored_name writes it: a name with a tab, a newline or bytes that are not
    # UTF-8 is a JSON string, so the line stays one line and reads back to the same path.
    return f"{stored_name(path)}\t{_one_line(shown_name(reason))}\n"


def _one_line(text: str) -> str:
    return text.replace("\t", " ").replace("\r", " ").replace("\n", " ")
