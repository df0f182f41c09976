"""Shared test configuration: a non-interactive matplotlib backend, nothing else."""

import matplotlib

matplotlib.use("Agg")
