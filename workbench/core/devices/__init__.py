"""Devices: which exist and which one a run uses (``selection``), their memory (``memory``) and
live NVML figures (``gpu_monitor``). CUDA-only figures are None elsewhere, never a crash.
"""
