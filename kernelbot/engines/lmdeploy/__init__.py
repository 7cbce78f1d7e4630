"""What kernelbot knows of the lmdeploy engine: profile.toml (its profile) and its integration convention."""
