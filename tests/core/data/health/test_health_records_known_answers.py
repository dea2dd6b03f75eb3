"""Known answers of what a health check keeps on disk and shows: the findings and the report
(``findings.py``), the list of files left out (``exclusion_list.py``) and the cache of image
facts (``facts_cache.py``), with real files in tmp_path and the exact text a user reads."""

from __future__ import annotations

import json
import os

import pytest

from workbench.core.data.cache_folder import FACTS_FILE
from workbench.core.data.class_folders import SkippedFile
from workbench.core.data.dataset_scan import DatasetError
from workbench.core.data.health.exclusion_list import (
    ListedFile,
    read_exclusion_lines,
    unmatched_lines_message,
    write_exclusion_file,
)
from workbench.core.data.health.facts_cache import FactsCache
from workbench.core.data.health.findings import (
    Finding,
    FindingItem,
    HealthReport,
    report_from_dict,
    write_report,
)
from workbench.core.data.health.image_facts import ImageFacts

# findings.py

LEAKS = Finding("leakage", (FindingItem(("/d/train/a.png", "/d/val/a.png"), "the same pixels",
                                        ("/d/train/a.png",)),
                            FindingItem(("/d/train/b.png", "/d/val/b.png"), "the same pixels",
                                        ("/d/train/b.png", "/d/train/a.png"))))
BALANCE = Finding("imbalance", (), "balanced (1.0x between the largest and smallest class)")


def test_a_finding_names_its_title_count_and_the_files_to_leave_out_once():
    assert LEAKS.title == "Train/val leakage"
    assert LEAKS.explanation == ("The same image is in train and in val: validation accuracy "
                                 "is inflated.")
    assert LEAKS.count == 2
    assert LEAKS.leave_out() == ["/d/train/a.png", "/d/train/b.png"]
    assert BALANCE.count == 0 and BALANCE.leave_out() == []
    assert LEAKS.to_dict() == {
        "kind": "leakage", "title": "Train/val leakage",
        "explanation": "The same image is in train and in val: validation accuracy is inflated.",
        "count": 2, "verdict": "",
        "items": [{"files": ["/d/train/a.png", "/d/val/a.png"], "reason": "the same pixels",
                   "leave_out": ["/d/train/a.png"]},
                  {"files": ["/d/train/b.png", "/d/val/b.png"], "reason": "the same pixels",
                   "leave_out": ["/d/train/b.png", "/d/train/a.png"]}]}


def _report(root: str = "/d") -> HealthReport:
    return HealthReport(root, "train/val", 40, [BALANCE, LEAKS], seconds=1.23456, reused=7,
                        near_threshold=12)


def test_a_report_finds_its_findings_and_reads_back_what_it_wrote():
    report = _report()
    assert report.finding("leakage") is LEAKS
    assert report.finding("dark") is None
    assert report.problem_findings() == [LEAKS]
    data = report.to_dict()
    assert {k: v for k, v in data.items() if k != "findings"} == {
        "root": "/d", "layout": "train/val", "images": 40, "seconds": 1.235, "reused": 7,
        "near_duplicate_threshold_bits": 12}
    assert data["findings"] == [BALANCE.to_dict(), LEAKS.to_dict()]
    again = report_from_dict(json.loads(json.dumps(data)))
    assert again == HealthReport("/d", "train/val", 40, [BALANCE, LEAKS], 1.235, 7, 12)


def test_an_older_report_reads_with_defaults_and_unknown_kinds_are_dropped():
    data = {"root": "/d", "layout": "flat", "images": 3,
            "findings": [{"kind": "leakage", "items": [
                {"files": ["/d/a.png"], "reason": "r", "leave_out": []}]},
                {"kind": "retired_kind", "items": [], "verdict": "v"}]}
    assert report_from_dict(data) == HealthReport(
        "/d", "flat", 3, [Finding("leakage", (FindingItem(("/d/a.png",), "r", ()),), "")],
        0.0, 0, 0)


def test_the_report_is_written_as_indented_json_beside_the_folder(tmp_path, monkeypatch):
    root = tmp_path / "photos"
    root.mkdir()
    report = _report(str(root))
    monkeypatch.chdir(tmp_path)
    target = write_report(report, "out/health.json")
    assert target == tmp_path / "out" / "health.json"
    assert report.report_path == str(target)
    assert target.read_text() == json.dumps(report.to_dict(), indent=1) + "\n"
    # a folder whose name starts like the image folder's is not inside it
    assert write_report(report, tmp_path / "photos2" / "h.json").is_file()


def test_a_report_inside_the_folder_or_in_its_place_is_refused(tmp_path):
    root = tmp_path / "photos"
    (root / "cat").mkdir(parents=True)
    report = _report(str(root))
    for target in (root / "cat" / "health.json", root):
        with pytest.raises(ValueError) as refused:
            write_report(report, target)
        assert str(refused.value) == (
            f"{target}: inside the image folder {root}; the health check writes nothing "
            "there (choose the cache or output folder)")
    assert report.report_path == ""


# exclusion_list.py

def test_the_exclusion_file_is_sorted_relative_lines_under_its_header(tmp_path):
    root = tmp_path / "data"
    files = [str(root / "dog" / "b.png"), str(root / "cat" / "a.png"),
             str(tmp_path / "elsewhere" / "c.png"), str(root / "cat" / "a.png"),
             str(tmp_path / "data2" / "d.png")]
    target = write_exclusion_file(tmp_path / "cache" / "lists" / "exclude.txt", str(root),
                                  files, note="chosen in the health check")
    assert target == tmp_path / "cache" / "lists" / "exclude.txt"  # its folders made
    assert target.read_text(encoding="utf-8") == (
        f"# Files left out of training, relative to {root}\n"
        "# One path a line; a name with a newline, a byte that is not UTF-8 or a leading # or "
        '" is written as a JSON string ("...")\n'
        "# chosen in the health check\n"
        f"{tmp_path / 'data2' / 'd.png'}\n"  # outside the folder: absolute, sorted first
        f"{tmp_path / 'elsewhere' / 'c.png'}\n"
        "cat/a.png\n"
        "dog/b.png\n")
    no_note = write_exclusion_file(tmp_path / "plain.txt", str(root), [])
    assert no_note.read_text().count("\n") == 2


def test_an_exclusion_file_is_never_written_into_the_folder(tmp_path):
    root = tmp_path / "data"
    root.mkdir()
    with pytest.raises(ValueError, match="inside the image folder"):
        write_exclusion_file(root / "exclude.txt", str(root), [])
    assert not (root / "exclude.txt").exists()


def test_listed_lines_keep_their_numbers_and_normalise_their_paths(tmp_path):
    listed = tmp_path / "list.txt"
    listed.write_text("# comment\n\ncat/../dog/a.png\n  cat/b.png  \n#cat/c.png\n/abs//x.png\n")
    root = str(tmp_path / "data")
    assert read_exclusion_lines(listed, root) == [
        ListedFile(3, str(tmp_path / "data" / "dog" / "a.png")),
        ListedFile(4, str(tmp_path / "data" / "cat" / "b.png")),
        ListedFile(6, "/abs/x.png")]


def test_an_unreadable_list_names_itself_and_the_reason(tmp_path):
    with pytest.raises(DatasetError) as missing:
        read_exclusion_lines(tmp_path / "gone.txt", str(tmp_path))
    assert str(missing.value) == (f"{tmp_path / 'gone.txt'}: cannot read the exclusion list "
                                  "(No such file or directory)")
    with pytest.raises(DatasetError) as folder:
        unmatched_lines_message(str(tmp_path), str(tmp_path), [])
    assert str(folder.value) == f"{tmp_path}: cannot read the exclusion list (Is a directory)"


def test_lines_that_left_out_nothing_are_named_with_why(tmp_path):
    root = tmp_path / "data"
    listed = tmp_path / "list.txt"
    listed.write_text("cat/a.png\ncat/gone.png\ncat/broken.png\n")
    left_out = [str(root / "cat" / "a.png")]
    skipped = [SkippedFile(str(root / "cat" / "x" / ".." / "broken.png"), "cannot decode")]
    assert unmatched_lines_message(str(listed), str(root), left_out, skipped) == (
        f"{listed}: 2 lines matched no image of this folder: line 2 cat/gone.png (no such "
        "image); line 3 cat/broken.png (already skipped by the scan)")
    one = tmp_path / "one.txt"
    one.write_text("cat/a.png\ncat/gone.png\n")
    assert unmatched_lines_message(str(one), str(root), left_out) == (
        f"{one}: 1 line matched no image of this folder: line 2 cat/gone.png (no such image)")
    everything = tmp_path / "all.txt"
    everything.write_text("cat/a.png\n")
    assert unmatched_lines_message(str(everything), str(root), left_out) is None


def test_five_unmatched_lines_are_shown_and_the_rest_counted(tmp_path):
    root = str(tmp_path / "data")
    five, six = tmp_path / "five.txt", tmp_path / "six.txt"
    five.write_text("".join(f"g{i}.png\n" for i in range(5)))
    six.write_text("".join(f"g{i}.png\n" for i in range(6)))
    shown = "; ".join(f"line {i + 1} g{i}.png (no such image)" for i in range(5))
    assert unmatched_lines_message(str(five), root, []) == (
        f"{five}: 5 lines matched no image of this folder: {shown}")
    assert unmatched_lines_message(str(six), root, []) == (
        f"{six}: 6 lines matched no image of this folder: {shown}; and 1 more")


def test_a_name_that_is_not_text_is_shown_escaped(tmp_path):
    root = tmp_path / "data"
    listed = tmp_path / "list.txt"
    listed.write_bytes(b"cat/bad\xfe.png\n")
    assert unmatched_lines_message(str(listed), str(root), []) == (
        f"{listed}: 1 line matched no image of this folder: line 1 cat/bad\\xfe.png "
        "(no such image)")
    written = write_exclusion_file(tmp_path / "w.txt", str(root),
                                   [os.fsdecode(os.fsencode(root) + b"/cat/bad\xfe.png")],
                                   note="from a\nnote")
    lines = written.read_text(encoding="utf-8").split("\n")
    assert lines[2:4] == ["# from a\\nnote", '"cat/bad\\udcfe.png"']


# facts_cache.py

def _image(name: str, size: int = 100, mtime: int = 5) -> ImageFacts:
    return ImageFacts(f"/d/{name}.png", size, mtime, None, 64, 48, mean=12.5, phash="ab" * 8)


def test_facts_are_found_again_only_for_an_unchanged_file(tmp_path):
    cache = FactsCache(tmp_path / "health")
    assert cache.path == tmp_path / "health" / FACTS_FILE
    cache.save([_image("a"), _image("b", 200, 6)])
    again = FactsCache(tmp_path / "health")
    assert again.lookup("/d/a.png", 100, 5) == _image("a")
    assert again.lookup("/d/b.png", 200, 6) == _image("b", 200, 6)
    assert again.lookup("/d/a.png", 101, 5) is None  # another size
    assert again.lookup("/d/a.png", 100, 6) is None  # touched
    assert again.lookup("/d/c.png", 100, 5) is None
    data = json.loads(cache.path.read_text(encoding="utf-8"))
    assert data == {"version": 7, "files": [_image("a").to_dict(),
                                            _image("b", 200, 6).to_dict()]}


def test_saving_keeps_exactly_the_facts_given_and_rewrites_only_a_change(tmp_path):
    cache = FactsCache(tmp_path / "health")
    cache.save([_image("a"), _image("b")])
    os.utime(cache.path, ns=(1_000_000_000, 1_000_000_000))
    rescan = FactsCache(tmp_path / "health")
    rescan.save([_image("a"), _image("b")])  # the same facts: not written again
    assert cache.path.stat().st_mtime_ns == 1_000_000_000
    rescan.save([_image("a")])  # b is gone from the folder: forgotten
    assert FactsCache(tmp_path / "health").lookup("/d/b.png", 100, 5) is None
    assert FactsCache(tmp_path / "health").lookup("/d/a.png", 100, 5) == _image("a")
    cache.path.unlink()
    rescan.save([_image("a")])  # the same facts, but the file is gone: written again
    assert FactsCache(tmp_path / "health").lookup("/d/a.png", 100, 5) == _image("a")


@pytest.mark.parametrize("text", [
    "not json", '["a list"]', '{"version": 6, "files": [%s]}', '{"files": [%s]}',
    '{"version": 7}'])
def test_a_cache_of_another_version_or_unreadable_decodes_everything_again(tmp_path, text):
    path = tmp_path / FACTS_FILE
    path.write_text(text.replace("%s", json.dumps(_image("a").to_dict())), encoding="utf-8")
    assert FactsCache(tmp_path).lookup("/d/a.png", 100, 5) is None


def test_an_entry_of_another_shape_is_skipped_and_the_rest_kept(tmp_path):
    entries = [{"path": "/d/x.png", "unknown_field": 1}, _image("a").to_dict()]
    (tmp_path / FACTS_FILE).write_text(json.dumps({"version": 7, "files": entries}),
                                       encoding="utf-8")
    cache = FactsCache(tmp_path)
    assert cache.lookup("/d/a.png", 100, 5) == _image("a")
    assert cache.lookup("/d/x.png", 0, 0) is None
    # a name that is not ASCII is read as UTF-8
    (tmp_path / FACTS_FILE).write_bytes(json.dumps(
        {"version": 7, "files": [_image("ä").to_dict()]}, ensure_ascii=False).encode("utf-8"))
    assert FactsCache(tmp_path).lookup("/d/ä.png", 100, 5) == _image("ä")


def test_a_cache_that_saved_knows_what_it_holds(tmp_path):
    cache = FactsCache(tmp_path / "health")
    cache.save([_image("a")])
    assert cache.lookup("/d/a.png", 100, 5) == _image("a")
    os.utime(cache.path, ns=(1_000_000_000, 1_000_000_000))
    cache.save([_image("a")])  # the same facts again: nothing written
    assert cache.path.stat().st_mtime_ns == 1_000_000_000
