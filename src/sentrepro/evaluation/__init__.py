"""Evaluation protocols that score frozen sentence embeddings.

Every function here takes numpy embeddings (float32, shape (N, H)) and integer labels, so the
protocols are independent of the encoder that produced the vectors:

* ``probe``          – the SentEval logistic-regression probe (one ``nn.Linear`` + SentEval's training loop).
* ``transfer``       – the seven SentEval transfer tasks (nested CV, fixed dev, CV-selected L2 on a fixed test).
* ``fewshot``        – few-shot transfer (16 labelled examples per class, 10 seeds; ConPVP Figure 7).
* ``clustering``     – KMeans with Hungarian accuracy and NMI (ConPVP Table 6).
* ``classification`` – Web-of-Science classification with a probe (MoCoUTRL Tables 2–3).
"""
