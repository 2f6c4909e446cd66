"""The Graph view: canvas, worker, panel and styles."""
