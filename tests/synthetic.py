"""Synthetic but realistic research abstracts for fault, limit and resume tests (seeded, stable).

Each abstract has a background sentence, a method sentence naming a made-up system, one to
three result sentences with numbers (so the claims stage has something to ground), and a
closing sentence; wording, numbers, datasets and lengths vary with the seed.
"""

from __future__ import annotations

import random
from pathlib import Path

_SYLLABLES = [
    "ka",
    "ro",
    "vi",
    "len",
    "tor",
    "mi",
    "sa",
    "quo",
    "zen",
    "dra",
    "pel",
    "nu",
    "gar",
    "fi",
]
_TASKS = [
    ("graph neural networks", "node classification", ["Cora", "PubMed", "ogbn-arxiv"]),
    ("diffusion models", "image generation", ["ImageNet 256x256", "CIFAR-10", "FFHQ"]),
    ("large language models", "mathematical reasoning", ["GSM8K", "MATH", "AIME 2024"]),
    ("reinforcement learning", "continuous control", ["MuJoCo", "DeepMind Control Suite", "D4RL"]),
    ("vision transformers", "image classification", ["ImageNet-1k", "CIFAR-100", "iNaturalist"]),
    ("federated learning", "personalized prediction", ["FEMNIST", "Shakespeare", "StackOverflow"]),
    (
        "contrastive learning",
        "representation learning",
        ["STL-10", "ImageNet-100", "Tiny-ImageNet"],
    ),
    ("knowledge distillation", "model compression", ["GLUE", "SQuAD", "ImageNet-1k"]),
    ("state space models", "long-sequence modeling", ["Long Range Arena", "PG-19", "WikiText-103"]),
    (
        "retrieval-augmented generation",
        "open-domain question answering",
        ["Natural Questions", "TriviaQA", "HotpotQA"],
    ),
]
_METRICS = [
    ("accuracy", "%"),
    ("F1", "points"),
    ("AUROC", "%"),
    ("success rate", "%"),
    ("exact match", "%"),
]
_BACKGROUND = [
    "{Area} have become a standard tool for {task}, yet they remain brittle under distribution shift.",
    "Despite rapid progress, {task} with {area} still requires large amounts of labeled data.",
    "Scaling {area} to {task} is expensive, and existing methods trade accuracy for efficiency.",
    "A central open problem in {task} is how {area} should share information across examples.",
]
_METHOD = [
    "We propose {name}, a simple method that reweights training examples by their estimated difficulty.",
    "In this work we introduce {name}, which combines a lightweight adapter with a learned routing rule.",
    "We present {name}, a training objective that aligns intermediate representations across views.",
    "This paper introduces {name}, an approach that caches and reuses intermediate computations.",
]
_RESULTS = [
    "On {dataset}, {name} improves {metric} by {delta}{unit_sym} over {baseline}.",
    "{name} reaches {value}% {metric} on {dataset}, compared with {value2}% for {baseline}.",
    "Training with {name} is {speed}x faster than {baseline} while using {mem}% less memory.",
    "Across {k} benchmarks, {name} outperforms {baseline} in {wins} of {k} settings.",
]
_BASELINES = [
    "the strongest prior method",
    "standard fine-tuning",
    "LoRA",
    "the previous state of the art",
    "ERM",
]
_CLOSING = [
    "Our analysis further shows that the gains persist at larger scales.",
    "Ablations confirm that each component contributes to the final performance.",
    "We release code and trained models to support future research.",
    "These results suggest a practical path toward more reliable systems.",
]


def _name(rng: random.Random) -> str:
    parts = rng.sample(_SYLLABLES, rng.randint(2, 3))
    return "".join(parts).capitalize() + rng.choice(["", "Net", "-X", "Former", "++"])


def synthetic_abstract(rng: random.Random) -> str:
    """One abstract: background, method, 1-3 numeric results, closing."""
    area, task, datasets = rng.choice(_TASKS)
    name = _name(rng)
    sentences = [
        rng.choice(_BACKGROUND).format(area=area, Area=area[0].upper() + area[1:], task=task),
        rng.choice(_METHOD).format(name=name),
    ]
    for template in rng.sample(_RESULTS, rng.randint(1, 3)):
        metric, unit = rng.choice(_METRICS)
        value = round(rng.uniform(40, 95), 1)
        k = rng.randint(4, 12)
        sentences.append(
            template.format(
                name=name,
                dataset=rng.choice(datasets),
                metric=metric,
                delta=round(rng.uniform(0.5, 9.5), 2),
                unit_sym="%" if unit == "%" else f" {unit}",
                baseline=rng.choice(_BASELINES),
                value=value,
                value2=round(value - rng.uniform(1, 8), 1),
                speed=round(rng.uniform(1.2, 4.8), 1),
                mem=rng.randint(10, 60),
                k=k,
                wins=rng.randint(k // 2 + 1, k),
            )
        )
    sentences.append(rng.choice(_CLOSING))
    return " ".join(sentences)


def synthetic_abstracts(n: int, seed: int = 0) -> list[str]:
    """`n` distinct abstracts, the same for the same seed."""
    rng = random.Random(seed)
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < n:
        text = synthetic_abstract(rng)
        if text not in seen:
            seen.add(text)
            out.append(text)
    return out


def write_abstracts(path: Path, n: int, seed: int = 0) -> list[str]:
    """A .txt input file of `n` synthetic abstracts (blank-line separated); returns them."""
    texts = synthetic_abstracts(n, seed)
    path.write_text("\n\n".join(texts) + "\n", encoding="utf-8")
    return texts
