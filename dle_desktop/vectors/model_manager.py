"""Embedding model files: the default model downloaded on first use, or a local GGUF the user picks.

The default is Qwen3-Embedding-0.6B in Q8_0 from its public Hugging Face URL, saved in the data
folder's `models/`. A download:

- streams into `<name>.part` and reports progress through a callback;
- can be cancelled, either by cancelling the asyncio task or by setting a `threading.Event`
  (a GUI thread can hold one); the `.part` file stays;
- resumes from the `.part` file with an HTTP `Range` request (with `If-Range` when the server gave
  an ETag), after an interruption in the same call (`retries`) or in a later one;
- is verified before it becomes the model file: against `sha256` of the spec when it is pinned,
  otherwise against the `X-Linked-Etag` / `ETag` the server sent when that is a SHA-256 (Hugging
  Face sends the file's SHA-256 as `X-Linked-Etag`), otherwise the computed SHA-256 is recorded in
  `<name>.sha256` next to the file so a later `verify()` can check it;
- is renamed atomically (`os.replace`) only once complete and verified, so a model file is never
  partial.

Errors are `ModelError`s with messages for people: no network says so and that a local GGUF can
be chosen instead.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import re
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from dle_desktop.errors import DleError
from dle_desktop.fileio import fsync_dir, move_into_place, write_atomic
from dle_desktop.vectors.gguf_header import GGUF_MAGIC, GgufFormatError, read_gguf_info

if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)

#: The SHA-256 of the default model file, once pinned. Unknown when this was written (no network
#: here); while it is None the checksum comes from the server's X-Linked-Etag (see the module).
DEFAULT_MODEL_SHA256: str | None = None
DEFAULT_MODEL_URL = "https://huggingface.co/Qwen/Qwen3-Embedding-0.6B-GGUF/resolve/main/Qwen3-Embedding-0.6B-Q8_0.gguf"
LOCAL_MODEL_HINT = (
    "You can choose a local GGUF embedding model instead (--embedding-model PATH, or the app's embedding settings)."
)
_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")


class ModelError(DleError):
    """A model file could not be provided (download failed, checksum wrong, not a GGUF…)."""

    http_status = 503


class ModelDownloadCancelled(ModelError):
    """The download was cancelled; the `.part` file is kept for a later resume."""


class ModelChecksumError(ModelError):
    """The downloaded bytes do not match the expected SHA-256; the partial file was removed."""


@dataclass(frozen=True)
class ModelSpec:
    filename: str
    url: str
    sha256: str | None = None  # pinned checksum (lower-case hex)
    size: int | None = None  # expected size in bytes, when known
    description: str = ""


DEFAULT_MODEL = ModelSpec(
    filename="Qwen3-Embedding-0.6B-Q8_0.gguf",
    url=DEFAULT_MODEL_URL,
    sha256=DEFAULT_MODEL_SHA256,
    description="Qwen3-Embedding-0.6B (Q8_0, ~640 MB)",
)


@dataclass(frozen=True)
class DownloadProgress:
    downloaded: int  # bytes in the .part file so far
    total: int | None  # bytes of the whole file, when the server said
    resumed_from: int = 0  # bytes that were already there when this attempt started
    bytes_per_s: float = 0.0

    @property
    def fraction(self) -> float | None:
        return self.downloaded / self.total if self.total else None


ProgressCallback = Callable[[DownloadProgress], None]


def _sha_from_etag(value: str | None) -> str | None:
    if not value:
        return None
    v = value.strip()
    if v.startswith("W/"):
        v = v[2:]
    v = v.strip('"').lower()
    return v if _SHA256_RE.match(v) else None


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


class _Interrupted(Exception):
    """The connection broke after some bytes arrived: resumable."""


class ModelManager:
    """Model files under `models_dir`. `transport` lets tests route httpx elsewhere (they use a
    real loopback server instead); `timeout` bounds connecting and each read."""

    def __init__(
        self,
        models_dir: str | os.PathLike[str],
        *,
        timeout: float = 30.0,
        chunk_size: int = 1 << 20,
        retries: int = 3,
        retry_delay: float = 1.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.models_dir = Path(models_dir)
        self.timeout = timeout
        self.chunk_size = chunk_size
        self.retries = retries
        self.retry_delay = retry_delay
        self._transport = transport
        self._locks: dict[Path, asyncio.Lock] = {}
        self._thread_lock = threading.Lock()

    # -- paths and checks ----------------------------------------------------------------------

    def path_for(self, spec: ModelSpec = DEFAULT_MODEL) -> Path:
        return self.models_dir / spec.filename

    def part_path(self, spec: ModelSpec = DEFAULT_MODEL) -> Path:
        p = self.path_for(spec)
        return p.with_name(p.name + ".part")

    def is_available(self, spec: ModelSpec = DEFAULT_MODEL) -> bool:
        """True when the finished model file is there (it only ever appears complete and verified)."""
        p = self.path_for(spec)
        try:
            with open(p, "rb") as f:
                return f.read(4) == GGUF_MAGIC
        except OSError:
            return False

    def recorded_sha256(self, spec: ModelSpec = DEFAULT_MODEL) -> str | None:
        p = self.path_for(spec)
        try:
            value = p.with_name(p.name + ".sha256").read_text(encoding="ascii").split()[0].lower()
        except (OSError, IndexError, UnicodeDecodeError):
            return None
        return value if _SHA256_RE.match(value) else None

    def verify(self, spec: ModelSpec = DEFAULT_MODEL) -> bool:
        """Re-hash the model file and compare with the pinned or recorded SHA-256 (slow: reads it all)."""
        expected = spec.sha256 or self.recorded_sha256(spec)
        p = self.path_for(spec)
        if not p.is_file() or expected is None:
            return False
        return sha256_file(p) == expected

    def local_model(self, path: str | os.PathLike[str]) -> Path:
        """Check a GGUF the user picked: it exists, is a file, starts with the GGUF magic and has a
        readable header. Returns the resolved path; raises ModelError saying what is wrong."""
        p = Path(path).expanduser()
        if not p.exists():
            raise ModelError(f"the model file {p} does not exist")
        if not p.is_file():
            raise ModelError(f"{p} is not a file")
        try:
            with open(p, "rb") as f:
                magic = f.read(4)
        except OSError as exc:
            raise ModelError(f"the model file {p} cannot be read: {exc.strerror or exc}") from exc
        if magic != GGUF_MAGIC:
            raise ModelError(f"{p.name} is not a GGUF model file (GGUF files start with 'GGUF')")
        try:
            read_gguf_info(p)
        except GgufFormatError as exc:
            raise ModelError(str(exc)) from exc
        except OSError as exc:
            raise ModelError(f"the model file {p} cannot be read: {exc.strerror or exc}") from exc
        return p.resolve()

    # -- download ------------------------------------------------------------------------------

    async def ensure(
        self,
        spec: ModelSpec = DEFAULT_MODEL,
        *,
        progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> Path:
        """The model file, downloading it first if it is not there yet."""
        if self.is_available(spec):
            return self.path_for(spec)
        return await self.download(spec, progress=progress, cancel=cancel)

    def download_sync(
        self,
        spec: ModelSpec = DEFAULT_MODEL,
        *,
        progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> Path:
        """`download` for scripts and the CLI (runs its own event loop)."""
        return asyncio.run(self.download(spec, progress=progress, cancel=cancel))

    async def download(
        self,
        spec: ModelSpec = DEFAULT_MODEL,
        *,
        progress: ProgressCallback | None = None,
        cancel: threading.Event | None = None,
    ) -> Path:
        """Download `spec` into `models_dir` (resuming a `.part` file), verify it and move it into
        place. Raises ModelDownloadCancelled, ModelChecksumError or ModelError."""
        import httpx  # here: the window imports this module at start, and only a download needs it

        final = self.path_for(spec)
        with self._thread_lock:
            lock = self._locks.setdefault(final, asyncio.Lock())
        async with lock:
            if self.is_available(spec):
                return final
            self.models_dir.mkdir(parents=True, exist_ok=True)
            attempt = 0
            async with httpx.AsyncClient(
                transport=self._transport,
                follow_redirects=True,
                timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, 15.0)),
                headers={"User-Agent": "dle-desktop model manager"},
            ) as client:
                while True:
                    try:
                        return await self._attempt(client, spec, progress, cancel)
                    except _Interrupted as exc:
                        attempt += 1
                        if attempt > self.retries:
                            raise ModelError(
                                f"the download of {spec.filename} was interrupted ({exc}); "
                                f"{self._part_size(spec) / 1e6:.1f} MB are kept and the next attempt "
                                "resumes from there"
                            ) from None
                        log.info(
                            "download of %s interrupted (%s); resuming (attempt %d of %d)",
                            spec.filename,
                            exc,
                            attempt,
                            self.retries,
                        )
                        await asyncio.sleep(self.retry_delay)

    def partial_download(self, spec: ModelSpec = DEFAULT_MODEL) -> tuple[int, int | None] | None:
        """(bytes kept, total bytes if known) of an unfinished download that the next `download`
        resumes, or None when there is none to resume from."""
        have = self._part_size(spec)
        meta = self._read_meta(spec)
        if not have or not meta:  # without its notes a .part is started over, not resumed
            return None
        total = meta.get("total")
        return have, total if isinstance(total, int) else None

    def _part_size(self, spec: ModelSpec) -> int:
        try:
            return self.part_path(spec).stat().st_size
        except OSError:
            return 0

    def _read_meta(self, spec: ModelSpec) -> dict:
        p = self.part_path(spec).with_suffix(".part.json")
        try:
            meta = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return meta if isinstance(meta, dict) and meta.get("url") == spec.url else {}

    def _write_meta(self, spec: ModelSpec, meta: dict) -> None:
        p = self.part_path(spec).with_suffix(".part.json")
        p.write_text(json.dumps({"url": spec.url, **meta}), encoding="utf-8")

    def _clear_part(self, spec: ModelSpec) -> None:
        part = self.part_path(spec)
        part.unlink(missing_ok=True)
        part.with_suffix(".part.json").unlink(missing_ok=True)

    async def _attempt(
        self,
        client: httpx.AsyncClient,
        spec: ModelSpec,
        progress: ProgressCallback | None,
        cancel: threading.Event | None,
    ) -> Path:
        import httpx

        part = self.part_path(spec)
        have = self._part_size(spec)
        meta = self._read_meta(spec)
        if have and not meta:  # a .part from another URL or without its notes: start over
            self._clear_part(spec)
            have = 0
        headers = {"Accept-Encoding": "identity"}
        if have:
            headers["Range"] = f"bytes={have}-"
            if meta.get("validator"):
                headers["If-Range"] = meta["validator"]
        if cancel is not None and cancel.is_set():
            raise ModelDownloadCancelled(f"the download of {spec.filename} was cancelled")
        try:
            async with client.stream("GET", spec.url, headers=headers) as resp:
                return await self._receive(resp, spec, part, have, meta, progress, cancel)
        except (ModelError, _Interrupted):
            raise
        except httpx.TimeoutException as exc:
            if self._part_size(spec) > have:
                raise _Interrupted("the server stopped sending") from exc
            raise ModelError(
                f"the model server did not answer in time ({type(exc).__name__}) while downloading "
                f"{spec.filename}. {LOCAL_MODEL_HINT}"
            ) from exc
        except (httpx.ConnectError, httpx.UnsupportedProtocol, httpx.LocalProtocolError) as exc:
            host = httpx.URL(spec.url).host or spec.url
            raise ModelError(
                f"cannot reach {host} to download {spec.filename}: there seems to be no network "
                f"connection ({exc}). {LOCAL_MODEL_HINT}"
            ) from exc
        except (httpx.RemoteProtocolError, httpx.ReadError, httpx.NetworkError) as exc:
            raise _Interrupted(f"{type(exc).__name__}: {exc}") from exc

    async def _receive(
        self,
        resp: httpx.Response,
        spec: ModelSpec,
        part: Path,
        have: int,
        meta: dict,
        progress: ProgressCallback | None,
        cancel: threading.Event | None,
    ) -> Path:
        import httpx

        status = resp.status_code
        if status == 416 and have:
            # Nothing left to send: the .part is probably complete already.
            total: int | None = meta.get("total")
            if total == have:
                return self._finish(spec, part, total, meta.get("expected_sha256"), None)
            self._clear_part(spec)
            raise _Interrupted("the server refused to resume; starting over")
        if status in (401, 403):
            raise ModelError(f"the model server refused access to {spec.filename} (HTTP {status})")
        if status == 404:
            raise ModelError(f"the model file was not found on the server (HTTP 404): {spec.url}")
        if status >= 500 or status == 429:
            raise ModelError(
                f"the model server answered HTTP {status} for {spec.filename}; try again later. {LOCAL_MODEL_HINT}"
            )
        if status not in (200, 206):
            raise ModelError(f"unexpected answer from the model server: HTTP {status}")

        expected = spec.sha256
        for r in [*resp.history, resp]:
            expected = expected or _sha_from_etag(r.headers.get("x-linked-etag"))
        expected = expected or _sha_from_etag(resp.headers.get("etag"))

        start = 0
        total = None
        if status == 206:
            m = re.match(r"bytes (\d+)-(\d+)/(\d+|\*)", resp.headers.get("content-range", ""))
            if not m or int(m.group(1)) != have:
                self._clear_part(spec)
                raise _Interrupted("the server resumed at the wrong place; starting over")
            start = have
            total = int(m.group(3)) if m.group(3) != "*" else None
        else:
            length = resp.headers.get("content-length")
            total = int(length) if length and length.isdigit() else None
        if total is None:
            total = spec.size or meta.get("total")
        if expected is None and start and meta.get("expected_sha256"):
            expected = meta["expected_sha256"]
        validator = resp.headers.get("etag") or resp.headers.get("last-modified") or ""
        if validator.startswith("W/"):
            validator = ""  # weak validators may not be used with If-Range
        self._write_meta(spec, {"total": total, "validator": validator, "expected_sha256": expected})

        if total is not None:
            free = shutil.disk_usage(self.models_dir).free
            if total - start > free:
                raise ModelError(
                    f"not enough disk space for {spec.filename}: {(total - start) / 1e6:.0f} MB needed, "
                    f"{free / 1e6:.0f} MB free in {self.models_dir}"
                )

        hasher = hashlib.sha256()
        mode = "r+b" if start else "wb"
        if start:  # resuming: what is on disk already counts (hashed off the loop: it can be hundreds of MB)
            await asyncio.to_thread(_hash_into, hasher, part)
        done = start
        t0 = time.monotonic()
        if progress is not None:
            progress(DownloadProgress(done, total, start))
        try:
            with open(part, mode) as f:  # noqa: ASYNC230 - one open for the whole stream; chunks are written as they arrive
                f.seek(start)
                f.truncate()
                try:
                    async for chunk in resp.aiter_bytes(self.chunk_size):
                        if cancel is not None and cancel.is_set():
                            raise ModelDownloadCancelled(
                                f"the download of {spec.filename} was cancelled; "
                                f"{done / 1e6:.1f} MB are kept for a later resume"
                            )
                        f.write(chunk)
                        hasher.update(chunk)
                        done += len(chunk)
                        if progress is not None:
                            elapsed = time.monotonic() - t0
                            progress(
                                DownloadProgress(done, total, start, (done - start) / elapsed if elapsed > 0 else 0.0)
                            )
                except (httpx.RemoteProtocolError, httpx.ReadError, httpx.NetworkError, httpx.ReadTimeout) as exc:
                    f.flush()
                    raise _Interrupted(f"connection lost after {done / 1e6:.1f} MB: {type(exc).__name__}") from exc
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:
            raise ModelError(f"cannot write {part}: {exc.strerror or exc}") from exc
        if total is not None and done != total:
            if done < total:
                raise _Interrupted(f"the server sent {done} of {total} bytes")
            self._clear_part(spec)
            raise ModelError(f"the server sent more bytes than announced for {spec.filename} ({done} > {total})")
        return self._finish(spec, part, done, expected, hasher.hexdigest())

    def _finish(self, spec: ModelSpec, part: Path, size: int, expected: str | None, actual: str | None) -> Path:
        if actual is None:
            actual = sha256_file(part)
        if expected is not None and actual != expected:
            self._clear_part(spec)
            raise ModelChecksumError(
                f"the downloaded {spec.filename} is corrupt: its SHA-256 is {actual}, "
                f"expected {expected}. The partial file was removed; try again."
            )
        with open(part, "rb") as f:
            if f.read(4) != GGUF_MAGIC:
                self._clear_part(spec)
                raise ModelError(f"the server sent something that is not a GGUF model for {spec.filename}")
        final = self.path_for(spec)
        sidecar = final.with_name(final.name + ".sha256")
        source = "pinned" if spec.sha256 else ("server" if expected else "computed")
        write_atomic(sidecar, f"{actual}  {spec.filename}  ({source})\n".encode("ascii"))
        move_into_place(part, final)
        part.with_suffix(".part.json").unlink(missing_ok=True)
        fsync_dir(self.models_dir)
        log.info("model %s ready (%d bytes, sha256 %s, %s)", spec.filename, size, actual, source)
        return final


def _hash_into(hasher: hashlib._Hash, path: Path) -> None:
    with open(path, "rb") as f:
        while block := f.read(1 << 20):
            hasher.update(block)
