"""The Qt-free engine: config, data, transforms, models, training, devices, export, runs.

Import submodules directly (``from workbench.core.config import TrainConfig``); this package
imports nothing heavy so that the GUI can show its window before torch loads.
"""
