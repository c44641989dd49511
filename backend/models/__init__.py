"""Models: device selection, loading from local folders or packaged weights, one module per task."""
