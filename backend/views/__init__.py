"""What each page shows, as plain Python over the store: `views/<page>.py` serves `pages/<page>.py`
(DataFrames, specs and the actions a page takes); a few modules serve several (`markdown`, the one
rendering rule for outside text; `evaluate`, the paper tables; `saved_slices`)."""
