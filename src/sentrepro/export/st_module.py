"""The sentence-transformers module of an exported run (``sentrepro export``), copied into the folder.

``sentrepro export`` writes this file into the exported folder as ``sentrepro_st.py`` and names
``sentrepro_st.SentreproEncoder`` in the folder's ``modules.json``; ``SentenceTransformer(folder,
trust_remote_code=True)`` imports it from the folder (sentence-transformers' custom-module mechanism, through
transformers' dynamic modules). It needs no copy of this repository: the folder carries the project's own
embedding code (the static-import closure of the method's module, ``sentrepro_code/``) under a package name
of its own, and this module loads the run exactly as evaluation does (``evaluation/job.py: load_for_eval``):
the tokenizer and encoder from ``encoder/``, the method class with the run's parameters, its extra modules
(prompt vectors, heads) from the saved safetensors, and then ``Method.eval_inputs`` / ``Method.embed`` with
``purpose="test"`` -- the same template, [MASK] readout, denoising, pooling and truncation the tables scored.
A data-fitted transform of the evaluation (BERT-whitening's kernel) is stored in the folder and applied after.

Only the standard library and torch are imported here, at import time (transformers' dynamic-module check
requires every top-level import to be installed).
"""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import torch

EXPORT_CONFIG = "sentrepro_export_config.json"
EXPORT_RECORD = "sentrepro_export.json"  # export.py writes it: every file's sha256 + provenance


def load_vendored(folder: Path, package: str):
    """Import the project code shipped in ``folder/<code_dir>`` as ``package`` (once per process)."""
    if package in sys.modules:
        return sys.modules[package]
    root = str(folder)
    sys.path.insert(0, root)
    try:
        return importlib.import_module(package)
    finally:
        sys.path.remove(root)


class SentreproEncoder(torch.nn.Module):
    """A sentrepro run as one sentence-transformers module: texts -> the evaluation's sentence vectors."""

    def __init__(self, folder: str):
        super().__init__()
        self.folder = Path(folder)
        self.export_config = json.loads((self.folder / EXPORT_CONFIG).read_text(encoding="utf-8"))
        cfg = self.export_config
        code = self.folder / cfg["code_dir"]
        package = cfg["package"]
        load_vendored(code, package)
        loader = importlib.import_module(f"{package}.encoder.load")
        module_name, _, class_name = cfg["implementation"].partition(":")
        method_class = getattr(importlib.import_module(f"{package}.{module_name}"), class_name)
        source = str(self.folder / cfg["model_dir"])
        tokenizer = loader.load_tokenizer(source)
        encoder = loader.load_encoder(source, cfg["family"], attention=cfg["attention"])
        self.method = method_class(cfg["params"], cfg["family"], tokenizer)
        self.model = self.method.build_model(encoder)
        if cfg["trained"]:
            self.model.load_extras(Path(source))
        self.model.eval()
        self.transform = None
        if cfg.get("transform"):
            from safetensors.torch import load_file

            self.transform = load_file(str(self.folder / cfg["transform"]["file"]))
            self.transform_dims = cfg["transform"]["dims"]
        self.purpose = cfg["purpose"]

    @staticmethod
    def load(path: str) -> "SentreproEncoder":
        return SentreproEncoder(path)

    def save(self, output_path: str, *args, **kwargs) -> None:
        """``SentenceTransformer.save``: this module never changes its weights, code or settings, so saving is
        copying the export's files into ``output_path``, a sub-folder of the saved model (sentence-transformers
        writes its own ``modules.json`` and config in the model folder, and looks for this module's code there,
        so this file goes there too). The export record is left out: its hashes describe the exported folder,
        and ``sentrepro audit`` must not vouch for a re-saved copy."""
        import shutil

        out = Path(output_path)
        if out.resolve() == self.folder.resolve():
            return
        shutil.copytree(self.folder, out, dirs_exist_ok=True, ignore=shutil.ignore_patterns(EXPORT_RECORD))
        shutil.copyfile(__file__, out.parent / Path(__file__).name)

    @property
    def tokenizer(self):
        return self.method.tokenizer

    def preprocess(self, inputs, prompt: str | None = None, **kwargs) -> dict:
        """Texts -> the method's evaluation inputs (template, [MASK] positions, lengths for denoising)."""
        if prompt:
            raise ValueError("a sentrepro export builds its own prompt/template; encode without prompt=")
        texts = [text if isinstance(text, str) else text[0] for text in inputs]
        return dict(self.method.eval_inputs(texts, self.purpose))

    def tokenize(self, texts, **kwargs) -> dict:
        return self.preprocess(texts)

    def forward(self, features: dict, **kwargs) -> dict:
        inputs = {k: v for k, v in features.items() if isinstance(v, torch.Tensor)}
        vectors = self.method.embed(self.model, inputs, self.purpose).float()
        if self.transform is not None:  # (x - mean) @ kernel[:, :dims], as evaluation's transform_embeddings
            kernel = self.transform["kernel"].to(vectors.device)
            if self.transform_dims is not None:
                kernel = kernel[:, : self.transform_dims]
            vectors = ((vectors.double() - self.transform["mean"].to(vectors.device)) @ kernel).float()
        features["sentence_embedding"] = vectors
        return features

    def get_sentence_embedding_dimension(self) -> int:
        if self.transform is not None and self.transform_dims is not None:
            return int(self.transform_dims)
        return int(self.model.hidden_size)
