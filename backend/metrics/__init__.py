"""Pure metric functions over arrays and DataFrames; nothing here reads the store or a file.

Each function names the reference it follows. Uncertainty comes from `bootstrap`: one seeded
matrix of resample weights per (n, resamples, seed) is shared by every metric, and every metric is
a ratio of weighted sums, so 1,000 resamples of any metric are a couple of matrix products.
"""
