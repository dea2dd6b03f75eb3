"""The Results tab's parts: per-class figures, image galleries of the predictions, Grad-CAM."""
