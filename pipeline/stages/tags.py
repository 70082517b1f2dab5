"""Stage `tags`: controlled-taxonomy tags plus a few free keywords."""

from pipeline.schemas import TagsOutput
from pipeline.taxonomy import Taxonomy

SCHEMA = TagsOutput


def system_fields(taxonomy: Taxonomy) -> dict[str, str]:
    """The taxonomy listed in the system prompt, grouped by facet."""
    lines = []
    for facet in taxonomy.facets:
        lines.append(f"# {facet.label}")
        lines.extend(f"{tag.id}: {tag.label}" for tag in facet.tags)
    return {"taxonomy": "\n".join(lines)}
