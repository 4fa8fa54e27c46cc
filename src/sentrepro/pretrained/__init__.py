"""Pretrained backbones as pinned, downloaded and verified inputs of the workflow.

``names``: which snapshot a backbone's config asks for (Hub id or local directory, revision).
``files``: which files of a repository a backbone needs (config, tokenizer, weights; safetensors first).
``listing``: where those files come from (the Hub's API, a site mirror, a local directory) and what
the source says their hashes are. ``fetch``: the ``fetch_model`` rule's work: download, verify, hold
to a pin or a first-use record, write ``MANIFEST.json``. ``snapshot``: what jobs load (offline).
"""
