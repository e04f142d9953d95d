"""Toy workflow + helpers for running Snakemake through profiles/slurm."""
