"""Models: building them (ResNet18, the small digits CNN) with their weights, the checkpoint
format, safe loading of ``.pt`` files, verified TorchScript export and prediction.
"""
