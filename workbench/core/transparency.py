"""Where an image is transparent, what shows through: one mid grey, in every view.

Training, the preview, thumbnails, prediction, Grad-CAM, the health check and the run report
all fill transparent pixels through ``composite_transparency``, so a drawing on a transparent
page looks the same wherever it is shown and is what the model was trained on. The grey is
close to the mean of ImageNet photos, so a transparent page neither brightens nor darkens the
normalised input much. Only Pillow is imported: the report and the thumbnail threads use this
without torch.
"""

from __future__ import annotations

from PIL import Image

# Transparent pixels become this colour.
TRANSPARENT_BACKGROUND = (128, 128, 128)
_ALPHA_MODES = ("RGBA", "LA", "PA", "RGBa", "La")


def has_transparency(image: Image.Image) -> bool:
    """An alpha channel, or a palette or colour-key transparency (``info['transparency']``)."""
    return image.mode in _ALPHA_MODES or "transparency" in image.info


def composite_transparency(image: Image.Image) -> Image.Image:
    """``image`` over ``TRANSPARENT_BACKGROUND`` as an RGB image; an image without
    transparency is returned as it is (in its own mode).

    Palette transparency given as bytes (one alpha a palette entry) goes through RGBA, the
    conversion Pillow asks for, rather than the RGB one that drops it with a warning.
    """
    if not has_transparency(image):
        return image
    rgba = image.convert("RGBA")
    background = Image.new("RGBA", rgba.size, (*TRANSPARENT_BACKGROUND, 255))
    return Image.alpha_composite(background, rgba).convert("RGB")
