"""The subprocess transport's worker side: what a worker process runs."""
