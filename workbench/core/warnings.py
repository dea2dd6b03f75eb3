"""Warnings raised by workbench itself (the test suite turns them into errors)."""


class WorkbenchWarning(UserWarning):
    """A problem workbench noticed and worked around."""
