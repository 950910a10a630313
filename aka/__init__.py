"""aka: an arena where AI agents optimize GPU kernels."""

__version__ = "0.1.0"
