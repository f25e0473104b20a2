"""Auto-tuning: search spaces, tuning records, search with a cost model, measurement (issue 19)."""
