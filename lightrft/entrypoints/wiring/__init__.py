"""Factory functions the container calls: each builds one adapter from the config."""
