"""Helpers shared by several adapter packages."""
