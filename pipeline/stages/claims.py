"""Stage `claims`: claimed results, each tied to a verbatim evidence span."""

from pipeline.schemas import ClaimsOutput
from pipeline.taxonomy import Taxonomy

SCHEMA = ClaimsOutput


def system_fields(taxonomy: Taxonomy) -> dict[str, str]:
    """No fields beyond the abstract."""
    return {}
