"""What both exports (TorchScript and ONNX) share: the error they raise, the tolerance they
verify against, the temporary file the export is written to and its move to the target (with
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
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import torch
from torch import nn

from workbench.core.runs.atomic_io import follow_umask

TOLERANCE = 1e-4
FRESH_PROCESS_TIMEOUT_S = 300


class ExportError(RuntimeError):
    """An export could not be written, verified or loaded; the message names the file."""


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
