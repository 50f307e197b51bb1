"""compile-lab: tells the truth about torch.compile on your GPU."""

__version__ = "0.1.0"
