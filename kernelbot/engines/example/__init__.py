"""What kernelbot knows of the example engine: profile.toml (its profile) and its integration convention."""
