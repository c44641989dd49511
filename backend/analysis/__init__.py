"""What several pages, the commands and the notebook API compute from the store: evaluation tables, the
leaderboard and the verdicts against trivial baselines, slices and their scores, ratings, judges' agreement,
projection and gradient tables, and the one rendering rule for outside text. Below the views (each view wraps
what its page calls); above everything that computes a single thing (metrics, models, runs)."""
