"""Stage `tldr`: one grounded sentence with the paper's contribution."""

from pipeline.schemas import TldrOutput
from pipeline.taxonomy import Taxonomy

SCHEMA = TldrOutput


def system_fields(taxonomy: Taxonomy) -> dict[str, str]:
    """No fields beyond the abstract."""
    return {}
