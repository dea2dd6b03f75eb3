"""The Qt-free engine, a library usable from a notebook.

Subpackages, each importing only those listed after it:

- ``training``: the engine and the training session, steps, precision, faults, torchrun.
- ``models``: building models, checkpoints, safe loading, export, prediction.
- ``data``: dataset scan, decoding, the image cache, transforms, crops, loader pipelines.
- ``devices``: which device a run uses, its memory and NVML figures.
- ``runs``: config, events, the run folder, following a run, atomic writes, control.

``units`` and ``warnings`` serve them all. Import submodules directly
(``from workbench.core.runs.config import TrainConfig``); this package imports nothing heavy so
that the GUI can show its window before torch loads.
"""
