"""Runs plans: the step runner (logs, progress, cancel, resume), the job store, the registry of built
engines, and the plan/build command line.

May import: setup.plan, setup.cpu, setup.repo, setup.lora, setup.catalog and the base modules.
"""
