"""The `gpupool` command line: one module per subcommand under `gpupool.cli.commands`."""
