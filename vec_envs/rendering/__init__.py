"""Rendering: tile_images and the OpenCV window."""
