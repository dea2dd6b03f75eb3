"""A run's failed images: the log, what was reported, and the limit."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from workbench.core.data.decode_failures import (
    FailedImages,
    TooManyFailedImagesError,
    append_failure,
    left_out_message,
    read_failure_log,
)


def test_the_run_log_gathers_other_processes_failures_and_reports_each_once(tmp_path: Path):
    log = tmp_path / "decode_failures.tsv"
    failed = FailedImages(str(log), rank=0, max_failed_images=2)
    append_failure(failed.log, "/data/a.png", "cannot decode image (truncated)")
    assert failed.logged() == [("/data/a.png", "cannot decode image (truncated)")]

    everyone = failed.logged() + [("/data/b\tc.png", "file not found")]  # another process's
    assert failed.not_yet_reported(everyone) == everyone
    assert failed.not_yet_reported(everyone) == []
    assert read_failure_log(str(log)) == [("/data/a.png", "cannot decode image (truncated)"),
                                          ("/data/b\tc.png", "file not found")]
    failed.check(everyone)  # 2 is the limit, not over it
    with pytest.raises(TooManyFailedImagesError, match="max_failed_images: 3 images"):
        failed.check(everyone + [("/data/d.png", "file not found")])
    failed.close()
    assert log.exists()  # the run folder's log stays


def test_a_process_without_a_run_folder_logs_privately_and_cleans_up():
    failed = FailedImages(None, rank=3, max_failed_images=0)
    assert failed.private and "workbench-rank3-" in os.path.basename(failed.log)
    append_failure(failed.log, "/data/x.jpg", "file not found")
    with pytest.raises(TooManyFailedImagesError, match="/data/x.jpg"):
        failed.check()
    assert failed.not_yet_reported(failed.logged()) == [("/data/x.jpg", "file not found")]
    assert read_failure_log(failed.log) == [("/data/x.jpg", "file not found")]  # not doubled
    failed.close()
    assert not os.path.exists(failed.log)


def test_the_left_out_message_names_three_and_counts_the_rest():
    failures = [(f"/data/{name}.jpg", "file not found") for name in "abcde"]
    assert left_out_message(failures[:1]) == (
        "1 image(s) could not be decoded and were left out: /data/a.jpg (file not found)")
    text = left_out_message(failures)
    assert text.startswith("5 image(s) could not be decoded and were left out: /data/a.jpg")
    assert "/data/c.jpg (file not found) and 2 more" in text and "/data/d.jpg" not in text
