"""The Preview tab: augmentations exactly as the model sees them."""
