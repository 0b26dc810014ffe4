"""LoRA adapters: the registry (register on first use, id only afterwards, re-send after eviction),
task ids kept in the cache folder, intake of folders and zips, and the adapter-aware stream.

May import: app.triton, app.core, setup.
"""
