"""Evaluation protocols that score frozen sentence embeddings.

The protocols take numpy embeddings (float32, shape (N, H)) plus integer labels or gold scores, so they
are independent of the encoder that produced the vectors:

* ``sts``, ``sts_suite`` – unsupervised STS scoring (cosine + Spearman, SimCSE's "all" setting).
* ``item_scores``    – every STS pair's cosine and gold score, kept beside ``sts.json`` (the verdicts' bootstrap).
* ``probe``          – the SentEval logistic-regression probe (one ``nn.Linear`` + SentEval's training loop).
* ``transfer``       – the seven SentEval transfer tasks (nested CV, fixed dev, CV-selected L2 on a fixed test).
* ``fewshot``        – few-shot transfer (16 labelled examples per class, 10 seeds; ConPVP Figure 7).
* ``clustering``     – KMeans with Hungarian accuracy and NMI (ConPVP Table 6).
* ``classification`` – Web-of-Science classification with a probe (MoCoUTRL Tables 2–3).
* ``geometry``       – alignment, uniformity, anisotropy, token frequencies, t-SNE (the papers' analyses).

The workflow side: ``suites`` (``sentrepro evaluate
<suite>``: load a run, encode its data once, run a protocol, write the metrics file), ``analyses`` (the
figure-backing suites), ``figures`` (PNG/PDF), ``subsets`` (recorded ``max_samples`` cuts). Which suites and
figures run for which runs is planned in :mod:`sentrepro.planning.evaluations`.
"""
