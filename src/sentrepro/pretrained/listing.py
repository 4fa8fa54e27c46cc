"""Where a backbone's files come from, and what their source says about them.

Three sources, one shape (``Listing``: origin, location, repo id, commit, files):

* the Hugging Face Hub (``HF_ENDPOINT`` honoured), through ``huggingface_hub``: the revision-info
  endpoint resolves a revision to its commit and lists every file with its size and hash (the LFS
  sha256 of large files, the git blob id of small ones); each file is fetched from its resolve URL
  *at that commit*, so a moving branch cannot change what is fetched;
* a site mirror (``models.mirror``): a directory laid out as the Hub cache
  (``models--<org>--<name>/snapshots/<commit>/``, also under ``hub/``) whose blob names carry the
  same hashes, or as plain snapshots (``<org>/<name>/<commit>/``);
* a local directory or ``pkg://`` model: its files, no commit.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from sentrepro.data.download import backoff_delay, is_transient_status
from sentrepro.pretrained.names import COMMIT

LOG = logging.getLogger(__name__)

HUB_ORIGIN = "hub"
CACHE_ORIGIN = "mirror (Hugging Face cache layout)"
PLAIN_ORIGIN = "mirror (plain snapshots)"
LOCAL_ORIGIN = "local directory"
SHA256_HEX = 64


class ModelSourceError(RuntimeError):
    """A model cannot be listed: unknown repository or revision, missing mirror entry, no network."""


@dataclass(frozen=True)
class SourceFile:
    """One file of a model as its source lists it; ``sha256``/``git_sha1`` are the source's claims (or None)."""

    path: str
    url: str
    bytes: int | None = None
    sha256: str | None = None
    git_sha1: str | None = None


@dataclass(frozen=True)
class Listing:
    origin: str
    location: str
    repo_id: str | None
    commit: str | None
    files: dict[str, SourceFile]


def git_blob_sha1(path: Path) -> str:
    """The git object id of a file's content (``sha1("blob <size>\\0" + bytes)``), as the Hub lists small files."""
    digest = hashlib.sha1(f"blob {path.stat().st_size}\0".encode())
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def hub_endpoint() -> str:
    """``HF_ENDPOINT`` when set, else huggingface_hub's default endpoint."""
    from huggingface_hub import constants

    return (os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")


def hub_listing(repo_id: str, revision: str | None, *, retries: int = 5, backoff_s: float = 1.0,
                timeout_s: float = 60.0) -> Listing:
    """Resolve ``revision`` (None: the default branch) of a Hub model and list its files with their hashes."""
    from huggingface_hub import HfApi, hf_hub_url

    endpoint = hub_endpoint()
    what = f"{repo_id}@{revision or 'main'} on {endpoint}"
    info = _with_retries(lambda: HfApi(endpoint=endpoint).model_info(repo_id, revision=revision, files_metadata=True,
                                                                      timeout=timeout_s),
                         what, retries, backoff_s)
    commit = info.sha
    if not commit or not COMMIT.match(commit):
        raise ModelSourceError(f"{what}: the Hub answered without a commit hash ({commit!r})")
    if revision and commit != revision:
        raise ModelSourceError(f"{what}: the revision resolves to commit {commit}, not the pinned {revision}")
    files = {}
    for sibling in info.siblings or []:
        lfs = sibling.lfs
        files[sibling.rfilename] = SourceFile(
            sibling.rfilename, hf_hub_url(repo_id, sibling.rfilename, revision=commit, endpoint=endpoint),
            lfs["size"] if lfs else sibling.size, lfs["sha256"] if lfs else None, None if lfs else sibling.blob_id)
    LOG.info("%s: commit %s, %d files listed", what, commit, len(files))
    return Listing(HUB_ORIGIN, endpoint, repo_id, commit, files)


def _with_retries(call, what: str, retries: int, backoff_s: float):
    """Run ``call`` again after transient failures (network errors, HTTP 429/5xx), as downloads do."""
    from huggingface_hub.errors import (HfHubHTTPError, OfflineModeIsEnabled, RepositoryNotFoundError,
                                        RevisionNotFoundError)

    attempt = 0
    while True:
        try:
            return call()
        except OfflineModeIsEnabled as exc:
            raise ModelSourceError(f"{what}: HF_HUB_OFFLINE is set, but fetching a model needs the Hub (run "
                                   "fetch_model where the network is, or set models.mirror)") from exc
        except RevisionNotFoundError as exc:
            raise ModelSourceError(f"{what}: no such revision on the Hub (wrong pin?)") from exc
        except RepositoryNotFoundError as exc:
            raise ModelSourceError(f"{what}: no such model repository (or it is private/gated)") from exc
        except HfHubHTTPError as exc:
            status = exc.response.status_code if exc.response is not None else 0
            if not is_transient_status(status) or attempt >= retries:
                raise ModelSourceError(f"{what}: revision info failed: {exc}") from exc
            error = exc
        except (ConnectionError, TimeoutError, OSError) as exc:
            if attempt >= retries:
                raise ModelSourceError(f"{what}: gave up after {attempt + 1} attempts: {exc}") from exc
            error = exc
        except Exception as exc:  # httpx transport errors do not derive from OSError
            if type(exc).__module__.split(".")[0] not in ("httpx", "httpx2", "httpcore") or attempt >= retries:
                raise
            error = exc
        delay = backoff_delay(backoff_s, attempt)
        LOG.warning("%s: revision info failed (%s); attempt %d of %d in %.1f s", what, error, attempt + 2,
                    retries + 1, delay)
        time.sleep(delay)
        attempt += 1


def mirror_listing(mirror: Path, repo_id: str, commit: str | None) -> Listing:
    """List ``repo_id`` at ``commit`` (None: the mirror's only or default one) from a site mirror."""
    from huggingface_hub.file_download import repo_folder_name

    mirror = Path(mirror).expanduser()
    folder = repo_folder_name(repo_id=repo_id, repo_type="model")
    for repo_dir in (mirror / folder, mirror / "hub" / folder):
        if repo_dir.is_dir():
            if commit is None:
                ref = repo_dir / "refs" / "main"
                if not ref.is_file():
                    raise ModelSourceError(f"models.mirror: {ref} is missing; pin backbones.<name>.revision")
                commit = ref.read_text(encoding="utf-8").strip()
            return _directory_listing(CACHE_ORIGIN, repo_dir / "snapshots" / commit, repo_id, commit,
                                      blob_hashes=True)
    plain = mirror / repo_id
    if plain.is_dir():
        if commit is None:
            commits = sorted(p.name for p in plain.iterdir() if p.is_dir() and COMMIT.match(p.name))
            if len(commits) != 1:
                raise ModelSourceError(f"models.mirror: {plain} holds {len(commits)} commit directories "
                                       f"({', '.join(commits) or 'none'}); pin backbones.<name>.revision")
            commit = commits[0]
        return _directory_listing(PLAIN_ORIGIN, plain / commit, repo_id, commit, blob_hashes=False)
    raise ModelSourceError(f"models.mirror: {repo_id} is in none of {mirror / folder}, {mirror / 'hub' / folder}, "
                           f"{plain}; stage it there (README, 'Running on a SLURM cluster') or unset models.mirror")


def local_listing(directory: Path) -> Listing:
    """A local model directory's files (no commit)."""
    return _directory_listing(LOCAL_ORIGIN, Path(directory), None, None, blob_hashes=False)


def _directory_listing(origin: str, directory: Path, repo_id: str | None, commit: str | None, *,
                       blob_hashes: bool) -> Listing:
    """The top-level files of a snapshot directory, as file:// URLs.

    In the Hub cache layout a snapshot file links to ``blobs/<etag>``: a 64-hex name is the file's
    sha256 (LFS files), a 40-hex one its git blob id, and both are claims the fetch verifies.
    """
    if not directory.is_dir():
        raise ModelSourceError(f"{origin}: {directory} does not exist" + (f" (commit {commit})" if commit else ""))
    files = {}
    for path in sorted(p for p in directory.iterdir() if p.is_file() and not p.name.startswith(".")):
        sha256 = git_sha1 = None
        if blob_hashes and path.is_symlink():
            blob = Path(os.path.realpath(path)).name
            sha256 = blob if len(blob) == SHA256_HEX else None
            git_sha1 = blob if len(blob) == 40 else None
        files[path.name] = SourceFile(path.name, path.absolute().as_uri(), path.stat().st_size, sha256, git_sha1)
    return Listing(origin, str(directory), repo_id, commit, files)
