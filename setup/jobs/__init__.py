"""Runs plans as jobs: the step runner (runner.py: logs, progress, cancel, resume), the job store (store.py), the
registry of built engines (registry.py), and the plan/build command line (cli.py; serve_cli.py and llmapi_cli.py for
the engine-free deployments, with the options they share in llm_api_cli_args.py).

May import: setup.plan, setup.cpu, setup.repo, setup.lora, setup.catalog and the base modules.
"""
