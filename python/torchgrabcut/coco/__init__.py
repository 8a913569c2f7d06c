"""Box-to-mask for a COCO-format dataset (the `torchgrabcut dataset` job)."""
