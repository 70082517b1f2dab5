import json
import re

import pytest
from pydantic import ValidationError

from pipeline.schemas import llm_json_schema
from pipeline.stages import get_spec
from pipeline.stages.claims import ClaimsOutput
from pipeline.stages.tags import TagsOutput
from pipeline.stages.tldr import TldrOutput
from pipeline.taxonomy import Facet, Tag, Taxonomy

ABSTRACT = (
    "We present DR-GGAD for graph anomaly detection.  On 8 benchmark target graphs, it achieves new SOTA: "
    "mean AUROC +5.14% over the best prior GGAD, with large gains on high-AnD datasets (Facebook +12.59%, ACM +9.96%)."
)
TAX = Taxonomy(
    version=1,
    facets=(
        Facet(
            id="method",
            label="Method",
            tags=(
                Tag(id="graph-neural-networks", label="Graph neural networks", synonyms=("GNN",)),
            ),
        ),
        Facet(
            id="task", label="Task", tags=(Tag(id="anomaly-detection", label="Anomaly detection"),)
        ),
    ),
)
CTX = {"abstract": ABSTRACT, "taxonomy": TAX}


def claim(**overrides):
    base = dict(
        statement="DR-GGAD improves mean AUROC.",
        kind="quantitative",
        metric="AUROC",
        value="5.14",
        unit="%",
        dataset=None,
        comparison="best prior GGAD",
        evidence="mean AUROC +5.14% over the best prior GGAD",
    )
    return {**base, **overrides}


def test_tldr_accepts_one_grounded_sentence():
    out = TldrOutput.model_validate(
        {"tldr": "DR-GGAD improves graph anomaly detection on 8 graphs."}, context=CTX
    )
    assert out.tldr.endswith("8 graphs.")


@pytest.mark.parametrize(
    ("tldr", "message"),
    [
        ("", "empty"),
        ("It works. It is fast.", "exactly one sentence"),
        (" ".join(["word"] * 36) + ".", "at most 35"),
        ("DR-GGAD gains 7% AUROC on 8 graphs.", "numbers not in the abstract: 7"),
    ],
)
def test_tldr_rejects(tldr, message):
    with pytest.raises(ValidationError, match=message):
        TldrOutput.model_validate({"tldr": tldr}, context=CTX)


def test_the_exclamation_mark_of_a_name_the_abstract_writes_ends_no_sentence():
    abstract = "We apply our bandit to a Yahoo! Front Page Today Module dataset. It works!"
    ctx = {"abstract": abstract}
    tldr = "A contextual bandit lifts clicks on Yahoo! Front Page data."
    assert TldrOutput.model_validate({"tldr": tldr}, context=ctx).tldr == tldr
    with pytest.raises(ValidationError, match="exactly one sentence"):
        TldrOutput.model_validate(
            {"tldr": "A contextual bandit works! It lifts clicks."}, context=ctx
        )


def test_a_tex_epsilon_is_the_abstracts_pdf_epsilon_not_a_name():
    # PDFs write epsilon as U+220A ("small element of"); a TL;DR writes $W/\epsilon$
    abstract = "If m \u2265 O(W/\u220a log N/\u220a) examples are loaded, a 1 \u2212 \u220a fraction is right."
    ctx = {"abstract": abstract}
    tldr = "Nets generalize from $m \\geq O(W/\\epsilon \\log N/\\varepsilon)$ examples."
    assert TldrOutput.model_validate({"tldr": tldr}, context=ctx).tldr == tldr
    with pytest.raises(ValidationError, match="names what the abstract does not: 'W/K'"):
        TldrOutput.model_validate({"tldr": "Nets generalize from $O(W/K)$ examples."}, context=ctx)


def test_a_topic_re_ask_quotes_the_tldrs_own_words():
    from pipeline.prompts import PACKAGE_PROMPTS_DIR
    from pipeline.taxonomy import load_taxonomy

    taxonomy = load_taxonomy(PACKAGE_PROMPTS_DIR / "taxonomy.yaml")
    ctx = {"abstract": "We sort images of cats with a convolutional network.", "taxonomy": taxonomy}
    tldr = "A self-supervised convolutional network sorts images of cats."
    with pytest.raises(
        ValidationError, match="names a topic the abstract does not: 'self-supervised'"
    ):
        TldrOutput.model_validate({"tldr": tldr}, context=ctx)


def test_tags_resolve_synonyms_and_reject_unknown():
    out = TagsOutput.model_validate(
        {"tags": ["GNN", "anomaly-detection", "gnn"], "keywords": ["DR-GGAD", "dr-ggad"]},
        context=CTX,
    )
    assert out.tags == ["graph-neural-networks", "anomaly-detection"]
    assert out.keywords == ["DR-GGAD"]
    with pytest.raises(ValidationError, match="not in the taxonomy"):
        TagsOutput.model_validate({"tags": ["quantum-gravity"], "keywords": []}, context=CTX)
    with pytest.raises(ValidationError, match="at least one"):
        TagsOutput.model_validate({"tags": [], "keywords": []}, context=CTX)
    with pytest.raises(ValidationError, match="short phrases"):
        TagsOutput.model_validate({"tags": ["GNN"], "keywords": ["a b c d e f"]}, context=CTX)


def test_tags_beyond_the_limits_are_cut_with_a_note_not_rejected():
    from pipeline.prompts import PACKAGE_PROMPTS_DIR
    from pipeline.stages import build_stages

    stage = build_stages(("tags",), PACKAGE_PROMPTS_DIR, TAX)["tags"]
    words = ["DR-GGAD", "AUROC", "GGAD", "graph", "anomaly", "detection"]
    raw = json.dumps({"tags": ["anomaly-detection"], "keywords": words})
    parsed = stage.accept(raw, ABSTRACT)
    assert parsed.output["keywords"] == words[:5] and "keywords_cut" in parsed.repairs


def test_claim_grounding_accepts_whitespace_variants_and_records_span():
    out = ClaimsOutput.model_validate(
        {"claims": [claim(evidence="mean AUROC +5.14%  over the best\nprior GGAD")]}, context=CTX
    )
    start, end = out.claims[0].span
    assert ABSTRACT[start:end] == "mean AUROC +5.14% over the best prior GGAD"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (
            {"evidence": "mean AUROC +5.41% over the best prior GGAD"},
            "not in the abstract",
        ),
        ({"evidence": "mean AUROC of +5.14% over all prior methods"}, "not in the abstract"),
        ({"value": "12.59"}, "does not occur in its evidence"),
        ({"value": None}, "needs a numeric value"),
        ({"kind": "speculative"}, "kind"),
        ({"evidence": "AUROC"}, "not a fragment"),
    ],
)
def test_claim_grounding_rejects(overrides, message):
    with pytest.raises(ValidationError, match=message):
        ClaimsOutput.model_validate({"claims": [claim(**overrides)]}, context=CTX)


def test_qualitative_claim_and_empty_list_are_valid():
    q = claim(
        kind="qualitative",
        metric=None,
        value=None,
        unit=None,
        statement="It achieves new SOTA.",
        evidence="it achieves new SOTA",
    )
    assert ClaimsOutput.model_validate({"claims": [q]}, context=CTX).claims[0].kind == "qualitative"
    assert ClaimsOutput.model_validate({"claims": []}, context=CTX).claims == []


def test_strict_llm_schema_requires_every_field_and_hides_computed_span():
    schema = llm_json_schema(ClaimsOutput)
    claim_schema = schema["$defs"]["Claim"]
    assert claim_schema["additionalProperties"] is False
    assert "span" not in claim_schema["properties"]
    assert sorted(claim_schema["required"]) == sorted(claim_schema["properties"])
    tags = get_spec("tags").schema_hook(llm_json_schema(TagsOutput), TAX)
    # The taxonomy reaches the model once, in the prompt: no enum repeating its ids.
    assert tags["properties"]["tags"]["items"] == {"type": "string"}
    assert "default" not in str(tags)


def test_the_tags_prompt_lists_the_supported_ids_once_and_says_the_first_is_primary():
    from pipeline.prompts import PACKAGE_PROMPTS_DIR
    from pipeline.stages import build_stages
    from pipeline.support import supported_tags
    from pipeline.taxonomy import load_taxonomy

    taxonomy = load_taxonomy(PACKAGE_PROMPTS_DIR / "taxonomy.yaml")
    stage = build_stages(("tags",), PACKAGE_PROMPTS_DIR, taxonomy)["tags"]
    # The fields hold the whole taxonomy (they enter the prompt hash) ...
    ids = re.findall(r"[a-z0-9]+(?:-[a-z0-9]+)+|[a-z0-9]+", stage.fields["taxonomy"])
    assert sorted(i for i in ids if i in taxonomy.tags) == sorted(taxonomy.ids)
    # ... and a request offers only what the abstract supports, each id once.
    abstract = (
        "We prune graph neural networks for graph anomaly detection and study state space "
        "models and Kalman filters. Our method improves AUROC."
    )
    system, user = stage.messages(abstract)
    listed = system["content"].split("Taxonomy ids:", 1)[1]
    ids = re.findall(r"[a-z0-9]+(?:-[a-z0-9]+)+|[a-z0-9]+", listed)
    offered = [i for i in ids if i in taxonomy.tags]
    assert sorted(offered) == sorted(supported_tags(abstract, taxonomy))
    assert len(offered) == len(set(offered)) and "pruning" in offered
    assert "first tag is the primary topic" in system["content"]
    assert abstract not in system["content"]  # the instructions come first
    # The overlap notes shown name two offered ids each; every id any note names is real.
    notes = system["content"].split("Where ids overlap:", 1)[1].split("Taxonomy ids:", 1)[0]
    shown = re.findall(r"^- (.*)$", notes, re.MULTILINE)
    assert shown and all(sum(p.split(":")[0] in offered for p in x.split("; ")) >= 2 for x in shown)
    for line in stage.fields["overlap_lines"].splitlines():
        for part in line.removeprefix("- ").split("; "):
            assert part.split(":", 1)[0] in taxonomy.tags, part


def test_taxonomy_rejects_a_name_shared_by_two_tags(tmp_path):
    from pipeline.errors import ConfigError
    from pipeline.taxonomy import load_taxonomy

    path = tmp_path / "taxonomy.yaml"
    path.write_text(
        "version: 1\nfacets:\n  - id: m\n    label: M\n    tags:\n"
        "      - {id: evaluation-metric, label: Evaluation metric}\n"
        "      - {id: benchmark, label: Benchmark, synonyms: [evaluation metric]}\n"
    )
    with pytest.raises(ConfigError, match="evaluation metric"):
        load_taxonomy(path)


def test_one_written_definition_of_a_claimed_result_is_shared():
    from pathlib import Path

    from pipeline.prompts import PACKAGE_PROMPTS_DIR
    from pipeline.stages import build_stages
    from pipeline.taxonomy import load_taxonomy

    definition = (PACKAGE_PROMPTS_DIR / "claimed_result.md").read_text(encoding="utf-8").strip()
    taxonomy = load_taxonomy(PACKAGE_PROMPTS_DIR / "taxonomy.yaml")
    stage = build_stages(("claims",), PACKAGE_PROMPTS_DIR, taxonomy)["claims"]
    assert definition in stage.messages("An abstract.")[0]["content"]  # quoted, not restated
    gold = (Path(__file__).parent / "data" / "GOLD.md").read_text(encoding="utf-8")
    assert "The definition is `prompts/claimed_result.md`" in gold
    # It says what counts as a result and what is setup or a count.
    assert "These are results:" in definition and "These are not results:" in definition
    assert "Setup and counts" in definition
