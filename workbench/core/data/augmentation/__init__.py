"""Training augmentations from ``torchvision.transforms.v2`` beyond the crop and the flip.

Colour jitter, rotation and the automatic policies change each training crop's pixels (uint8
in, uint8 out, each image with its own random draws, a whole batch at a time where the
operation allows); mixup and cutmix mix a prepared batch with itself and give soft targets.
"""
