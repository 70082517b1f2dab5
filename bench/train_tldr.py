"""Fit the offline TL;DR ranker on SciTLDR train and write `pipeline/offline/tldr_model.json`.

    python -m bench.train_tldr                  # fit on all of train, write the model file
    python -m bench.train_tldr --cv 5           # 5-fold cross-validation on train, no writing
    python -m bench.train_tldr --check          # fit and compare with the shipped file
    python -m bench.train_tldr --data PATH --out PATH --limit N

Needs only numpy (which rouge-score brings; the `train` extra names it). Every candidate the
extractor would
choose from (`pipeline.offline.tldr.candidate_table`: each sentence's compressed variants,
restricted, as at inference, to the best stand-alone tier of its paper) is labelled with
its ROUGE-1 F1 against the paper's human TL;DRs (the rouge-score tokenizer and Porter stemmer,
best over references). A linear ranker is fitted listwise: per paper, softmax over the
candidates' scores towards softmax(ROUGE-1 / TEMPERATURE), cross-entropy plus L2, with
L-BFGS from zero. Dense features are standardized for the fit and the weights mapped back;
lexical indicators seen in fewer than MIN_COUNT papers are left out. Everything is
deterministic (no sampling but the fixed-seed fold split); weights are rounded to 4 decimals
and written with sorted keys, so a rerun gives the same bytes.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from pipeline.offline import tldr
from pipeline.testing.rouge_labels import best_rouge1

REPO_ROOT = Path(__file__).resolve().parents[1]
DATA_CANDIDATES = [
    REPO_ROOT.parent / "shared" / "data" / "scitldr",
    REPO_ROOT.parents[1] / "shared" / "data" / "scitldr",
]
TEMPERATURE = 0.05
L2_DENSE = 1.0
L2_LEXICAL = 10.0
MIN_COUNT = 20
DECIMALS = 4
SEED = 0
MAX_ITER = 1000
LEXICAL = "w1"


def default_data(name: str) -> Path:
    for folder in DATA_CANDIDATES:
        if (folder / name).exists():
            return folder / name
    return DATA_CANDIDATES[0] / name


# --- data -------------------------------------------------------------------------------------


def load_groups(path: Path, limit: int | None = None) -> list[dict]:
    """Per paper: its candidates (best tier only), their labels, the references."""
    groups = []
    with path.open(encoding="utf-8") as fh:
        for k, line in enumerate(fh):
            if limit is not None and k >= limit:
                break
            paper = json.loads(line)
            cands = tldr.candidate_table(" ".join(paper["source"]))
            if not cands:
                continue
            tier = min(c.tier for c in cands)
            cands = [c for c in cands if c.tier == tier]
            labels = [best_rouge1(c.text, paper["target"]) for c in cands]
            groups.append(
                {"id": paper["paper_id"], "cands": cands, "labels": labels, "refs": paper["target"]}
            )
    return groups


def design(groups: list[dict], dense_names: list[str], lexicon: dict[str, int]) -> np.ndarray:
    """Matrix of all candidates (dense features, then lexical indicators); a few hundred
    columns at most, so a dense array."""
    d = len(dense_names)
    dense_index = {name: j for j, name in enumerate(dense_names)}
    n = sum(len(g["cands"]) for g in groups)
    x = np.zeros((n, d + len(lexicon)))
    r = 0
    for g in groups:
        for c in g["cands"]:
            for name, v in c.dense.items():
                j = dense_index.get(name)
                if v and j is not None:
                    x[r, j] = v
            for name in c.lexical:
                j = lexicon.get(name)
                if j is not None:
                    x[r, d + j] = 1.0
            r += 1
    return x


def vocabulary(groups: list[dict], args) -> tuple[list[str], dict[str, int]]:
    dense = sorted({name for g in groups for c in g["cands"] for name in c.dense})
    kinds = tuple(k + ":" for k in args.lexical.split(",") if k)
    df: Counter[str] = Counter()
    for g in groups:
        df.update({name for c in g["cands"] for name in c.lexical if name.startswith(kinds)})
    lexical = sorted(name for name, k in df.items() if k >= args.min_count) if kinds else []
    return dense, {name: j for j, name in enumerate(lexical)}


# --- the listwise fit -------------------------------------------------------------------------


def fit(groups: list[dict], args) -> tuple[dict[str, float], dict[str, float]]:
    dense_names, lexicon = vocabulary(groups, args)
    x = design(groups, dense_names, lexicon)
    d = len(dense_names)
    sizes = np.array([len(g["cands"]) for g in groups])
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    group_of = np.repeat(np.arange(len(groups)), sizes)
    labels = np.concatenate([np.array(g["labels"], dtype=np.float64) for g in groups])
    # Target distribution per paper: softmax(label / T).
    z = labels / args.temperature
    z -= np.maximum.reduceat(z, starts)[group_of]
    q = np.exp(z)
    q /= np.add.reduceat(q, starts)[group_of]
    # Standardize the dense columns (the fit is invariant to per-paper constant shifts).
    mean, std = x[:, :d].mean(axis=0), x[:, :d].std(axis=0)
    std[std < 1e-9] = 1.0
    xs = x.copy()
    xs[:, :d] = (x[:, :d] - mean) / std
    l2 = np.concatenate([np.full(d, args.l2_dense), np.full(len(lexicon), args.l2_lexical)])
    n_groups = len(groups)

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        s = xs @ w
        s = s - np.maximum.reduceat(s, starts)[group_of]
        e = np.exp(s)
        sums = np.add.reduceat(e, starts)
        log_p = s - np.log(sums)[group_of]
        p = e / sums[group_of]
        value = -(q * log_p).sum() / n_groups + 0.5 * (l2 * w * w).sum() / n_groups
        grad = xs.T @ (p - q) / n_groups + l2 * w / n_groups
        return float(value), grad

    w = lbfgs(loss, np.zeros(xs.shape[1]), args.max_iter)
    dense_w = w[:d] / std
    dense = {name: round(float(v), DECIMALS) for name, v in zip(dense_names, dense_w, strict=True)}
    lex_names = sorted(lexicon, key=lexicon.get)
    lexical = {
        name: round(float(v), DECIMALS)
        for name, v in zip(lex_names, w[d:], strict=True)
        if round(float(v), DECIMALS) != 0.0
    }
    dense = {k: v for k, v in dense.items() if v != 0.0}
    return dense, lexical


def lbfgs(f, x: np.ndarray, max_iter: int, memory: int = 10, gtol: float = 1e-7) -> np.ndarray:
    """Minimize a smooth convex f (returning value and gradient) with L-BFGS and a backtracking
    (Armijo) line search, from x; deterministic (no randomness, fixed iteration order)."""
    fx, g = f(x)
    steps: list[tuple[np.ndarray, np.ndarray, float]] = []  # (s, y, 1 / y.s)
    for _ in range(max_iter):
        if np.max(np.abs(g)) < gtol:
            break
        # Two-loop recursion: d = -H g.
        q = g.copy()
        alphas = []
        for s, y, rho in reversed(steps):
            a = rho * float(s @ q)
            q -= a * y
            alphas.append(a)
        if steps:
            s, y, _rho = steps[-1]
            q *= float(s @ y) / float(y @ y)
        else:
            q /= max(1.0, float(np.linalg.norm(g)))
        for (s, y, rho), a in zip(steps, reversed(alphas), strict=True):
            q += s * (a - rho * float(y @ q))
        d = -q
        slope = float(g @ d)
        if slope >= 0:  # not a descent direction: restart from the gradient
            steps.clear()
            d, slope = -g, -float(g @ g)
        t = 1.0
        while True:
            x_new = x + t * d
            f_new, g_new = f(x_new)
            if f_new <= fx + 1e-4 * t * slope or t < 1e-12:
                break
            t *= 0.5
        s, y = x_new - x, g_new - g
        sy = float(s @ y)
        if sy > 1e-12:
            steps.append((s, y, 1.0 / sy))
            del steps[:-memory]
        done = abs(fx - f_new) <= 1e-13 * max(1.0, abs(fx))
        x, fx, g = x_new, f_new, g_new
        if done:
            break
    return x


def pick(group: dict, dense: dict[str, float], lexical: dict[str, float]) -> int:
    best = max(
        range(len(group["cands"])),
        key=lambda i: (
            round(tldr.score(group["cands"][i], dense, lexical), 9),
            -group["cands"][i].sentence,
        ),
    )
    return best


def cross_validate(groups: list[dict], args) -> dict[str, float]:
    order = list(range(len(groups)))
    random.Random(SEED).shuffle(order)
    folds = [sorted(order[k :: args.cv]) for k in range(args.cv)]
    picked = [0.0] * len(groups)
    texts = [""] * len(groups)
    for k, test in enumerate(folds):
        test_set = set(test)
        train = [g for i, g in enumerate(groups) if i not in test_set]
        dense, lexical = fit(train, args)
        for i in test:
            j = pick(groups[i], dense, lexical)
            picked[i] = groups[i]["labels"][j]
            texts[i] = groups[i]["cands"][j].text
        print(f"  fold {k + 1}/{args.cv}: R1 {100 * np.mean([picked[i] for i in test]):.2f}")
    oracle = np.mean([max(g["labels"]) for g in groups])
    from pipeline.evaluation.rouge import score_rouge

    scores = score_rouge(texts, [g["refs"] for g in groups])
    return {
        "cv_rouge1": 100 * float(np.mean(picked)),
        "oracle_rouge1": 100 * float(oracle),
        "cv": scores,
    }


def model_json(dense: dict[str, float], lexical: dict[str, float], args, n: int) -> str:
    data = {
        "about": (
            "Offline TL;DR ranker (pipeline/offline/tldr.py): linear scores over dense and "
            "lexical features; written by `python -m bench.train_tldr`, do not edit."
        ),
        "trained_on": f"SciTLDR train ({n} papers)",
        "params": {
            "temperature": args.temperature,
            "l2_dense": args.l2_dense,
            "l2_lexical": args.l2_lexical,
            "min_count": args.min_count,
            "max_iter": args.max_iter,
            "lexical": args.lexical,
        },
        "dense": dense,
        "lexical": lexical,
    }
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--data", type=Path, default=default_data("train.jsonl"))
    parser.add_argument("--out", type=Path, default=tldr.MODEL_PATH)
    parser.add_argument("--limit", type=int, default=None, help="only the first N papers")
    parser.add_argument("--cv", type=int, default=0, help="k-fold cross-validation, no writing")
    parser.add_argument("--check", action="store_true", help="compare with --out, no writing")
    parser.add_argument("--temperature", type=float, default=TEMPERATURE)
    parser.add_argument("--l2-dense", type=float, default=L2_DENSE)
    parser.add_argument("--l2-lexical", type=float, default=L2_LEXICAL)
    parser.add_argument("--min-count", type=int, default=MIN_COUNT)
    parser.add_argument("--max-iter", type=int, default=MAX_ITER)
    parser.add_argument(
        "--lexical", default=LEXICAL, help="lexical kinds used: w1, w2, s (comma-separated)"
    )
    args = parser.parse_args(argv)

    groups = load_groups(args.data, args.limit)
    if args.cv:
        result = cross_validate(groups, args)
        best, mean = result["cv"]["best"], result["cv"]["mean"]
        print(
            f"{args.cv}-fold CV on {len(groups)} papers: R1 {result['cv_rouge1']:.2f} "
            f"(oracle over the same candidates {result['oracle_rouge1']:.2f}); rouge-score "
            f"best R1/R2/RL {best['rouge1']:.2f}/{best['rouge2']:.2f}/{best['rougeL']:.2f}, "
            f"mean {mean['rouge1']:.2f}/{mean['rouge2']:.2f}/{mean['rougeL']:.2f}"
        )
        return 0
    dense, lexical = fit(groups, args)
    text = model_json(dense, lexical, args, len(groups))
    if args.check:
        same = args.out.exists() and args.out.read_text(encoding="utf-8") == text
        print("model file is up to date" if same else f"{args.out} differs from a fresh fit")
        return 0 if same else 1
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}: {len(dense)} dense + {len(lexical)} lexical weights")
    return 0


if __name__ == "__main__":
    sys.exit(main())
