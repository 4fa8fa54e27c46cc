"""A tiny model repository as the Hugging Face Hub serves it, for tests/http_server.py.

``hub_files`` lays a model directory out under the two endpoints ``fetch_model`` uses: revision info
(``/api/models/<repo>[/revision/<commit>]``, with every file's size, git blob id and, for weights, LFS
sha256, as ``HfApi.model_info(files_metadata=True)`` reads them) and file resolve
(``/<repo>/resolve/<commit>/<file>``). ``hub_cache`` writes the same files as a Hugging Face cache
(``models--<org>--<name>/{blobs,snapshots,refs}``), the layout of a site mirror.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

LFS_SUFFIXES = (".safetensors", ".bin", ".h5")
# Files a real repository also holds that a backbone does not need (never fetched).
EXTRAS = {"README.md": b"# tiny model\n", "pytorch_model.bin": b"pickled weights we prefer not to fetch",
          "tf_model.h5": b"tensorflow weights"}


def git_sha1(body: bytes) -> str:
    return hashlib.sha1(f"blob {len(body)}\0".encode() + body).hexdigest()


def model_bodies(model_dir: Path) -> dict[str, bytes]:
    """The repository's files: the model directory's, plus files a backbone does not need."""
    bodies = {p.name: p.read_bytes() for p in sorted(Path(model_dir).iterdir()) if p.is_file()}
    return {**bodies, **EXTRAS}


def revision_info(repo_id: str, commit: str, bodies: dict[str, bytes]) -> bytes:
    siblings = []
    for name, body in bodies.items():
        entry = {"rfilename": name, "size": len(body), "blobId": git_sha1(body)}
        if name.endswith(LFS_SUFFIXES):
            entry["lfs"] = {"sha256": hashlib.sha256(body).hexdigest(), "size": len(body), "pointerSize": 134}
        siblings.append(entry)
    return json.dumps({"id": repo_id, "modelId": repo_id, "sha": commit, "private": False,
                       "siblings": siblings}).encode()


def hub_files(repo_id: str, commit: str, bodies: dict[str, bytes], *, main: bool = True) -> dict[str, bytes]:
    """URL path -> body for one commit of ``repo_id`` (and the default branch's revision info if ``main``)."""
    info = revision_info(repo_id, commit, bodies)
    served = {f"/api/models/{repo_id}/revision/{commit}": info}
    if main:
        served[f"/api/models/{repo_id}"] = info
    served.update({f"/{repo_id}/resolve/{commit}/{name}": body for name, body in bodies.items()})
    return served


def hub_cache(root: Path, repo_id: str, commit: str, bodies: dict[str, bytes]) -> Path:
    """Write ``bodies`` as the Hugging Face cache does; return the repository's cache folder."""
    repo = Path(root) / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (repo / "blobs").mkdir(exist_ok=True)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(commit)
    for name, body in bodies.items():
        etag = hashlib.sha256(body).hexdigest() if name.endswith(LFS_SUFFIXES) else git_sha1(body)
        (repo / "blobs" / etag).write_bytes(body)
        (snapshot / name).symlink_to(Path("..") / ".." / "blobs" / etag)
    return repo
