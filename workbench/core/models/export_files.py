"""What both exports (TorchScript and ONNX) share: the error they raise, the check of a file's
logits against the eager model's (a tolerance relative to the logits' scale, and the top
classes), the temporary file the export is written to and its move to the target (with
the mode the umask asks for), the CPU copy of the model they trace, and the check of the file
in a fresh Python process: one process a file (``fresh_process_report``), or one process for
many files (``FreshProcessVerifier``), since starting an interpreter that imports torch costs
seconds."""

from __future__ import annotations

import copy
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import torch
from torch import nn

from workbench.core.runs.atomic_io import follow_umask

# The largest |logit difference| an export may show, as a share of the largest |logit| the
# eager model gave on the check's images (at least 1): float32 rounding in a deep graph grows
# with the logits' magnitude. Measured (docs/export.md, `python -m
# workbench.bench.export_families --crop 64 --trained-logits 40` and the 224 px table): the
# ONNX files of the catalogue stay within 7.0e-5 of that scale (resnet50 at 64 px, whose own
# float32 logits are 3.5e-5 of it from float64; the rest within 1.6e-5), so 5e-4 leaves a
# margin of seven; a file that computes otherwise (a wrong normalisation, a flushed denormal)
# is off by the logits' own order.
RELATIVE_TOLERANCE = 5e-4
FRESH_PROCESS_TIMEOUT_S = 300


class ExportError(RuntimeError):
    """An export could not be written, verified or loaded; the message names the file."""


@dataclass(frozen=True)
class LogitCheck:
    """An export's logits held against the eager model's on the same images.

    Attributes:
        max_abs_diff: the largest |logit difference| (NaN when the file gave NaN).
        largest_logit: the largest |logit| of the eager model, the scale of the tolerance.
        tolerance: ``RELATIVE_TOLERANCE`` x max(1, ``largest_logit``).
        images: how many images were compared.
        agreeing: images whose top class is the eager model's, or whose eager top two logits
            are within the tolerance of each other (a tie at float32 precision).
    """

    max_abs_diff: float
    largest_logit: float
    tolerance: float
    images: int
    agreeing: int

    @property
    def passed(self) -> bool:
        return self.max_abs_diff <= self.tolerance and self.agreeing == self.images

    @property
    def tolerance_text(self) -> str:
        """'tolerance 3.5e-03 (1e-4 x the largest |logit|, 35.2)'."""
        return (f"tolerance {self.tolerance:.1e} ({RELATIVE_TOLERANCE:g} x the largest "
                f"|logit|, {max(1.0, self.largest_logit):.3g})")

    @property
    def classes_text(self) -> str:
        """'top class agrees on 3 of 3 images'."""
        return f"top class agrees on {self.agreeing} of {self.images} images"

    def failure(self, path: Path, where: str) -> str:
        """Why the file at ``path`` is refused, naming the figures."""
        if not self.max_abs_diff <= self.tolerance:  # also catches NaN
            return (f"export to '{path}' differs from the trained model {where}: max abs "
                    f"logit difference {self.max_abs_diff:.3g} > {self.tolerance_text}; "
                    "the file was not written")
        return (f"export to '{path}' predicts other classes than the trained model {where}: "
                f"{self.classes_text}; the file was not written")


def check_logits(expected: Mapping[str, torch.Tensor], diff: float,
                 classes: Mapping[str, Sequence[int]]) -> LogitCheck:
    """Hold an export's ``diff`` (its max |logit difference|) and top ``classes`` (one list of
    class indices a batch) against the eager model's ``expected`` logits of the same batches."""
    largest = max((float(logits.abs().max()) for logits in expected.values()), default=0.0)
    tolerance = RELATIVE_TOLERANCE * max(1.0, largest)
    images = agreeing = 0
    for name, logits in expected.items():
        top2 = logits.topk(min(2, logits.shape[-1]), dim=-1).values
        ties = (top2[:, 0] - top2[:, -1] <= tolerance) if logits.shape[-1] > 1 \
            else torch.zeros(len(logits), dtype=torch.bool)
        want = logits.argmax(dim=-1)
        got = torch.as_tensor(list(classes.get(name, [])), dtype=torch.long)
        images += len(logits)
        if got.shape == want.shape:
            agreeing += int(((got == want) | ties).sum())
    return LogitCheck(diff, largest, tolerance, images, agreeing)


def verify_logits(expected: Mapping[str, torch.Tensor], diff: float,
                  classes: Mapping[str, Sequence[int]], path: Path, where: str) -> LogitCheck:
    """``check_logits``, raising ExportError (naming the file and the figures) on failure."""
    check = check_logits(expected, diff, classes)
    if not check.passed:
        raise ExportError(check.failure(path, where))
    return check


def temp_file_beside(path: Path) -> Path:
    """An empty temporary file in ``path``'s folder (created if missing), so that the final
    ``os.replace`` stays on one file system."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise ExportError(f"cannot write '{path}': {exc.strerror or exc}") from exc
    os.close(fd)
    return Path(name)


def publish_export(temp: Path, path: Path) -> None:
    """Give the verified ``temp`` file the mode the umask asks for (``mkstemp`` made it 0600)
    and move it to ``path`` in one step."""
    try:
        follow_umask(temp)
        os.replace(temp, path)
    except OSError as exc:
        raise ExportError(f"cannot write '{path}': {exc.strerror or exc}") from exc


def cpu_inference_copy(model: nn.Module) -> nn.Module:
    """A frozen CPU copy in eval mode and the default memory format; ``model`` is untouched."""
    copied = copy.deepcopy(model).cpu().eval()
    copied.requires_grad_(False)
    return copied.to(memory_format=torch.contiguous_format)


def fresh_process_report(script: str, arguments: Sequence[str], folder: str,
                         failure: str) -> dict[str, Any]:
    """Run ``python -c script ARGUMENTS`` in ``folder`` and return the JSON object its last line
    prints: a fresh interpreter has nothing of this process's state (flushed denormals, loaded
    modules), so it sees the file as a user's program will.

    Raises:
        ExportError: the process cannot start, times out, fails (``failure`` says what that
            means, the message ends with its last lines of stderr) or prints no JSON object.
    """
    command = [sys.executable, "-c", script, *arguments]
    try:
        done = subprocess.run(command, cwd=folder, capture_output=True, text=True,
                              timeout=FRESH_PROCESS_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ExportError(f"could not check the export in a fresh Python process: {exc}"
                          ) from exc
    return _parse_report(done.returncode, done.stdout, done.stderr, failure)


def _parse_report(returncode: int, stdout: str, stderr: str, failure: str) -> dict[str, Any]:
    lines = stdout.strip().splitlines()
    if returncode != 0 or not lines:
        tail = "\n".join(stderr.strip().splitlines()[-5:])
        raise ExportError(f"{failure} (exit code {returncode}):\n{tail}")
    try:
        report = json.loads(lines[-1])
        float(report["max_abs_diff"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ExportError(f"unexpected output from the fresh-process check: {lines[-1]!r}"
                          ) from exc
    return report


# The verifier's child: runs each check script it is sent (one JSON line on stdin: the script,
# its arguments and folder) as ``python -c script ARGUMENTS`` would, and answers with one JSON
# line: the exit status and what the script printed. Nothing of workbench is imported here.
_VERIFIER_LOOP = """
import contextlib, io, json, os, sys, traceback
answers = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)  # anything a library writes to stdout goes to stderr, not into the answers
for line in sys.stdin:
    request = json.loads(line)
    out, err = io.StringIO(), io.StringIO()
    sys.argv = ["-c", *request["arguments"]]
    status = 0
    try:
        os.chdir(request["folder"])
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            exec(compile(request["script"], "<check>", "exec"), {"__name__": "__main__"})
    except SystemExit as exc:
        status = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        err.write(traceback.format_exc())
        status = 1
    answers.write(json.dumps({"status": status, "stdout": out.getvalue(),
                              "stderr": err.getvalue()}) + "\\n")
    answers.flush()
"""


class FreshProcessVerifier:
    """One fresh Python process that checks many exported files, one after the other.

    ``report`` has the signature and the answer of ``fresh_process_report``, but every check
    runs in the same child interpreter, started on the first check, so torch and onnxruntime
    are imported once rather than once a file. The child never runs this process's code and
    shares none of its state (flushed denormals, loaded modules). A check that kills the child
    fails with its last lines of stderr, and the next check starts a new one. Use it as a
    context manager, or call ``close``.
    """

    def __init__(self, timeout_s: float = FRESH_PROCESS_TIMEOUT_S) -> None:
        self.timeout_s = timeout_s
        self.checks = 0  # files checked so far
        self.processes_started = 0
        self._process: subprocess.Popen[str] | None = None
        self._answers: queue.Queue[str | None] = queue.Queue()
        self._stderr: IO[str] | None = None
        self._folder: tempfile.TemporaryDirectory[str] | None = None

    def report(self, script: str, arguments: Sequence[str], folder: str,
               failure: str) -> dict[str, Any]:
        """Run ``script`` with ``arguments`` in the child (in ``folder``); the JSON object its
        last printed line holds.

        Raises:
            ExportError: as ``fresh_process_report`` does.
        """
        process = self._running()
        request = {"script": script, "arguments": list(arguments), "folder": str(folder)}
        try:
            assert process.stdin is not None
            process.stdin.write(json.dumps(request) + "\n")
            process.stdin.flush()
        except OSError:
            pass  # the child has died; reported below with its stderr
        try:
            line = self._answers.get(timeout=self.timeout_s)
        except queue.Empty:
            self._stop()
            raise ExportError(f"could not check the export in a fresh Python process: no "
                              f"answer within {self.timeout_s:g} s") from None
        if line is None:
            code = process.wait()
            tail = self._stderr_tail()
            self._stop()
            raise ExportError(f"{failure} (the checking process ended with exit code "
                              f"{code}):\n{tail}")
        self.checks += 1
        answer = json.loads(line)
        return _parse_report(answer["status"], answer["stdout"], answer["stderr"], failure)

    def close(self) -> None:
        """End the child process (it is started again if another check comes)."""
        process = self._process
        if process is not None:
            try:
                assert process.stdin is not None
                process.stdin.close()
                process.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                process.kill()
                process.wait()
        self._stop()

    def __enter__(self) -> FreshProcessVerifier:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def _running(self) -> subprocess.Popen[str]:
        if self._process is not None and self._process.poll() is None:
            return self._process
        self._stop()
        self._folder = tempfile.TemporaryDirectory(prefix="workbench-export-verifier-")
        self._stderr = open(Path(self._folder.name) / "stderr.txt", "w+", encoding="utf-8")
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-c", _VERIFIER_LOOP], cwd=self._folder.name, text=True,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr)
        except OSError as exc:
            self._stop()
            raise ExportError(f"could not check the export in a fresh Python process: {exc}"
                              ) from exc
        self.processes_started += 1
        self._answers = queue.Queue()
        threading.Thread(target=_forward_lines, args=(self._process.stdout, self._answers),
                         daemon=True).start()
        return self._process

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return ""
        self._stderr.flush()
        self._stderr.seek(0)
        return "\n".join(self._stderr.read().strip().splitlines()[-5:])

    def _stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()
        self._process = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None


def _forward_lines(stream: IO[str] | None, answers: queue.Queue[str | None]) -> None:
    """Reader thread: each line the child prints, then None when its output ends."""
    if stream is not None:
        for line in stream:
            answers.put(line)
        stream.close()
    answers.put(None)
