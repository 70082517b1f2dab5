"""abstract-digest: research-paper abstracts into validated, grounded structured summaries."""

__version__ = "0.1.0"
