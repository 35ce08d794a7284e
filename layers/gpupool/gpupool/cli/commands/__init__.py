"""Subcommands of `gpupool`; each module is discovered by `gpupool.cli.main`."""
