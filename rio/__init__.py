"""Rio: a lightweight '90s-style text editor and development environment that drives coding agents."""

__version__ = "0.1.0"
