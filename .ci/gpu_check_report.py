"""Helper of ``.ci/gpu-check``: the device description, then one JSON file and a summary.

    python .ci/gpu_check_report.py device DEVICE_JSON
    python .ci/gpu_check_report.py report OUT_DIR INSTALL_RC TESTS_RC BENCH_RC SECONDS TABLE_RC
"""

from __future__ import annotations

import datetime as _dt
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

# The bench rows the summary and the README table quote (see workbench/bench/training_benchmark).
IMAGES_ROW = "resnet18 end-to-end images/s on CUDA"
PEAK_ROW = "resnet18 peak memory on CUDA"
BATCH_ROW = "resnet18 largest batch that fits (AMP)"
EXIT_TEXT = {0: "passed", 124: "timed out", 137: "killed (time or memory)"}


def describe_device() -> dict:
    import torch

    from workbench.core.devices.selection import cuda_unavailable_reason, environment_info

    reason = cuda_unavailable_reason()
    info = {"cuda": reason is None, "reason": reason, "torch": torch.__version__,
            "cuda_build": torch.version.cuda}
    if reason is None:
        props = torch.cuda.get_device_properties(0)
        info.update(environment_info("cuda:0"))
        info.update(gpu=props.name, capability=f"{props.major}.{props.minor}",
                    memory_gib=round(props.total_memory / 2**30, 1),
                    gpu_count=torch.cuda.device_count())
    return info


def test_counts(xml_file: Path) -> dict:
    if not xml_file.is_file():
        return {}
    suite = ET.parse(xml_file).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    counts = {key: int(suite.get(key, 0)) for key in ("tests", "failures", "errors", "skipped")}
    counts["passed"] = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    counts["failed"] = [f"{case.get('classname')}::{case.get('name')}" for case in suite.iter(
        "testcase") if case.find("failure") is not None or case.find("error") is not None]
    return counts


def bench_figures(bench: dict) -> dict:
    rows = {row["what"]: row for row in bench.get("rows", [])}
    figures = {}
    if IMAGES_ROW in rows:
        figures["images_per_second"] = round(rows[IMAGES_ROW]["workbench"], 1)
        figures["images_setting"] = rows[IMAGES_ROW].get("details", {}).get("setting")
    if PEAK_ROW in rows:
        figures["peak_memory_gib"] = round(rows[PEAK_ROW]["workbench"], 2)
    if BATCH_ROW in rows:
        figures["largest_batch"] = int(rows[BATCH_ROW]["workbench"])
        figures["largest_batch_description"] = rows[BATCH_ROW].get("details", {}).get(
            "description")
    figures["precision_layout"] = {what: round(row["ratio"], 2) for what, row in rows.items()
                                   if "model-only" in what and row.get("ratio") is not None}
    return figures


def _status(code: int) -> str:
    return EXIT_TEXT.get(code, f"failed (exit status {code})")


def summary_lines(document: dict) -> list[str]:
    device = document["device"]
    if not device["cuda"]:
        return [f"gpu-check: no CUDA device: {device['reason']}.",
                f"torch {device['torch']} (CUDA build {device['cuda_build']}); "
                "nothing was measured."]
    tests, figures = document["tests"], document["figures"]
    na = "not measured"
    images = f"{figures['images_per_second']:,.0f} img/s" if "images_per_second" in figures \
        else na
    peak = f"{figures['peak_memory_gib']:.2f} GiB" if "peak_memory_gib" in figures else na
    batch = str(figures.get("largest_batch", na))
    lines = [
        f"GPU: {device['gpu']} ({device['memory_gib']} GiB, sm {device['capability']}), "
        f"driver {device.get('driver')}, torch {device['torch']} (CUDA {device['cuda_build']})",
        f"install: {_status(document['install_exit'])}",
        f"cuda tests: {_status(document['tests_exit'])}: {tests.get('passed', 0)} passed, "
        f"{len(tests.get('failed', []))} failed, {tests.get('skipped', 0)} skipped",
        *[f"  failed: {name}" for name in tests.get("failed", [])],
        f"bench (training, CUDA): {_status(document['bench_exit'])}",
        f"ResNet18 five-crop end-to-end: {images}; peak memory {peak}; largest batch (AMP) "
        f"{batch} samples",
        *[f"  {what}: {ratio}x" for what, ratio in figures.get("precision_layout", {}).items()],
        f"model table (training images/s and peak memory at 224 px): "
        f"{_status(document['model_table_exit'])}",
        *document.get("model_table_text", "").splitlines(),
        f"total {document['seconds']} s",
        "README 'Verified on' row:",
        f"| {device['gpu']} | {device.get('driver')} | {device['torch']} | {images} | {peak} "
        f"| {batch} | {document['created'][:10]} |",
    ]
    return lines


def report(out_dir: Path, install_rc: int, tests_rc: int, bench_rc: int, seconds: int,
           table_rc: int = 0) -> int:
    device = json.loads((out_dir / "device.json").read_text())
    table_file, table_text = out_dir / "model-table.json", out_dir / "model-table.md"
    bench_file = out_dir / "bench.json"
    bench = json.loads(bench_file.read_text()) if bench_file.is_file() else {}
    document = {
        "created": _dt.datetime.now().isoformat(timespec="seconds"),
        "status": "no_cuda" if not device["cuda"] else
        "passed" if (tests_rc, bench_rc, table_rc) == (0, 0, 0) else "failed",
        "seconds": seconds, "device": device, "install_exit": install_rc,
        "tests_exit": tests_rc, "tests": test_counts(out_dir / "cuda-tests.xml"),
        "bench_exit": bench_rc, "figures": bench_figures(bench), "bench": bench,
        "model_table_exit": table_rc,
        "model_table": json.loads(table_file.read_text()) if table_file.is_file() else {},
        "model_table_text": table_text.read_text() if table_text.is_file() else "",
    }
    lines = summary_lines(document)
    (out_dir / "gpu-check.json").write_text(json.dumps(document, indent=2) + "\n")
    (out_dir / "gpu-check.txt").write_text("\n".join(lines) + "\n")
    (out_dir / "device.json").unlink()
    bench_file.unlink(missing_ok=True)  # it is inside gpu-check.json
    print("\n".join(lines))
    return 0 if document["status"] in ("passed", "no_cuda") else 1


if __name__ == "__main__":
    if sys.argv[1] == "device":
        Path(sys.argv[2]).write_text(json.dumps(describe_device(), indent=2))
        sys.exit(0)
    sys.exit(report(Path(sys.argv[2]), *(int(a) for a in sys.argv[3:8])))
