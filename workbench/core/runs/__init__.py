"""A run's record: its config (``TrainConfig``), the events the engine reports, the run folder
(``config.json``, ``metrics.jsonl``), following a run written elsewhere, atomic writes, and the
cancel/pause control. Imports nothing else of ``workbench.core`` but ``units`` and ``warnings``.
"""
