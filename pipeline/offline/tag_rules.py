"""Context rules of the offline tagger: which taxonomy phrases need a second cue, and which
neighbouring words cancel a mention. Offline-only data; the LLM prompt never sees it.

- WEAK: (tag id, phrase) pairs whose phrase is ambiguous on its own ("translation" is also a
  geometric shift, "calibration" also of attention, "adversarial training" also a GAN's).
  A weak mention counts only when the abstract also has a non-weak mention of the same tag
  or one of the tag's CUES (a tag without CUES needs the non-weak mention).
- CUES: tag id -> words or phrases (matched on the matcher's lowercase, plural-folded
  tokens) that make a weak phrase mean the tag.
- FALLBACK: (tag id, weak phrase) -> the tag the phrase means when the first tag's cues are
  absent ("language model" without "pretrained", "large", "BERT": language modelling).
- FAMILY_SUFFIXES: a model-family abbreviation at the end of a name ("DNA-GAN" is split at
  the hyphen, but "CycleGAN", "DistilBERT", "BiLSTM" are one token) -> tag id.
- PASSING_BEFORE: words just before a mention that make it a contrast, not the topic
  ("unlike GANs", "instead of fine-tuning", "rather than RL").
- SUFFIX_BLOCKERS: a hyphenated word after a mention that makes it a comparison or an
  absence ("DNA-like", "attention-free", "RL-agnostic").
"""

from __future__ import annotations

WEAK: dict[str, tuple[str, ...]] = {
    "machine-translation": ("translation", "BLEU", "back-translation"),
    "adversarial-robustness": ("adversarial training", "adversarially trained"),
    "ai-safety": ("safety", "harmful", "misuse", "dual-use", "refusal", "safety-critical"),
    "llm-agents": ("autonomous agent", "ai agent", "agentic", "tool use"),
    "uncertainty-quantification": ("calibration", "uncertainty", "error detection"),
    "optimal-transport": ("wasserstein",),
    "large-language-models": ("language model", "LM", "foundation model"),
    "multimodal-learning": ("modality", "multimodal", "multi-modal"),
    "genomics-biology": ("DNA", "RNA", "single-cell"),
    "healthcare-medicine": ("biomedical", "patient", "diagnosis", "clinical", "medical"),
    "robustness": ("reliability", "instability"),
    "test-time-scaling": ("best-of-n", "self-consistency"),
    "evaluation-methodology": ("human evaluation", "automatic evaluation", "reproducibility"),
    "game-theory-economics": ("market", "incentive", "voting"),
    "regularization-objectives": ("auxiliary loss", "training objective"),
    "bayesian-methods": ("importance sampling", "markov chain", "probabilistic model"),
    "generalization-ood": ("generalization",),
    "text-classification": ("natural language understanding",),
    "model-based-rl": ("model-based", "transition model", "environment dynamics"),
    "3d-vision": ("multi-view", "3d", "mesh"),
    "societal-impact": ("social media", "regulation"),
    "factual-knowledge": ("memorization", "memorize"),
    "efficiency": ("speed-up",),
    "mathematical-reasoning": ("arithmetic",),
    "social-science-humanities": ("social science",),
    "model-compression": ("compression", "compressing"),
    "optimization-algorithms": (
        "convergence rate",
        "momentum",
        "learning rate",
        "gradient descent",
        "stochastic gradient descent",
        "SGD",
    ),
    "neural-odes": ("stochastic differential equation", "ordinary differential equation"),
    "summarization": ("summaries",),
    "graph-learning": ("graph structure",),
    "dialogue-systems": ("conversational", "response generation"),
}

CUES: dict[str, tuple[str, ...]] = {
    "machine-translation": (
        "english",
        "german",
        "french",
        "chinese",
        "japanese",
        "romanian",
        "nmt",
        "bilingual",
        "wmt",
        "iwslt",
        "source language",
        "target language",
        "language pair",
        "parallel corpus",
        "parallel corpora",
        "parallel data",
        "translate",
        "translating",
    ),
    "adversarial-robustness": (
        "attack",
        "perturbation",
        "adversarial example",
        "robustness",
        "robust",
        "pgd",
        "fgsm",
    ),
    "ai-safety": ("llm", "jailbreak", "alignment", "ai", "chatbot", "guardrail"),
    "llm-agents": ("llm", "gpt", "language model", "chatgpt", "prompt", "prompting"),
    "uncertainty-quantification": (
        "confidence",
        "overconfident",
        "overconfidence",
        "miscalibrated",
        "calibrated",
        "ece",
        "predictive",
        "probabilistic",
        "bayesian",
        "epistemic",
        "aleatoric",
    ),
    "optimal-transport": ("transport", "sinkhorn", "coupling", "earth", "barycenter"),
    "large-language-models": (
        "pretrained",
        "pre-trained",
        "large",
        "bert",
        "gpt",
        "llm",
        "transformer",
    ),
    "multimodal-learning": (
        "modality",
        "audio",
        "acoustic",
        "visual",
        "vision",
        "sensor",
        "video",
        "speech",
    ),
    "genomics-biology": (
        "gene",
        "genome",
        "genomic",
        "sequencing",
        "transcriptomic",
        "chromatin",
        "nucleotide",
    ),
    "healthcare-medicine": ("hospital", "disease", "clinician", "physician", "ehr", "health"),
    "test-time-scaling": ("llm", "language model", "verifier", "inference-time", "test-time"),
    "evaluation-methodology": ("protocol", "annotator", "judge"),
    "game-theory-economics": (
        "equilibrium",
        "equilibria",
        "price",
        "pricing",
        "auction",
        "economic",
        "seller",
        "buyer",
        "welfare",
        "strategic",
    ),
    "optimization-algorithms": (
        "optimizer",
        "adam",
        "convex",
        "nonconvex",
        "non-convex",
        "step size",
        "adaptive",
        "convergence",
        "accelerated",
        "variance reduction",
    ),
    "regularization-objectives": ("regularizer", "penalty", "regularize", "regularized"),
    "bayesian-methods": ("bayesian", "posterior", "prior", "mcmc", "variational"),
    "generalization-ood": (
        "unseen",
        "shift",
        "out-of-distribution",
        "ood",
        "extrapolate",
        "extrapolation",
        "new environment",
        "new domain",
        "novel environment",
    ),
    "text-classification": ("classification", "sentiment", "glue", "entailment", "nli"),
    "model-based-rl": ("reinforcement", "rl", "agent", "reward", "policy", "planning"),
    "3d-vision": ("depth", "camera", "scene", "point cloud", "reconstruction", "geometry", "shape"),
    "societal-impact": ("misinformation", "polarization", "society", "societal", "harm"),
    "factual-knowledge": ("fact", "factual", "knowledge", "language model", "llm"),
    "efficiency": ("inference", "computation", "computational", "flop", "hardware", "gpu"),
    "mathematical-reasoning": ("math", "mathematical", "word problem", "gsm8k", "reasoning"),
    "social-science-humanities": ("survey", "opinion", "population", "social scientist"),
    "model-compression": (
        "parameter",
        "memory footprint",
        "model size",
        "filter",
        "prune",
        "pruning",
        "pruned",
        "quantization",
        "distillation",
        "deploy",
        "deployment",
    ),
    "neural-odes": ("neural", "latent", "adjoint", "continuous-time", "continuous-depth"),
    "summarization": ("document", "article", "rouge", "abstractive", "extractive", "news"),
    "graph-learning": ("node", "edge", "vertex", "vertices", "graph neural", "gnn"),
    "dialogue-systems": ("dialogue", "dialog", "conversation", "utterance", "chatbot", "reply"),
}

FALLBACK: dict[tuple[str, str], str] = {
    ("large-language-models", "language model"): "language-modeling",
    ("large-language-models", "LM"): "language-modeling",
}

FAMILY_SUFFIXES: dict[str, str] = {
    "GAN": "generative-adversarial-networks",
    "BERT": "large-language-models",
    "VAE": "variational-autoencoders",
    "LSTM": "recurrent-networks",
    "RNN": "recurrent-networks",
    "GRU": "recurrent-networks",
    "CNN": "convolutional-networks",
    "ConvNet": "convolutional-networks",
    "GNN": "graph-neural-networks",
    "GCN": "graph-neural-networks",
    "NeRF": "3d-vision",
    "ViT": "vision-transformers",
    "KAN": "kolmogorov-arnold-networks",
    "SNN": "spiking-neural-networks",
    "MoE": "mixture-of-experts",
}

PASSING_BEFORE: tuple[tuple[str, ...], ...] = (
    ("unlike",),
    ("instead", "of"),
    ("rather", "than"),
    ("other", "than"),
    ("apart", "from"),
    ("except",),
    ("beyond",),
)

SUFFIX_BLOCKERS = frozenset({"like", "free", "agnostic", "less"})
