"""Known answers of the odd-image findings, from facts written by hand: the robust z-score and
its 3.5 edge, the class that vouches for its own dark images, the one folder line when half the
folder is past a limit, each limit's edge and the exact words a user reads."""

from __future__ import annotations

import pytest

from workbench.core.data.health.findings import Finding, FindingItem
from workbench.core.data.health.image_facts import ImageFacts
from workbench.core.data.health.odd_images import (
    _robust_z,
    balance_finding,
    odd_image_findings,
)


def _facts(name: str, *, mean: float = 128.0, std: float = 40.0, sharpness: float = 1.0,
           width: int = 64, height: int = 64, grey: bool = False,
           error: str | None = None) -> ImageFacts:
    return ImageFacts(f"/data/{name}.png", 1, 1, error, width, height, grayscale=grey,
                      mean=mean, std=std, sharpness=sharpness)


def _normal(count: int, prefix: str = "n", **figures) -> list[ImageFacts]:
    """``count`` ordinary images, all with the same figures: the MAD is 0, so each rule's
    floor is the scale."""
    return [_facts(f"{prefix}{i:02d}", **figures) for i in range(count)]


def _kinds(findings: list[Finding]) -> dict[str, Finding]:
    return {f.kind: f for f in findings}


def _named(findings: list[Finding], kind: str) -> list[str]:
    found = _kinds(findings).get(kind)
    return [] if found is None else [item.files[0] for item in found.items]


def test_the_robust_z_score_by_hand():
    items = [_facts(str(v), mean=v) for v in (1.0, 2.0, 3.0, 4.0, 100.0)]
    # median 3; absolute deviations 2, 1, 0, 1, 97: MAD 1
    z = _robust_z(items, lambda f: f.mean, 0.0)
    assert z == pytest.approx({"/data/1.0.png": -2 * 0.6745, "/data/2.0.png": -0.6745,
                               "/data/3.0.png": 0.0, "/data/4.0.png": 0.6745,
                               "/data/100.0.png": 97 * 0.6745})
    # a floor above the MAD is the scale
    assert _robust_z(items, lambda f: f.mean, 2.0)["/data/100.0.png"] == pytest.approx(
        97 * 0.6745 / 2)
    # an even count: the median is the mean of the middle two (2.5), the MAD 1.5
    four = items[:4]
    assert _robust_z(four, lambda f: f.mean, 0.0)["/data/4.0.png"] == pytest.approx(
        1.5 * 0.6745 / 1.0)


def test_an_image_is_named_only_beyond_a_z_of_3_5():
    # 20 images of mean 70 (MAD 0, the dark floor 8 is the scale): z = 0.6745 (v - 70) / 8;
    # -3.5 lies at v = 28.49. Both candidates are below the limit of 30.
    beyond = odd_image_findings([*_normal(20, mean=70.0), _facts("dim", mean=28.4)])
    assert _named(beyond, "dark") == ["/data/dim.png"]  # z = -3.507
    within = odd_image_findings([*_normal(20, mean=70.0), _facts("dim", mean=28.6)])
    assert "dark" not in _kinds(within)  # z = -3.490: past the limit, but no outlier


def test_a_class_of_dark_images_vouches_for_its_own():
    # the night class: images of mean 35 and one of 25; the day class: 20 images of 130.
    # Against the folder the 25 is far out (z -8.9); against its class, with 10 or more
    # members, only -0.84: not named. With 9 members the class is too small to judge.
    day = _normal(20, "day")
    night = [_facts(f"night{i}", mean=35.0) for i in range(9)]
    dark = _facts("night_dark", mean=25.0)
    class_of = {f.path: "day" for f in day} | {f.path: "night" for f in [*night, dark]}
    assert "dark" not in _kinds(odd_image_findings([*day, *night, dark], class_of))
    small = night[:8]
    found = odd_image_findings([*day, *small, dark], class_of)
    assert _named(found, "dark") == [dark.path]
    # without classes the folder alone judges
    assert _named(odd_image_findings([*day, *night, dark]), "dark") == [dark.path]


def test_half_the_folder_past_a_limit_is_one_line_about_the_folder():
    half = odd_image_findings([*_normal(5), *(_facts(f"d{i}", mean=20.0) for i in range(5))])
    assert _kinds(half)["dark"] == Finding(
        "dark", (), "5 of 10 images are very dark (mean brightness below 30 of 255); that is "
                    "this folder's norm, so no image is named")
    # four of ten: each is named, with its figure
    fewer = odd_image_findings([*_normal(6), *(_facts(f"d{i}", mean=20.0) for i in range(4))])
    assert _kinds(fewer)["dark"] == Finding("dark", tuple(
        FindingItem((f"/data/d{i}.png",), "mean brightness 20 of 255 (below 30)",
                    (f"/data/d{i}.png",)) for i in range(4)))
    every = odd_image_findings([_facts(f"b{i}", mean=240.0) for i in range(3)])
    assert _kinds(every)["bright"].verdict == (
        "all 3 images are very bright (mean brightness above 225 of 255); that is this "
        "folder's norm, so no image is named")
    assert _kinds(every)["bright"].items == ()


def test_small_images_as_the_norm_name_their_size():
    same = odd_image_findings([_facts(f"s{i}", width=28, height=28) for i in range(4)])
    assert _kinds(same)["tiny"].verdict == "all 4 images are 28x28: they are upscaled to the crop"
    mixed = odd_image_findings([*_normal(4), *(_facts(f"s{i}", width=28, height=28)
                                               for i in range(3)),
                                *(_facts(f"t{i}", width=20, height=30) for i in range(2))])
    assert _kinds(mixed)["tiny"].verdict == (
        "5 of 9 images have a side below 32 px (3 are 28x28): they are upscaled to the crop")


def test_each_rule_names_its_image_with_its_figure():
    folder = [*_normal(20), _facts("dark", mean=20.0), _facts("bright", mean=240.0),
              _facts("blank", std=1.2), _facts("soft", sharpness=0.01),
              _facts("tiny", width=20, height=20)]
    found = odd_image_findings(folder)
    reasons = {f.kind: [(i.files, i.reason, i.leave_out) for i in f.items] for f in found}
    assert reasons == {
        "dark": [(("/data/dark.png",), "mean brightness 20 of 255 (below 30)",
                  ("/data/dark.png",))],
        "bright": [(("/data/bright.png",), "mean brightness 240 of 255 (above 225)",
                    ("/data/bright.png",))],
        "near_blank": [(("/data/blank.png",), "contrast 1.2 (below 3 of 255)",
                        ("/data/blank.png",))],
        "blurry": [(("/data/soft.png",), "sharpness 0.010 (below 0.08)", ("/data/soft.png",))],
        "tiny": [(("/data/tiny.png",), "20x20 pixels (a side below 32)", ("/data/tiny.png",))],
    }
    assert [f.kind for f in found] == ["dark", "bright", "near_blank", "blurry", "tiny"]


@pytest.mark.parametrize(("figures", "kind", "named"), [
    ({"mean": 30.0}, "dark", False), ({"mean": 29.9}, "dark", True),
    ({"mean": 225.0}, "bright", False), ({"mean": 225.1}, "bright", True),
    ({"std": 3.0}, "near_blank", False), ({"std": 2.9}, "near_blank", True),
    # a near-blank image is judged at the edges of the brightness limits too
    ({"std": 1.0, "mean": 30.0}, "near_blank", True),
    ({"std": 1.0, "mean": 225.0}, "near_blank", True),
    ({"std": 1.0, "mean": 29.9}, "near_blank", False),
    ({"std": 1.0, "mean": 225.1}, "near_blank", False),
    ({"sharpness": 0.08}, "blurry", False), ({"sharpness": 0.079}, "blurry", True),
    # a near-blank image is not also blurry
    ({"sharpness": 0.01, "std": 2.9}, "blurry", False),
    ({"width": 32, "height": 200}, "tiny", False), ({"width": 200, "height": 31}, "tiny", True),
])
def test_each_limit_is_an_edge(figures, kind, named):
    # against 20 ordinary images every candidate is far out (the floors are the scale)
    found = odd_image_findings([*_normal(20), _facts("odd", **figures)])
    assert _named(found, kind) == (["/data/odd.png"] if named else [])


def test_a_tiny_side_of_zero_pixels_is_measured_as_one():
    found = odd_image_findings([*_normal(20), _facts("empty", width=0, height=0)])
    assert _named(found, "tiny") == ["/data/empty.png"]


def test_extreme_aspect_from_four_to_one():
    found = odd_image_findings([*_normal(5), _facts("strip", width=200, height=50),
                                _facts("tall", width=50, height=199),
                                _facts("line", width=0, height=10)])
    assert _kinds(found)["extreme_aspect"] == Finding("extreme_aspect", (
        FindingItem(("/data/strip.png",), "200x50, sides 4.0:1", ("/data/strip.png",)),
        FindingItem(("/data/line.png",), "0x10, sides 10.0:1", ("/data/line.png",))))


def test_grey_images_are_named_up_to_a_tenth_and_the_folders_line_from_95_percent():
    two = odd_image_findings([*_normal(18), *(_facts(f"g{i}", grey=True) for i in range(2))])
    assert _kinds(two)["grayscale"] == Finding("grayscale", tuple(
        FindingItem((f"/data/g{i}.png",), "grey, while 90% of the images are colour",
                    (f"/data/g{i}.png",)) for i in range(2)))
    three = odd_image_findings([*_normal(17), *(_facts(f"g{i}", grey=True) for i in range(3))])
    assert "grayscale" not in _kinds(three)
    most = odd_image_findings([*_normal(1), *(_facts(f"g{i}", grey=True) for i in range(19))])
    assert _kinds(most)["grayscale"] == Finding(
        "grayscale", (), "19 of 20 images are grey: a model trained here learns shapes and "
                         "brightness, not colour")
    assert "grayscale" not in _kinds(odd_image_findings(
        [*_normal(2), *(_facts(f"g{i}", grey=True) for i in range(18))]))
    every = odd_image_findings([_facts(f"g{i}", grey=True) for i in range(4)])
    assert _kinds(every)["grayscale"].verdict.startswith("all 4 images are grey: ")
    # a blank grey image is near-blank, not grey
    blank = odd_image_findings([*_normal(20), _facts("g", grey=True, std=1.0)])
    assert "grayscale" not in _kinds(blank)


def test_unreadable_files_are_left_to_their_own_finding():
    assert odd_image_findings([_facts("a", error="truncated"), _facts("b", error="x")]) == []
    found = odd_image_findings([*_normal(20), _facts("broken", mean=0.0, error="truncated")])
    assert found == []


def test_the_balance_verdict_at_each_ratio():
    assert balance_finding([], []) == Finding("imbalance", (), "no classes")
    assert balance_finding(["cat", "dog", "owl"], [10, 30, 10]).verdict == (
        "imbalanced, 3.0x (dog has 30 training images, cat 10): use a class-weighted loss or "
        "a weighted sampler (setting 'imbalance')")
    assert balance_finding(["cat", "dog"], [1200, 800]).verdict == (
        "mildly imbalanced, 1.5x (cat has 1,200 training images, dog 800): usually fine")
    assert balance_finding(["cat", "dog"], [1400, 1000]).verdict == (
        "balanced (1.4x between the largest and smallest class)")
    assert balance_finding(["cat", "dog"], [29, 10]).verdict.startswith("mildly imbalanced, 2.9x")
    assert balance_finding(["cat", "dog"], [5, 0]).verdict == (
        "a class has no training images (cat has 5 training images, dog 0)")
    assert balance_finding(["cat", "dog"], [0, 0]).verdict.startswith(
        "a class has no training images")


# The mean at which 0.6745 (v - 70) / 8 is exactly -3.5 in floating point (found by stepping
# one unit in the last place at a time from 70 - 3.5 x 8 / 0.6745).
EXACT_EDGE = 28.487768717568567


def test_a_z_score_of_exactly_3_5_is_not_beyond_it():
    assert _robust_z([*_normal(20, mean=70.0), _facts("dim", mean=EXACT_EDGE)],
                     lambda f: f.mean, 8.0)["/data/dim.png"] == -3.5
    found = odd_image_findings([*_normal(20, mean=70.0), _facts("dim", mean=EXACT_EDGE)])
    assert "dark" not in _kinds(found)
    # far out in the folder (z -8.6), exactly -3.5 in its class of 10: not named
    day = _normal(20, "day", mean=130.0)
    night = [_facts(f"night{i}", mean=70.0) for i in range(9)]
    dim = _facts("dim", mean=EXACT_EDGE)
    class_of = {f.path: "day" for f in day} | {f.path: "night" for f in [*night, dim]}
    assert "dark" not in _kinds(odd_image_findings([*day, *night, dim], class_of))
    # exactly -3.5 in the folder (30 of its 40 images at 70), far out in its class of 10
    # (nine at 100: z -6.0): not named either
    usual = [_facts(f"usual{i}", mean=70.0) for i in range(30)]
    lit = [_facts(f"lit{i}", mean=100.0) for i in range(9)]
    class_of = {f.path: "usual" for f in usual} | {f.path: "lit" for f in [*lit, dim]}
    assert _robust_z([*usual, *lit, dim], lambda f: f.mean, 8.0)[dim.path] == -3.5
    assert "dark" not in _kinds(odd_image_findings([*usual, *lit, dim], class_of))


def test_a_bright_image_just_inside_the_z_edge_is_not_named():
    # 20 images of mean 190: z = 0.6745 (v - 190) / 8 is 3.49 at 231.4, 3.51 at 231.6
    assert "bright" not in _kinds(odd_image_findings([*_normal(20, mean=190.0),
                                                       _facts("glare", mean=231.4)]))
    assert _named(odd_image_findings([*_normal(20, mean=190.0), _facts("glare", mean=231.6)]),
                  "bright") == ["/data/glare.png"]


def test_a_class_of_one_image_counts_as_one():
    assert balance_finding(["cat", "dog"], [3, 1]).verdict == (
        "imbalanced, 3.0x (cat has 3 training images, dog 1): use a class-weighted loss or a "
        "weighted sampler (setting 'imbalance')")
