"""Benchmarks that train beside a plain pipeline written from torchvision's reference recipe."""
