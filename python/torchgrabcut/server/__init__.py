"""The interactive web page (`torchgrabcut serve`)."""
