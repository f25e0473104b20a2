"""The CPU target's runtime glue: the C runtime of model libraries and the generated entry point."""
