"""Turns a build config into ordered steps (argv lists) with checks, warnings and a preflight.

May import: setup.repo, setup.lora, setup.catalog and the base modules.
"""
