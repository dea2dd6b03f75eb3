"""From image files to batches: scanning a folder, decoding safely, the resized-image cache,
transforms and (batched) crops, multi-crop flattening, the loader pipeline, images kept on the
device, the five-crop preview and generated (demo and synthetic) images.
"""
