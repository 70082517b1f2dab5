"""Offline TL;DR extractor: schema-valid on every sample, sensible choices, robust to odd input."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from scaling import assert_scales_linearly

from pipeline.offline import tldr_rules as rules
from pipeline.offline.tldr import MAX_WORDS, extract_tldr
from pipeline.offline.tldr_rules import latex_to_text
from pipeline.stages.tldr import TldrOutput
from pipeline.text import display_text, split_sentences

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "iclr2026"
# shared/ beside the repo (a clone, CI), or two levels up (a worktree under /work/wt/).
SCITLDR = next(
    (
        p
        for p in (
            ROOT.parent / "shared" / "data" / "scitldr",
            ROOT.parents[1] / "shared" / "data" / "scitldr",
        )
        if p.exists()
    ),
    ROOT.parent / "shared" / "data" / "scitldr",
)
SCITLDR_DEV = SCITLDR / "dev.jsonl"
SCITLDR_TRAIN = SCITLDR / "train.jsonl"
READABILITY = ROOT / "tests" / "data" / "tldr_readability_dev.jsonl"
TOKEN = re.compile(r"[a-z0-9]+")

BACKGROUND_THEN_CONTRIBUTION = (
    "Graph neural networks have been widely used for molecular property prediction. "
    "However, existing methods often fail to capture long-range interactions between atoms. "
    "To address this issue, we propose RangeNet (RN), a message passing architecture that "
    "aggregates information along shortest paths, which we train with a contrastive objective. "
    "Experiments on 12 benchmarks show that RangeNet improves accuracy by 4.1% on average. "
    "Code is available at https://github.com/example/rangenet."
)


def assert_valid(tldr: str, abstract: str) -> None:
    assert tldr.strip(), "empty TL;DR"
    assert len(tldr.split()) <= MAX_WORDS
    assert len(split_sentences(tldr)) == 1, tldr
    TldrOutput.model_validate({"tldr": tldr}, context={"abstract": abstract})


@pytest.fixture(scope="module")
def samples() -> list[str]:
    out: list[str] = []
    for path in sorted(EXAMPLES.glob("*.txt")):
        _header, _sep, body = path.read_text(encoding="utf-8").partition("\n")
        out += [block.strip() for block in re.split(r"\n\s*\n", body) if block.strip()]
    return out


def test_every_sample_gives_a_valid_tldr(samples):
    for abstract in samples:
        assert_valid(extract_tldr(abstract), abstract)


def test_sample_tldrs_are_extractive(samples):
    # Every word of the TL;DR is a word of its abstract (markup aside), so nothing is invented.
    for abstract in samples:
        # (LaTeX is rendered as text first: "$L_0$" reads "L0".)
        shown = display_text(abstract).replace("*", "")
        vocab = set(TOKEN.findall((shown + " " + latex_to_text(shown)).lower()))
        tldr = extract_tldr(abstract)
        assert set(TOKEN.findall(tldr.lower())) <= vocab, tldr


def test_sample_tldrs_are_mostly_in_the_target_length(samples):
    lengths = [len(extract_tldr(a).split()) for a in samples]
    in_range = sum(8 <= n <= 33 for n in lengths)
    assert in_range >= 0.85 * len(lengths), lengths


def test_picks_the_contribution_and_drops_boilerplate():
    tldr = extract_tldr(BACKGROUND_THEN_CONTRIBUTION)
    assert tldr.startswith("We propose RangeNet, a message passing architecture"), tldr
    assert "(RN)" not in tldr  # parenthetical dropped
    assert "To address" not in tldr  # leading motivation clause dropped
    assert_valid(tldr, BACKGROUND_THEN_CONTRIBUTION)


def test_in_this_paper_opener_is_dropped_and_capitalized():
    abstract = (
        "Sparse attention is a popular way to scale transformers. "
        "In this paper, we introduce a simple kernel that computes block-sparse attention on GPUs. "
        "It is fast."
    )
    assert extract_tldr(abstract) == (
        "We introduce a simple kernel that computes block-sparse attention on GPUs."
    )


def test_long_sentence_is_cut_at_a_clause_boundary():
    abstract = (
        "We propose a scalable method for training sparse mixture-of-experts language models on "
        "commodity hardware with limited memory, which combines expert offloading, activation "
        "checkpointing and a new routing loss that balances the load across devices while keeping "
        "the quality of the dense baseline on every benchmark we tried."
    )
    tldr = extract_tldr(abstract)
    assert tldr == (
        "We propose a scalable method for training sparse mixture-of-experts language models on "
        "commodity hardware with limited memory."
    )


def test_one_sentence_without_any_period():
    phrase = "we propose a method for learning graph representations with random walks and "
    abstract = phrase * 30  # ~400 words, no punctuation at all
    tldr = extract_tldr(abstract)
    assert_valid(tldr, abstract)
    assert not tldr.endswith(" and.")  # a hard cut does not dangle on a function word


def test_chinese_abstract():
    abstract = (
        "大型语言模型在许多任务上表现出色。然而，它们的推理能力仍然有限。"
        "本文提出了一种新的提示方法，称为思维树，用于提高模型的推理能力。"
        "实验表明，该方法在数学推理任务上将准确率提高了12.5%。"
    )
    tldr = extract_tldr(abstract)
    assert tldr.startswith("本文提出了一种新的提示方法")
    assert_valid(tldr, abstract)


def test_chinese_without_punctuation_is_capped():
    abstract = "深度学习模型" * 20_000
    tldr = extract_tldr(abstract)
    assert 0 < len(tldr) <= 101
    assert_valid(tldr, abstract)


def test_math_symbols():
    abstract = (
        "We study $\\alpha$-stable noise in SGD with $\\sum_{i=1}^n x_i \\le 1$. "
        "We prove an $O(\\sqrt{T})$ regret bound for the $\\epsilon$-greedy algorithm."
    )
    assert_valid(extract_tldr(abstract), abstract)


def test_html_tags_are_stripped():
    abstract = (
        "<p>Deep nets are widely used.</p><p>In this paper, we <b>propose</b> <i>FooNet</i>, a "
        "network that reaches 95% accuracy on CIFAR-10 &amp; ImageNet.</p><br/>"
    )
    tldr = extract_tldr(abstract)
    assert tldr == "We propose FooNet, a network that reaches 95% accuracy on CIFAR-10 & ImageNet."
    assert_valid(tldr, abstract)


def test_unescaped_entity_numbers_are_not_invented():
    abstract = "In this paper we propose &#49;&#50;&#51; new ideas for robust training. It works."
    tldr = extract_tldr(abstract)
    assert "123" not in tldr
    assert_valid(tldr, abstract)


def test_huge_input_is_fast_and_valid():
    abstract = (
        "We propose a method for fast retrieval. " + "Lorem ipsum dolor 12345 sit amet. " * 30_000
    )
    assert len(abstract) > 1_000_000
    tenth = abstract[: len(abstract) // 10]
    assert_scales_linearly(lambda: extract_tldr(tenth), lambda: extract_tldr(abstract), 10)
    assert_valid(extract_tldr(abstract), abstract)


def test_huge_input_without_spaces():
    abstract = "x" * 1_000_000
    small = "x" * 100_000
    assert_scales_linearly(lambda: extract_tldr(small), lambda: extract_tldr(abstract), 10)
    assert_valid(extract_tldr(abstract), abstract)


@pytest.mark.parametrize(
    "abstract", ["Transformers", "...", "<br><br/>", "a. b. c.", "42", "7" * 5000, "&#49;&#50;"]
)
def test_tiny_and_odd_inputs_are_never_empty(abstract):
    assert_valid(extract_tldr(abstract), abstract)


def test_blank_input_gives_empty_string():
    assert extract_tldr("  \n\t ") == ""


def test_hard_cut_does_not_end_on_a_dangling_word():
    # An over-long sentence with no clause boundary is cut at the word budget; the cut must not
    # leave it hanging on "based" (or "of", "using", "where", ...).
    filler = " ".join(f"term{c}" for c in "abcdefghijklmnopqrst")
    abstract = (
        "Deep models are common. We propose a method for learning "
        f"{filler} representations of functions based on {filler} graphs. Results are good."
    )
    tldr = extract_tldr(abstract)
    assert tldr.endswith("representations of functions."), tldr
    assert_valid(tldr, abstract)


@pytest.mark.skipif(not SCITLDR_DEV.exists(), reason="SciTLDR dev split not available")
def test_scitldr_dev_rouge1_regression_guard():
    from pipeline.evaluation.rouge import score_rouge

    papers = [json.loads(line) for line in SCITLDR_DEV.read_text(encoding="utf-8").splitlines()]
    predictions = [extract_tldr(" ".join(p["source"])) for p in papers]
    result = score_rouge(predictions, [p["target"] for p in papers])
    # 41.0 with the ranker fitted on train (the stand-alone rules cost ~0.8 of it).
    assert result["best"]["rouge1"] >= 40.8


# --- stand-alone rules ----------------------------------------------------------------------


def test_rule_anaphora():
    assert rules.starts_with_anaphor("This positions our finding as a limit of defenses.")
    assert rules.starts_with_anaphor("These results suggest a new direction.")
    assert rules.starts_with_anaphor("The resulting model is fast.")
    assert not rules.starts_with_anaphor("This paper proposes a new probe.")
    assert not rules.starts_with_anaphor("Thistle is a plant.")
    assert rules.drop_such("We study such obfuscated activations.") == (
        "We study obfuscated activations."
    )
    assert rules.drop_such("methods such as probes") == "methods such as probes"
    assert rules.unresolved_anaphor("We reduce this cost by exploiting sparsity.")
    assert not rules.unresolved_anaphor("We propose a cost model and show this cost is low.")
    assert rules.pronoun_subject("In contrast to pruning, it preserves the full network.")
    assert not rules.pronoun_subject("It is well known that deep nets overfit.")


def test_anaphoric_sentence_is_avoided():
    abstract = (
        "Latent-space monitors are a popular defense against jailbreaks. "
        "This positions our finding as a limit of latent defenses against strong attackers. "
        "We propose ProbeGuard, a training method that makes latent monitors robust to "
        "obfuscation attacks."
    )
    tldr = extract_tldr(abstract)
    assert tldr.startswith("We propose ProbeGuard"), tldr
    assert_valid(tldr, abstract)


def test_such_is_resolved_by_dropping_it():
    abstract = (
        "Latent-space monitors are a popular defense against jailbreaks of language models. "
        "We study such obfuscated activations in five monitoring settings and show that monitors "
        "can be fooled."
    )
    tldr = extract_tldr(abstract)
    assert tldr.startswith("We study obfuscated activations in five monitoring settings"), tldr


def test_address_these_issues_by_proposing_is_rewritten():
    abstract = (
        "Quantization reduces the cost of inference but often hurts accuracy. "
        "We address these issues in this paper by proposing a new method, called adaptive "
        "quantization, that picks bit widths per layer."
    )
    assert extract_tldr(abstract) == (
        "We propose a new method, called adaptive quantization, that picks bit widths per layer."
    )


def test_coordinated_proposal_is_taken_without_the_anaphoric_clause():
    abstract = (
        "Deep convolutional networks are expensive. We reduce this cost by exploiting the fact "
        "that feature importance is input-dependent, and propose feature boosting and "
        "suppression, a method that skips unimportant channels at run time."
    )
    tldr = extract_tldr(abstract)
    assert tldr.startswith("We propose feature boosting and suppression"), tldr
    assert "this cost" not in tldr


def test_rule_object_cut():
    assert rules.ends_unfinished("We train a network to compress.")
    assert rules.ends_unfinished("Features first encode the stream and then map.")
    assert rules.ends_unfinished("We use probes, monitors, etc.")
    assert rules.ends_unfinished("We study the effect of.")
    assert not rules.ends_unfinished("We train a network to compress images.")
    assert not rules.ends_unfinished("The kernel is positive definite and fast to compute.")


def test_rule_object_cut_after_a_reporting_verb_or_an_adjective():
    # A cut before "that ..." or "for ..." must not leave the verb or adjective without it.
    assert rules.ends_unfinished("Experiments on several benchmark datasets demonstrate.")
    assert rules.ends_unfinished("We propose to modify the penalties, and we argue.")
    assert rules.ends_unfinished("We introduce fast algorithms for MinHash, suitable.")
    assert not rules.ends_unfinished("We introduce fast algorithms for MinHash of sparse data.")


def test_cut_does_not_drop_the_last_item_of_a_series():
    # "clusters X, aggregates Y, and updates Z" is never cut to "clusters X, aggregates Y.".
    from pipeline.offline.tldr import _shorter

    fitted = (
        "We propose CRISP, an inference-time algorithm that clusters reasoning paths by their "
        "final answers, aggregates reward signals at the cluster level, and adaptively updates "
        "prefix prompts"
    )
    assert not any(p.endswith("cluster level") for p in _shorter(fitted, fitted.count(" ") + 1))
    # A coordinated clause of the subject's may still go ("..., and show that ...").
    fitted = (
        "We propose CRISP, an inference-time algorithm for reasoning with reward models, "
        "and show that it improves accuracy on five math benchmarks"
    )
    assert fitted.split(", and show")[0] in _shorter(fitted, fitted.count(" ") + 1)


def test_rule_enumerated_item():
    assert rules.starts_with_enumerator("(3) Pooling layers are neither necessary nor sufficient.")
    assert rules.starts_with_enumerator("2) the model takes the output of the first stage.")
    assert rules.starts_with_enumerator("(ii) retrain the network.")
    assert not rules.starts_with_enumerator("We propose (1) a model and (2) a loss.")
    assert not rules.starts_with_enumerator("3D shapes are hard to generate.")
    abstract = (
        "We propose a pooling-free network for natural image classification that learns "
        "deformation stability from data. (3) Interleaved pooling layers are neither necessary "
        "nor sufficient for deformation stability."
    )
    assert extract_tldr(abstract).startswith("We propose a pooling-free network")


def test_pruned_search_picks_what_scoring_every_candidate_picks(samples):
    # extract_tldr skips sentences and cuts that cannot win; the result is the best candidate
    # of the best tier in candidate_table, scored in full.
    from pipeline.offline.tldr import _grounded, candidate_table, score

    abstracts = samples + [r["abstract"] for r in _readability_rows()]
    for abstract in abstracts:
        table = candidate_table(abstract)
        best = min(
            range(len(table)),
            key=lambda k: (table[k].tier, -round(score(table[k]), 9), table[k].sentence, k),
        )
        assert extract_tldr(abstract) == _grounded(table[best].text, abstract), abstract[:80]


def test_example_removal_keeps_a_verbs_object():
    abstract = "Neural codecs are popular. We train a network to compress, e.g., images and audio."
    tldr = extract_tldr(abstract)
    assert tldr == "We train a network to compress, e.g., images and audio.", tldr
    abstract = "We study robust training, e.g., adversarial training, for large vision models."
    assert extract_tldr(abstract) == "We study robust training for large vision models."


def test_long_sentence_is_not_cut_before_an_object():
    abstract = (
        "We propose a new training objective for sparse autoencoders that learns features which "
        "first encode the residual stream and then map every feature onto a small dictionary of "
        "interpretable directions chosen by a greedy search over candidate directions. "
        "Results are good."
    )
    tldr = extract_tldr(abstract)
    assert not rules.ends_unfinished(tldr), tldr
    assert not tldr.endswith("then map."), tldr
    assert_valid(tldr, abstract)


def test_etc_does_not_glue_two_sentences():
    abstract = (
        "Prior defenses use probes, monitors, filters etc. To overcome their limits, we propose "
        "a certified latent monitor that bounds the attack success rate of any obfuscation attack."
    )
    tldr = extract_tldr(abstract)
    assert "etc" not in tldr and "To overcome" not in tldr, tldr
    assert tldr.startswith("We propose a certified latent monitor"), tldr


def test_rule_unfinished_list():
    assert rules.unfinished_list("We show the following properties: 1.")
    assert rules.unfinished_list(
        "We use two residual modules: 1) a gated block for local features."
    )
    assert rules.unfinished_list("We use two residual modules: a gated block for local features.")
    assert not rules.unfinished_list("We use two modules: 1) a gated block and 2) a pooling block.")
    assert not rules.unfinished_list("We use two modules: a gated block and a pooling block.")
    assert not rules.unfinished_list("We train a network with 1.5 million weights.")


def test_unfinished_list_is_avoided_or_cut_before_the_colon():
    abstract = (
        "Graph kernels are widely used for comparing molecules. "
        "We show that our kernel satisfies the following properties: 1. It works. "
        "We propose a graph kernel based on random walks with restarts that is positive definite "
        "and fast to compute."
    )
    assert extract_tldr(abstract).startswith("We propose a graph kernel based on random walks")
    abstract = (
        "Residual networks are deep. We propose a new architecture composed of two residual "
        "modules: 1) a gated convolution block for local features. Experiments show gains."
    )
    assert extract_tldr(abstract) == (
        "We propose a new architecture composed of two residual modules."
    )


def test_rule_latex():
    assert rules.latex_to_text("$L_0$") == "L0"
    assert rules.latex_to_text(r"\textit{x}") == "x"
    assert rules.latex_to_text(r"$\alpha$-stable") == "\u03b1-stable"
    assert rules.latex_to_text(r"$\ell_1$ norm") == "L1 norm"
    assert rules.latex_to_text(r"$O(n \log n)$") == "O(n log n)"
    assert rules.latex_to_text(r"a rate of $10^{-3}$") == "a rate of 10^-3"
    assert rules.latex_to_text(r"as shown \cite{smith20}.") == "as shown."
    assert rules.latex_to_text("plain text") == "plain text"


def test_latex_is_rendered_in_the_tldr():
    abstract = (
        r"We propose $L_0$-regularized sparse probes with a \textit{learned} threshold $\tau$ "
        "for interpreting language models."
    )
    tldr = extract_tldr(abstract)
    assert tldr == (
        "We propose L0-regularized sparse probes with a learned threshold \u03c4 for interpreting "
        "language models."
    ), tldr
    assert not rules.has_raw_latex(tldr)
    assert_valid(tldr, abstract)


def test_rule_citations():
    assert rules.strip_citations("Probes [12] work [3, 4] well [5-7].") == "Probes work well."
    assert rules.strip_citations("Probes (Smith et al., 2020; Doe 2019) work.") == "Probes work."
    assert rules.strip_citations("Probes (see Fig. 3) work.") == "Probes (see Fig. 3) work."
    assert rules.has_citation("Smith et al. showed that probes work.")
    assert rules.has_citation("As Smith (2020) showed, probes work.")
    assert not rules.has_citation("We propose a probe.")


def test_citations_are_dropped_or_avoided():
    abstract = (
        "Sparse probes [12] are widely used. Smith et al. showed that probes are miscalibrated "
        "on out-of-distribution inputs. We propose a calibrated sparse probe (Smith et al., "
        "2020) that estimates its own uncertainty [3, 4] on every input."
    )
    tldr = extract_tldr(abstract)
    assert (
        tldr
        == "We propose a calibrated sparse probe that estimates its own uncertainty on every input."
    )
    assert_valid(tldr, abstract)


def test_rule_questions():
    assert rules.is_question("We ask the question: when does noise help generalization?")
    assert rules.is_question("We ask whether noise helps")
    assert rules.is_question("How do transformers count")
    assert not rules.is_question("We propose a noise schedule.")


def test_question_is_avoided_when_a_contribution_exists():
    abstract = (
        "We ask the question: when does noise help generalization in deep networks? "
        "We propose a noise schedule that provably improves generalization of stochastic "
        "gradient descent."
    )
    assert extract_tldr(abstract).startswith("We propose a noise schedule")


def test_background_is_avoided_when_a_contribution_exists():
    abstract = (
        "Vision transformers have become the dominant architecture for image classification "
        "and have been widely used for detection, segmentation and retrieval in recent years. "
        "We propose a patch-based attention layer that halves memory."
    )
    assert extract_tldr(abstract) == "We propose a patch-based attention layer that halves memory."


def test_url_is_never_the_tldr():
    abstract = (
        "Neural Tangents is a library designed to enable research into infinite-width neural "
        "networks. It is available at https://github.com/google/neural-tangents for everyone."
    )
    tldr = extract_tldr(abstract)
    assert "http" not in tldr and tldr.startswith("Neural Tangents is a library"), tldr


# --- the model file -------------------------------------------------------------------------


def test_model_file_is_shipped_and_read():
    from pipeline.offline import tldr as module

    data = json.loads(module.MODEL_PATH.read_text(encoding="utf-8"))
    assert data["dense"] == module._DENSE and data["lexical"] == module._LEXICAL
    assert len(data["dense"]) >= 20
    # Written with sorted keys and rounded floats, as bench/train_tldr.py writes it.
    assert module.MODEL_PATH.read_text(encoding="utf-8") == (
        json.dumps(data, indent=1, sort_keys=True, ensure_ascii=True) + "\n"
    )
    assert all(round(v, 4) == v for v in [*data["dense"].values(), *data["lexical"].values()])


def _synthetic_scitldr(path: Path, samples: list[str]) -> None:
    with path.open("w", encoding="utf-8") as fh:
        for k, abstract in enumerate(samples):
            sentences = split_sentences(abstract)
            target = sentences[min(1, len(sentences) - 1)]
            row = {"paper_id": f"p{k}", "source": sentences, "target": [target]}
            fh.write(json.dumps(row) + "\n")


def test_training_is_deterministic(tmp_path, samples, run_bench):
    pytest.importorskip("numpy")
    pytest.importorskip("nltk")
    data = tmp_path / "train.jsonl"
    _synthetic_scitldr(data, samples)
    outs = []
    for name in ("a.json", "b.json"):
        out = tmp_path / name
        trained = run_bench("train_tldr", "--data", data, "--out", out, "--min-count", "2")
        assert trained.returncode == 0, trained.stderr
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    model = json.loads(outs[0])
    assert model["dense"] and model["trained_on"] == f"SciTLDR train ({len(samples)} papers)"


@pytest.mark.skipif(not SCITLDR_TRAIN.exists(), reason="SciTLDR train split not available")
def test_shipped_model_is_what_training_writes(run_bench):
    # `python -m bench.train_tldr` regenerates pipeline/offline/tldr_model.json byte for byte.
    pytest.importorskip("numpy")
    pytest.importorskip("nltk")
    checked = run_bench("train_tldr", "--data", SCITLDR_TRAIN, "--check")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_training_rouge_matches_rouge_score(samples):
    pytest.importorskip("nltk")
    from pipeline.evaluation.rouge import pair_f1
    from pipeline.testing.rouge_labels import rouge_f1

    for a, b in zip(samples[:20], samples[1:21], strict=True):
        x, y = split_sentences(a)[0], split_sentences(b)[-1]
        assert rouge_f1(x, y) == pytest.approx(pair_f1(x, y)["rouge1"], abs=1e-12)
        assert rouge_f1(x, x) == pytest.approx(1.0)


# --- the readability check ------------------------------------------------------------------


def _readability_rows() -> list[dict]:
    return [json.loads(line) for line in READABILITY.read_text(encoding="utf-8").splitlines()]


def test_readability_file_describes_the_current_extractor():
    # Every judged TL;DR is what extract_tldr gives now for that abstract: the judgments are
    # of the shipped extractor (re-judge after changing it).
    rows = _readability_rows()
    assert len(rows) >= 100
    changed = [r["paper_id"] for r in rows if extract_tldr(r["abstract"]) != r["tldr"]]
    assert not changed, f"re-judge tests/data/tldr_readability_dev.jsonl: {changed[:5]}"


def test_readability_judgments_are_complete_and_at_least_90_percent_usable():
    rows = _readability_rows()
    assert len({r["paper_id"] for r in rows}) == len(rows)
    for r in rows:
        assert isinstance(r["usable"], bool)
        assert r["usable"] or r.get("problem"), r["paper_id"]
    assert sum(r["usable"] for r in rows) >= 0.9 * len(rows)


@pytest.mark.skipif(not SCITLDR_DEV.exists(), reason="SciTLDR dev split not available")
def test_readability_file_is_the_first_100_dev_papers():
    papers = [json.loads(line) for line in SCITLDR_DEV.read_text(encoding="utf-8").splitlines()]
    rows = _readability_rows()
    assert [r["paper_id"] for r in rows] == [p["paper_id"] for p in papers[: len(rows)]]
    assert [r["abstract"] for r in rows] == [" ".join(p["source"]) for p in papers[: len(rows)]]
