"""The minimal-pair studio: generate projection families and pairs (templates; more to come)."""
