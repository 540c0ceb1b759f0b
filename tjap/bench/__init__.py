"""The experiments ``tjap bench`` runs for a user: seed 002's exact solvers and Tables III/IV, NSA
against SA, the window policy against FCFS/EASY, and the batch simulator on a trace.

Each module computes rows, a summary and a figure; :mod:`tjap.cli.bench` prints and writes them.
The project's other experiments (with their figures in ``benchmarks/RESULTS.md``) live in the
``benchmarks`` folder of the repository, on top of everything.
"""
