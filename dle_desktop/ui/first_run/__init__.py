"""The first-run guide."""
