"""Batch-queue simulation (seed 004, and seed 002's per-job baselines): an event-driven simulator
of a Slurm-like queue with multifactor priority and backfilling, loaders for real traces, and an
adapter to a real Slurm."""

from placement.batch.jobs import Jobs

__all__ = ["Jobs"]
