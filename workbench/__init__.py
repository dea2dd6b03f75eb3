"""Workbench: fine-tune image classifiers on your own GPU, without writing a training loop."""

__version__ = "0.1.0"
