"""What kernelbot knows of the sglang engine: profile.toml (its profile) and its integration convention."""
