"""The analyses behind the papers' figures, one suite each, on a run's own evaluation embedding.

* ``cosine_gold`` (ConPVP Fig. 4): cosine of every STS-B pair (split configurable, test by default)
  against its gold score; the figure shows the cosines min-max scaled to [0, 1], as the caption says.
* ``token_removal`` (ConPVP Fig. 5, after Yan et al. 2021): the STS average (the configured STS tasks,
  scored exactly as the STS suite) after removing the k most frequent tokens from every sentence, for
  each k. Frequencies are counted with the run's tokenizer on the STS-B test split, as the caption says.
  A sentence is tokenised, the removed pieces dropped, the rest detokenised and encoded with the
  method's own protocol (templates included); sentences without a removed piece are left as they are.
* ``tsne`` (ConPVP Fig. 6): 10 STS-B test pairs at each gold score 0, 3 and 5 (the same pairs for every
  run: drawn with the analysis seed), embedded and mapped to 2-D with t-SNE.
* ``align_uniform`` (Wang & Isola 2020 as SimCSE/MoCoUTRL use it): on L2-normalised STS-B embeddings,
  alignment over pairs with gold > 4, uniformity over the distinct sentences of the configured splits.
* ``anisotropy`` (PromptBERT Knowl 4 / ``calc_anisotropy``): mean pairwise cosine, diagonal included, of
  the first N training-corpus sentences (lowercased, whitespace-split, cut to 32 words as PromptBERT
  did) under the run's embedding, under the static token embedding average (word embeddings only,
  special tokens included, as ``--embedding_only``), and over the whole static token embedding matrix.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from sentrepro.data.benchmarks.sts import read_sts_benchmark
from sentrepro.evaluation import geometry
from sentrepro.evaluation.sts import correlations, cosine_rows
from sentrepro.evaluation.job import SuiteJob, source_root, write_metrics


def _stsb_path(manifest: Path, sts_cfg: dict, split: str) -> Path:
    return source_root(manifest) / sts_cfg.get("stsb_dir", "STS/STSBenchmark") / f"sts-{split}.csv"


def _read_stsb(job: SuiteJob, manifest: Path, split: str):
    path = _stsb_path(manifest, job.settings["sts"], split)
    pairs = read_sts_benchmark(path, split=split, check_counts=job.check_counts)
    job.add_data_files([path], f"STS-B {split}")
    return pairs


def _sts_extra(job: SuiteJob) -> dict:
    return {"variant": job.settings["sts"]["variant"]}


# ------------------------------------------------------------------------------------------------


def run_cosine_gold(job: SuiteJob, manifest: Path, out: Path) -> dict:
    split = job.settings["split"]
    pairs = _read_stsb(job, manifest, split)
    vectors = job.embed_groups({"s1": [p.s1 for p in pairs], "s2": [p.s2 for p in pairs]})
    cosine = cosine_rows(vectors["s1"], vectors["s2"])
    gold = np.array([p.score for p in pairs])
    scaled = geometry.scale_unit_interval(cosine)
    results = {"spearman": {"reported": 100 * correlations(cosine, gold)["spearman"], "n": len(pairs)}}
    for low in range(5):
        in_bin = (gold >= low) & ((gold < low + 1) if low < 4 else (gold <= 5))
        results[f"scaled_mean_gold_{low}_{low + 1}"] = {"reported": float(scaled[in_bin].mean()) if in_bin.any()
                                                         else None, "n": int(in_bin.sum())}
    data = {"split": split, "gold": gold.tolist(), "cosine": cosine.astype(float).tolist(),
            "scaled": scaled.tolist()}
    return write_metrics(job, out, results, extra={**_sts_extra(job), "pairs": data},
                         aggregation="per pair; scaled = min-max over this run's cosines; spearman x100")


def run_token_removal(job: SuiteJob, manifest: Path, out: Path) -> dict:
    from sentrepro.evaluation.sts_suite import load_sts_tasks, score_tasks

    sts_cfg = job.settings["sts"]
    ks = sorted(set(job.settings["ks"]))
    tasks, used = load_sts_tasks(source_root(manifest), sts_cfg, check_counts=job.check_counts)
    job.add_data_files(used, "STS data file")
    frequency_pairs = _read_stsb(job, manifest, "test")
    tokenize = job.tokenizer.tokenize
    counts = geometry.token_counts(tokenize(s) for p in frequency_pairs for s in (p.s1, p.s2))
    ranked = geometry.most_frequent(counts, max(ks))
    sentences = list(dict.fromkeys(s for subsets in tasks.values() for pairs in subsets.values()
                                   for p in pairs for s in (p.s1, p.s2)))
    pieces = {s: tokenize(s) for s in sentences}
    variants: dict[int, dict[str, str]] = {}
    for k in ks:
        removed = set(ranked[:k])
        variants[k] = {s: _without(job.tokenizer, s, pieces[s], removed) for s in sentences}
    all_variants = list(dict.fromkeys(v for mapping in variants.values() for v in mapping.values()))
    vectors = job.embed(all_variants)  # every distinct (original or reduced) sentence once
    row = {text: index for index, text in enumerate(all_variants)}
    per_k = {}
    for k in ks:
        mapping = variants[k]
        scores = score_tasks(tasks, lambda batch, m=mapping: vectors[[row[m[s]] for s in batch]])
        per_k[k] = {task: scores[task]["reported"] for task in scores}
    results = {f"k{k}": {"reported": per_k[k]["avg"], "k": k} for k in ks}
    data = {"ks": ks, "avg": [per_k[k]["avg"] for k in ks], "per_task": {str(k): per_k[k] for k in ks},
            "removed_tokens": ranked, "token_counts": {t: counts[t] for t in ranked},
            "frequency_source": "STS-B test split, run's tokenizer"}
    return write_metrics(job, out, results, extra={**_sts_extra(job), "curve": data},
                         aggregation="STS average (as the sts suite) per k removed tokens")


def _without(tokenizer, sentence: str, pieces: list[str], removed: set[str]) -> str:
    kept = geometry.without_tokens(pieces, removed)
    if len(kept) == len(pieces):
        return sentence
    return tokenizer.convert_tokens_to_string(kept)


def run_tsne(job: SuiteJob, manifest: Path, out: Path) -> dict:
    cfg = job.settings
    pairs = _read_stsb(job, manifest, "test")
    scores = cfg["gold_scores"]
    groups = geometry.pairs_at_scores([p.score for p in pairs], scores, cfg["pairs_per_score"],
                                      cfg["seed"])
    points = []
    pair_id = 0
    for gold, indices in zip(scores, groups):
        for index in indices:
            for side, text in enumerate((pairs[index].s1, pairs[index].s2)):
                points.append({"pair": pair_id, "gold": gold, "side": side, "stsb_index": index, "text": text})
            pair_id += 1
    vectors = job.embed([p["text"] for p in points])
    coords = geometry.tsne_coordinates(vectors, cfg["seed"], cfg["perplexity"])
    for point, (x, y) in zip(points, coords):
        point["x"], point["y"] = float(x), float(y)
    pair_cosine = cosine_rows(vectors[0::2], vectors[1::2])
    results = {}
    for group, gold in enumerate(scores):
        n = len(groups[group])
        start = sum(len(g) for g in groups[:group])
        results[f"pair_cosine_gold_{gold}"] = {"reported": float(pair_cosine[start:start + n].mean()), "n": n}
    return write_metrics(job, out, results, extra={**_sts_extra(job), "points": points},
                         aggregation="t-SNE coordinates per sentence; reported = mean pair cosine per gold group")


def run_align_uniform(job: SuiteJob, manifest: Path, out: Path) -> dict:
    cfg = job.settings
    threshold = cfg["positive_threshold"]
    pairs = [p for split in cfg["splits"] for p in _read_stsb(job, manifest, split)]
    positives = [p for p in pairs if p.score > threshold]
    sentences = sorted({s for p in pairs for s in (p.s1, p.s2)})
    vectors = job.embed_groups({"all": sentences, "s1": [p.s1 for p in positives],
                                "s2": [p.s2 for p in positives]})
    results = {
        "align": {"reported": geometry.alignment(vectors["s1"], vectors["s2"]), "n_pairs": len(positives)},
        "uniform": {"reported": geometry.uniformity(vectors["all"]), "n_sentences": len(sentences)},
    }
    return write_metrics(job, out, results, extra=_sts_extra(job),
                         aggregation=f"L2-normalised; align over STS-B pairs with gold > {threshold} (alpha 2), "
                                     "uniform over distinct sentences (t 2)")


def run_anisotropy(job: SuiteJob, corpus: Path, out: Path) -> dict:
    cfg = job.settings
    sentences = corpus_sentences(corpus, cfg["n_sentences"], cfg["max_words"])
    contextual = job.embed(sentences)
    static = static_token_average(job, sentences)
    table = job.model.encoder.get_input_embeddings().weight.detach().float().cpu().numpy()
    results = {
        "sentence": {"reported": geometry.mean_pairwise_cosine(contextual), "n": len(sentences)},
        "static_sentence": {"reported": geometry.mean_pairwise_cosine(static), "n": len(sentences)},
        "static_token": {"reported": geometry.mean_pairwise_cosine(table), "n": int(table.shape[0])},
    }
    return write_metrics(job, out, results,
                         aggregation="mean pairwise cosine, diagonal included (PromptBERT cal_avg_cosine)")


def corpus_sentences(corpus: Path, n_sentences: int, max_words: int) -> list[str]:
    """The first ``n_sentences`` lines, lowercased, whitespace-split, cut to ``max_words`` words (PromptBERT)."""
    sentences = []
    with open(corpus, encoding="utf-8") as handle:
        for line in handle:
            if len(sentences) >= n_sentences:
                break
            sentences.append(" ".join(line.rstrip("\n").lower().split()[:max_words]))
    if not sentences:
        raise ValueError(f"{corpus}: no sentences to measure anisotropy on")
    return sentences


@torch.no_grad()
def static_token_average(job: SuiteJob, sentences: list[str]) -> np.ndarray:
    """Attention-masked mean of the word embeddings alone (special tokens kept), length-sorted batches. -> (N, H)"""
    embeddings = job.model.encoder.get_input_embeddings()
    order = sorted(range(len(sentences)), key=lambda i: len(sentences[i].split()))
    batch_size = job.settings["batch_size"]
    out = np.zeros((len(sentences), embeddings.weight.shape[1]), dtype=np.float32)
    for start in range(0, len(order), batch_size):
        rows = order[start:start + batch_size]
        inputs = job.tokenizer([sentences[i] for i in rows], padding=True, truncation=True, return_tensors="pt")
        ids = inputs["input_ids"].to(job.device)
        mask = inputs["attention_mask"].to(job.device).unsqueeze(-1).float()  # (B, L, 1)
        vectors = (embeddings(ids).float() * mask).sum(1) / mask.sum(1).clamp_min(1.0)  # (B, H)
        out[rows] = vectors.cpu().numpy()
    return out
