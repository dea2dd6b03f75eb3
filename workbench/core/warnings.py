"""Warnings raised by workbench itself (the test suite turns them into errors)."""


class WorkbenchWarning(UserWarning):
    """A problem workbench noticed and worked around."""


def quiet_covered_library_warnings() -> None:
    """Silence the library warnings that workbench's own messages already cover (call once,
    where a program starts: the command line and the app).

    Pillow's ``DecompressionBombWarning`` fires when a file is opened whose pixels exceed
    Pillow's limit; workbench refuses every such image itself, before decoding it, with the
    file and its size (``image too large to decode safely (WxH = N pixels; the limit is M)``),
    so the raw warning only repeats it without the file's name.
    """
    import warnings

    from PIL import Image

    warnings.filterwarnings("ignore", category=Image.DecompressionBombWarning)
