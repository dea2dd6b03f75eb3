"""Crops of a whole uint8 image batch at once, on whatever device the batch lives on.

One implementation of the random resized crop (torchvision's ``RandomResizedCrop`` box draws,
antialiased bilinear or bicubic resampling, then the horizontal flip) serves three callers:
the loader processes (one image at a time), the images kept on the device (a whole batch per
step) and the preview. The same draws give the same pixels in all three, because each output
pixel is summed from the few source pixels it reads, in a fixed order, with element-wise
operations only: a pixel never depends on the batch it was cropped in. Against torchvision's
uint8 resize of the same box the result is within one grey level (torchvision rounds a
fixed-point intermediate; bicubic rounds and clamps its first pass, the columns, to whole
grey levels as torch does).

Center, five and ten crops are plain slices and equal torchvision's exactly.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import torch

DEFAULT_SCALE = (0.08, 1.0)
DEFAULT_RATIO = (3.0 / 4.0, 4.0 / 3.0)
# torchvision tries this many random boxes before it falls back to a central one.
BOX_ATTEMPTS = 10
# Source pixels resampled together at most (32 images of 256x256): bounds the float
# intermediates, a few times that many floats, when large images are cropped on a small GPU.
RESAMPLE_CHUNK_PIXELS = 32 * 256 * 256
# On the CPU, images of more pixels than this are cheaper one at a time, each cut to its box
# first (measured: 128x128 takes 12 ms per 32 alone against 23 ms together); smaller ones, and
# any on a GPU, are cheaper together. The pixels are the same either way.
CPU_TOGETHER_MAX_PIXELS = 64 * 64


@dataclass(frozen=True)
class CropDraws:
    """One random box (in source pixels) and flip per image: int64/bool tensors ``[B]``."""

    top: torch.Tensor
    left: torch.Tensor
    height: torch.Tensor
    width: torch.Tensor
    flip: torch.Tensor

    def part(self, start: int, stop: int) -> CropDraws:
        """The draws of images ``start`` to ``stop - 1``."""
        return CropDraws(self.top[start:stop], self.left[start:stop], self.height[start:stop],
                         self.width[start:stop], self.flip[start:stop])

    def box(self, index: int) -> tuple[int, int, int, int]:
        """(left, top, width, height) of image ``index``."""
        return (int(self.left[index]), int(self.top[index]), int(self.width[index]),
                int(self.height[index]))


def draw_resized_crops(
    count: int,
    height: int,
    width: int,
    scale: tuple[float, float] = DEFAULT_SCALE,
    ratio: tuple[float, float] = DEFAULT_RATIO,
    flip_probability: float = 0.5,
    generator: torch.Generator | None = None,
) -> CropDraws:
    """Draw ``count`` boxes of an ``height`` x ``width`` image as ``RandomResizedCrop`` does.

    Each box covers a random fraction of the area (``scale``) at a random aspect ratio
    (log-uniform in ``ratio``); up to ten tries per image, then the largest central box with
    an allowed aspect ratio. Draws come from ``generator`` (the process-wide generator when
    None), on the CPU, in one call.
    """
    tries = BOX_ATTEMPTS
    uniform = torch.rand((count, 2 * tries + 3), dtype=torch.float64, generator=generator)
    log_low, log_high = math.log(ratio[0]), math.log(ratio[1])
    areas = (height * width) * (scale[0] + (scale[1] - scale[0]) * uniform[:, :tries])
    aspects = torch.exp(log_low + (log_high - log_low) * uniform[:, tries:2 * tries])
    widths = torch.round(torch.sqrt(areas * aspects)).long()
    heights = torch.round(torch.sqrt(areas / aspects)).long()
    fits = (widths > 0) & (widths <= width) & (heights > 0) & (heights <= height)
    first = fits.long().argmax(dim=1, keepdim=True)  # the first try that fits
    found = fits.any(dim=1)
    fallback_w, fallback_h = _central_box(height, width, ratio)
    box_w = torch.where(found, widths.gather(1, first).squeeze(1), fallback_w)
    box_h = torch.where(found, heights.gather(1, first).squeeze(1), fallback_h)
    # A uniform integer in [0, room]; the fallback box is centred.
    top = torch.where(found, (uniform[:, -3] * (height - box_h + 1)).long(), (height - box_h) // 2)
    left = torch.where(found, (uniform[:, -2] * (width - box_w + 1)).long(), (width - box_w) // 2)
    flip = uniform[:, -1] < flip_probability
    return CropDraws(top, left, box_h, box_w, flip)


def resized_crops(images: torch.Tensor, draws: CropDraws, size: int,
                  interpolation: str = "bilinear") -> torch.Tensor:
    """Crop each image of ``images`` (uint8 ``[B,C,H,W]``) to its box, resize it to
    ``size`` x ``size`` with antialiased ``interpolation`` ('bilinear' or 'bicubic', PyTorch's
    antialias filters), and flip it if drawn so.

    Returns uint8 ``[B,C,size,size]`` on the images' device.
    """
    if interpolation not in _FILTER_RADIUS:
        raise ValueError(f"interpolation: '{interpolation}' is not bilinear or bicubic")
    if images.dtype != torch.uint8 or images.dim() != 4:
        raise TypeError(
            f"expected uint8 images [B,C,H,W], got {images.dtype} {tuple(images.shape)}")
    count, height, width = images.shape[0], images.shape[-2], images.shape[-1]
    if count > 1 and images.device.type == "cpu" and height * width > CPU_TOGETHER_MAX_PIXELS:
        return torch.stack([resized_crops(images[index:index + 1], draws.part(index, index + 1),
                                          size, interpolation)[0] for index in range(count)])
    chunk = max(1, RESAMPLE_CHUNK_PIXELS // (height * width))
    if count > chunk:
        return torch.cat([resized_crops(images[start:start + chunk],
                                        draws.part(start, start + chunk), size, interpolation)
                          for start in range(0, count, chunk)])
    device = images.device
    if count == 1:
        # One image: work on its box only, with the taps of its box's size computed once per
        # size (the same pixels and weights as in a batch, for far less work).
        left, top, box_width, box_height = draws.box(0)
        images = images[:, :, top:top + box_height, left:left + box_width]
        rows_index, rows_weight = (t.to(device) for t in _span_taps(box_height, size,
                                                                    interpolation))
        cols_index, cols_weight = (t.to(device) for t in _span_taps(box_width, size,
                                                                    interpolation))
        if bool(draws.flip[0]):
            cols_index, cols_weight = cols_index.flip(1), cols_weight.flip(1)
        if interpolation == "bicubic":  # columns first, in whole grey levels between
            pixels = _to_grey_levels(_resample_one(images.float(), 3, cols_index[0],
                                                   cols_weight[0]))
            pixels = _resample_one(pixels, 2, rows_index[0], rows_weight[0])
        else:
            pixels = _resample_one(images.float(), 2, rows_index[0], rows_weight[0])
            pixels = _resample_one(pixels, 3, cols_index[0], cols_weight[0])
        return pixels.round_().clamp_(0, 255).to(torch.uint8).contiguous()
    else:
        no_flip = torch.zeros_like(draws.flip, device=device)
        rows_index, rows_weight = _taps(draws.top.to(device), draws.height.to(device), size,
                                        no_flip, interpolation)
        cols_index, cols_weight = _taps(draws.left.to(device), draws.width.to(device), size,
                                        draws.flip.to(device), interpolation)
    if interpolation == "bicubic":  # columns first, in whole grey levels between
        pixels = _resample(images.float().transpose(2, 3), cols_index, cols_weight)
        pixels = _to_grey_levels(pixels.transpose(2, 3))  # [B,C,H,size]
        pixels = _resample(pixels, rows_index, rows_weight)
    else:
        pixels = _resample(images.float(), rows_index, rows_weight)  # [B,C,size,W]
        pixels = _resample(pixels.transpose(2, 3), cols_index, cols_weight).transpose(2, 3)
    return pixels.round_().clamp_(0, 255).to(torch.uint8).contiguous()


def _to_grey_levels(pixels: torch.Tensor) -> torch.Tensor:
    """Round and clamp to 0..255 between the two passes, as torch's uint8 bicubic kernel (and
    Pillow) keep the first pass in uint8: the cubic's overshoot is cut there, not carried."""
    return pixels.round_().clamp_(0, 255)


def center_crops(images: torch.Tensor, size: int) -> torch.Tensor:
    """The central ``size`` x ``size`` crop of every image of a ``[B,C,H,W]`` batch."""
    height, width = images.shape[-2:]
    top, left = _centered(height, size), _centered(width, size)
    return images[..., top:top + size, left:left + size].contiguous()


def multi_crops(images: torch.Tensor, size: int, mode: str) -> torch.Tensor:
    """Five crops (four corners, center) of every image, or ten with the mirrored five:
    ``[B,C,H,W]`` -> ``[B,K,C,size,size]``, the order of torchvision's FiveCrop/TenCrop."""
    if mode not in ("five_crop", "ten_crop"):
        raise ValueError(f"crop_mode: '{mode}' is not five_crop or ten_crop")
    height, width = images.shape[-2:]
    boxes = multi_crop_boxes(width, height, size, mode)
    crops = [images[..., top:top + h, left:left + w] for left, top, w, h in boxes]
    crops[5:] = [crop.flip(-1) for crop in crops[5:]]  # ten-crop: the mirrored five
    return torch.stack(crops, dim=1)


def multi_crop_boxes(
    width: int, height: int, crop_size: int, crop_mode: str
) -> list[tuple[int, int, int, int]]:
    """(left, top, width, height) of each five/ten crop in image coordinates, in output order.

    The second half of a ten-crop comes from the mirrored image, so its first crop (top-left
    of the mirror) shows the original's top-right corner.
    """
    if crop_size > width or crop_size > height:
        raise ValueError(f"crop {crop_size} does not fit in a {width}x{height} image")
    right, bottom = width - crop_size, height - crop_size
    center = (_centered(width, crop_size), _centered(height, crop_size))
    corners = [(0, 0), (right, 0), (0, bottom), (right, bottom), center]
    boxes = [(left, top, crop_size, crop_size) for left, top in corners]
    if crop_mode == "ten_crop":
        boxes += [(width - left - crop_size, top, crop_size, crop_size) for left, top in corners]
    return boxes


@functools.lru_cache(maxsize=4096)
def _span_taps(length: int, out: int, interpolation: str = "bilinear"
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """``_taps`` of one unflipped span ``[0, length)`` on the CPU, ``[1,out,T]`` each."""
    return _taps(torch.zeros(1, dtype=torch.long), torch.tensor([length]), out,
                 torch.zeros(1, dtype=torch.bool), interpolation)


# Each filter's reach in source pixels at scale 1: the triangle's 1, the cubic's 2.
_FILTER_RADIUS = {"bilinear": 1.0, "bicubic": 2.0}
# PyTorch's antialiased bicubic uses Keys' cubic with a = -0.5 (Pillow's), not -0.75.
_CUBIC_A = -0.5


def _filter(distance: torch.Tensor, interpolation: str) -> torch.Tensor:
    """The resampling filter at ``distance`` (in filter units): triangle or Keys' cubic."""
    x = distance.abs()
    if interpolation == "bilinear":
        return (1.0 - x).clamp(min=0.0)
    a = _CUBIC_A
    near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
    far = (((x - 5.0) * x + 8.0) * x - 4.0) * a
    return torch.where(x < 1.0, near, torch.where(x < 2.0, far, torch.zeros_like(x)))


def _taps(
    start: torch.Tensor, length: torch.Tensor, out: int, flip: torch.Tensor,
    interpolation: str = "bilinear",
) -> tuple[torch.Tensor, torch.Tensor]:
    """Source indices and weights ``[B,out,T]`` of antialiased bilinear or bicubic resampling
    of the span ``[start, start+length)`` to ``out`` pixels (PyTorch's antialias weights).

    Downscaling widens the filter by the scale; every output pixel's weights sum to 1. Unused
    taps have weight 0 and repeat the first index.
    """
    device = start.device
    scale = length.double() / out
    shrinking = scale >= 1.0
    radius = _FILTER_RADIUS[interpolation]
    support = radius * torch.where(shrinking, scale, torch.ones_like(scale))
    inverse = torch.where(shrinking, 1.0 / scale, torch.ones_like(scale))
    center = scale[:, None] * (torch.arange(out, dtype=torch.float64, device=device) + 0.5)
    first = (center - support[:, None] + 0.5).floor().clamp(min=0)
    end = torch.minimum((center + support[:, None] + 0.5).floor(), length[:, None].double())
    count = int((end - first).max())
    position = first[..., None] + torch.arange(count, dtype=torch.float64, device=device)
    inside = position < end[..., None]
    weight = _filter((position - center[..., None] + 0.5) * inverse[:, None, None],
                     interpolation)
    weight = torch.where(inside, weight, torch.zeros_like(weight))
    total = weight[..., 0].clone()
    for tap in range(1, count):  # in tap order, so unused taps (zeros) change nothing
        total += weight[..., tap]
    weight = weight / total[..., None]
    index = start[:, None, None] + torch.where(inside, position, first[..., None]).long()
    flip = flip[:, None, None]
    index = torch.where(flip, index.flip(1), index)
    weight = torch.where(flip, weight.flip(1), weight)
    return index, weight.float()


def _resample(pixels: torch.Tensor, index: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """Resample dim 2 of float ``[B,C,H,W]`` with ``[B,out,T]`` taps -> ``[B,C,out,W]``.

    Separate multiplies and adds (no fused or blocked reductions) keep every pixel's value
    independent of the batch size and of where it falls in memory.
    """
    batch, channels, _, width = pixels.shape
    out = index.shape[1]
    result: torch.Tensor | None = None
    for tap in range(index.shape[2]):
        rows = index[:, :, tap][:, None, :, None].expand(batch, channels, out, width)
        term = torch.gather(pixels, 2, rows) * weight[:, :, tap][:, None, :, None]
        result = term if result is None else result + term
    assert result is not None
    return result


def _resample_one(pixels: torch.Tensor, dim: int, index: torch.Tensor, weight: torch.Tensor
                  ) -> torch.Tensor:
    """``_resample`` of one image along ``dim`` (2: rows, 3: columns) with ``[out,T]`` taps.

    The same products summed in the same order as ``_resample``, hence the same pixels, but
    with ``index_select`` of whole rows or columns: several times faster than a gather.
    """
    shape = [1, 1, 1, 1]
    shape[dim] = index.shape[0]
    result: torch.Tensor | None = None
    for tap in range(index.shape[1]):
        term = pixels.index_select(dim, index[:, tap]).mul_(weight[:, tap].view(shape))
        result = term if result is None else result.add_(term)
    assert result is not None
    return result


def _central_box(height: int, width: int, ratio: tuple[float, float]) -> tuple[int, int]:
    """(width, height) of torchvision's fallback box: the whole image, trimmed to ``ratio``."""
    in_ratio = width / height
    if in_ratio < min(ratio):
        return width, int(round(width / min(ratio)))
    if in_ratio > max(ratio):
        return int(round(height * max(ratio))), height
    return width, height


def _centered(length: int, size: int) -> int:
    return int(round((length - size) / 2.0))
