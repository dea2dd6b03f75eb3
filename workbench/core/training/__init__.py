"""Training: ``engine.train`` runs a ``session`` (plan, then fit), with its steps, batch sources,
feature cache, optimisers and schedulers, precision, faults, the batch-size finder,
``torchrun`` support, the bottleneck verdict and smoothed metrics.
"""
