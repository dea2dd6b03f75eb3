"""Images that decode but are odd for their folder: near-blank, very dark or bright, blurry,
tiny, extremely elongated, grey in a colour dataset; and how the classes are balanced, in plain
words.

"Odd" is relative. An image is named when its figure is an outlier of the folder's own
distribution (robust z-score of Iglewicz and Hoaglin, on the median and the median absolute
deviation, beyond ``OUTLIER_Z``) and of its class's (when the class has ``MIN_CLASS`` images),
and also past a fixed plausibility limit (a picture with mean brightness 120 is never "very
dark", however bright the others are). When half the folder or more is past the limit (every
image 28x28, every scan soft), that is the folder's norm: one line about the folder, no image
named.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence

import numpy as np

from workbench.core.data.health.findings import Finding, FindingItem
from workbench.core.data.health.image_facts import ImageFacts

# Plausibility limits: past them an image may be called odd, if it is also an outlier.
# Luminance standard deviation (0..255) below which an image is one colour and some noise.
NEAR_BLANK_STD = 3.0
# Mean luminance below / above which an image is very dark / very bright.
DARK_MEAN = 30.0
BRIGHT_MEAN = 225.0
# Laplacian variance over luminance variance, measured at 64 px: generated scenes score
# 0.3..15, the same under a Gaussian blur of a twentieth of their size below 0.05.
BLURRY_SHARPNESS = 0.08
# A shorter side below this many pixels is tiny.
TINY_SIDE = 32
# Sides differing this many times or more.
EXTREME_ASPECT = 4.0
# Grey images are odd when at most this share of a dataset is grey.
GREYSCALE_MINORITY = 0.1
# Grey share from which the folder gets one line (a mix of grey and colour gets none).
GREY_FOLDER_SHARE = 0.95
# Largest over smallest class at which the balance verdict says "imbalanced".
IMBALANCED_RATIO = 3.0
# Robust z-score beyond which a figure is an outlier (Iglewicz and Hoaglin's 3.5).
OUTLIER_Z = 3.5
# Classes with fewer images are judged against the folder only.
MIN_CLASS = 10
# Share of the folder past a limit from which that is one line about the folder.
FOLDER_NORM_SHARE = 0.5


class _Rule:
    """One kind of oddness: the figure (on a scale where outliers are symmetric), which side
    is odd, the MAD floor on that scale, the plausibility limit and the words."""

    def __init__(self, kind: str, figure: Callable[[ImageFacts], float], low: bool,
                 floor: float, past_limit: Callable[[ImageFacts], bool],
                 reason: Callable[[ImageFacts], str], norm: str) -> None:
        self.kind, self.figure, self.low, self.floor = kind, figure, low, floor
        self.past_limit, self.reason, self.norm = past_limit, reason, norm


def _short_side(item: ImageFacts) -> int:
    return min(item.width, item.height)


def _blank(item: ImageFacts) -> bool:
    return item.std < NEAR_BLANK_STD


_RULES = (
    _Rule("dark", lambda f: f.mean, True, 8.0,
          lambda f: f.mean < DARK_MEAN,
          lambda f: f"mean brightness {f.mean:.0f} of 255 (below {DARK_MEAN:g})",
          f"very dark (mean brightness below {DARK_MEAN:g} of 255)"),
    _Rule("bright", lambda f: f.mean, False, 8.0,
          lambda f: f.mean > BRIGHT_MEAN,
          lambda f: f"mean brightness {f.mean:.0f} of 255 (above {BRIGHT_MEAN:g})",
          f"very bright (mean brightness above {BRIGHT_MEAN:g} of 255)"),
    _Rule("near_blank", lambda f: math.log1p(f.std), True, 0.1,
          lambda f: _blank(f) and DARK_MEAN <= f.mean <= BRIGHT_MEAN,
          lambda f: f"contrast {f.std:.1f} (below {NEAR_BLANK_STD:g} of 255)",
          f"near-blank (contrast below {NEAR_BLANK_STD:g} of 255)"),
    _Rule("blurry", lambda f: math.log(f.sharpness + 1e-3), True, 0.1,
          lambda f: not _blank(f) and f.sharpness < BLURRY_SHARPNESS,
          lambda f: f"sharpness {f.sharpness:.3f} (below {BLURRY_SHARPNESS:g})",
          f"soft, with little fine detail (sharpness below {BLURRY_SHARPNESS:g}): usual for "
          "scans and upscaled pictures"),
    _Rule("tiny", lambda f: math.log(max(1, _short_side(f))), True, 0.1,
          lambda f: _short_side(f) < TINY_SIDE,
          lambda f: f"{f.width}x{f.height} pixels (a side below {TINY_SIDE})",
          f"small (a side below {TINY_SIDE} px): they are upscaled to the crop"),
)


def odd_image_findings(facts: Sequence[ImageFacts],
                       class_of: Mapping[str, str] | None = None) -> list[Finding]:
    """One finding a kind of oddness, with the measured figure as the reason; a kind that is
    the folder's norm is one finding with no items and a ``verdict`` line about the folder.
    ``class_of`` maps a path to its class (outliers are judged within the class too)."""
    readable = [f for f in facts if f.error is None]
    if not readable:
        return []
    classes = class_of or {}
    found = [_rule_finding(rule, readable, classes) for rule in _RULES]
    found.append(_aspect_finding(readable))
    found.append(_grey_finding(readable))
    return [f for f in found if f is not None and (f.items or f.verdict)]


def _rule_finding(rule: _Rule, readable: list[ImageFacts], class_of: Mapping[str, str]
                  ) -> Finding | None:
    past = [f for f in readable if rule.past_limit(f)]
    if not past:
        return None
    if len(past) >= FOLDER_NORM_SHARE * len(readable):
        return Finding(rule.kind, (), _norm_line(rule, past, readable))
    folder_z = _robust_z(readable, rule.figure, rule.floor)
    by_class: dict[str, list[ImageFacts]] = defaultdict(list)
    for item in readable:
        by_class[class_of.get(item.path, "")].append(item)
    class_z: dict[str, float] = {}
    for members in by_class.values():
        if len(members) >= MIN_CLASS:
            class_z.update(_robust_z(members, rule.figure, rule.floor))
    sign = -1.0 if rule.low else 1.0
    items = tuple(FindingItem((f.path,), rule.reason(f), (f.path,)) for f in past
                  if sign * folder_z[f.path] > OUTLIER_Z
                  and sign * class_z.get(f.path, folder_z[f.path]) > OUTLIER_Z)
    return Finding(rule.kind, items)


def _robust_z(items: Sequence[ImageFacts], figure: Callable[[ImageFacts], float],
              floor: float) -> dict[str, float]:
    """0.6745 (x - median) / MAD of ``figure`` over ``items``; the MAD is at least ``floor``
    (a folder of images all 64x64 has a MAD of 0, and a 20x20 one is then far out)."""
    values = np.array([figure(f) for f in items], dtype=np.float64)
    median = float(np.median(values))
    mad = max(float(np.median(np.abs(values - median))), floor)
    return {f.path: 0.6745 * (v - median) / mad for f, v in zip(items, values, strict=True)}


def _norm_line(rule: _Rule, past: list[ImageFacts], readable: list[ImageFacts]) -> str:
    share = "all" if len(past) == len(readable) else f"{len(past):,} of"
    if rule.kind == "tiny":
        sizes = Counter((f.width, f.height) for f in past)
        (width, height), count = sizes.most_common(1)[0]
        if len(sizes) == 1:
            return (f"{share} {len(readable):,} images are {width}x{height}: they are "
                    "upscaled to the crop")
        return (f"{share} {len(readable):,} images have a side below {TINY_SIDE} px "
                f"({count:,} are {width}x{height}): they are upscaled to the crop")
    return (f"{share} {len(readable):,} images are {rule.norm}; that is this folder's norm, so "
            "no image is named")


def _aspect_finding(readable: list[ImageFacts]) -> Finding | None:
    items = []
    for item in readable:
        ratio = max(item.width, item.height) / max(1, _short_side(item))
        if ratio >= EXTREME_ASPECT:
            items.append(FindingItem((item.path,), f"{item.width}x{item.height}, sides "
                                     f"{ratio:.1f}:1", (item.path,)))
    return Finding("extreme_aspect", tuple(items)) if items else None


def _grey_finding(readable: list[ImageFacts]) -> Finding | None:
    grey = [f for f in readable if f.grayscale and not _blank(f)]
    share = len(grey) / len(readable)
    if not grey:
        return None
    if share >= GREY_FOLDER_SHARE:
        count = "all" if len(grey) == len(readable) else f"{len(grey):,} of"
        return Finding("grayscale", (), f"{count} {len(readable):,} images are grey: a model "
                       "trained here learns shapes and brightness, not colour")
    if share > GREYSCALE_MINORITY:
        return None
    return Finding("grayscale", tuple(
        FindingItem((f.path,), f"grey, while {1 - share:.0%} of the images are colour",
                    (f.path,)) for f in grey))


def balance_finding(class_names: Sequence[str], counts: Sequence[int]) -> Finding:
    """The class balance as a verdict; its one item names the largest and smallest class."""
    if not counts:
        return Finding("imbalance", (), "no classes")
    largest = max(range(len(counts)), key=counts.__getitem__)
    smallest = min(range(len(counts)), key=counts.__getitem__)
    ratio = counts[largest] / max(1, counts[smallest])
    shown = (f"{class_names[largest]} has {counts[largest]:,} training images, "
             f"{class_names[smallest]} {counts[smallest]:,}")
    if counts[smallest] == 0:
        verdict = f"a class has no training images ({shown})"
    elif ratio >= IMBALANCED_RATIO:
        verdict = (f"imbalanced, {ratio:.1f}x ({shown}): use a class-weighted loss or a "
                   "weighted sampler (setting 'imbalance')")
    elif ratio >= 1.5:
        verdict = f"mildly imbalanced, {ratio:.1f}x ({shown}): usually fine"
    else:
        verdict = f"balanced ({ratio:.1f}x between the largest and smallest class)"
    return Finding("imbalance", (), verdict)
