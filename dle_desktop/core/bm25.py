"""BM25 over title + keys + content, with DLE's tokeniser and parameters (k1 1.5, b 0.75).

The index is immutable. A re-sync that touches a few notes does not rebuild it: it layers the
changed documents over the shared base (a set of dead ids plus postings for new documents),
and folds the layers back into a fresh base only when they grow large.
"""

from __future__ import annotations

import heapq
import math
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping

import numpy as np

K1 = 1.5
B = 0.75
_SPLIT_RE = re.compile(r"[^\W_]+")
#: Fold the overlay into a new base once it holds this share of the documents.
COMPACT_RATIO = 0.05
COMPACT_MIN = 256


def tokenize(text: str) -> list[str]:
    """NFC, lower case, runs of letters and digits, at least 2 characters. No stemming."""
    return [t for t in _SPLIT_RE.findall(unicodedata.normalize("NFC", text).lower()) if len(t) >= 2]


def document_text(title: str, keys: Iterable[str], content: str) -> str:
    return f"{title} {' '.join(keys)} {content}"


class _BaseArrays:
    """Numpy views of the base postings, shared by every overlay built on the same base, so a
    query sums whole posting lists in C instead of walking them in Python."""

    def __init__(self, doc_ids: list[str], doc_len: dict[str, int]) -> None:
        self.doc_ids = doc_ids
        self.pos = {d: i for i, d in enumerate(doc_ids)}
        self.doc_len = np.array([doc_len[d] for d in doc_ids], dtype=np.float64)
        self._terms: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._lock = threading.Lock()

    def term(self, term: str, postings: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
        arrays = self._terms.get(term)
        if arrays is None:
            idx = np.fromiter((self.pos[d] for d in postings), dtype=np.int64, count=len(postings))
            tf = np.fromiter(postings.values(), dtype=np.float64, count=len(postings))
            arrays = (idx, tf)
            with self._lock:
                self._terms[term] = arrays
        return arrays


class Bm25Index:
    __slots__ = ("_arrays", "_base", "_dead", "_dead_mask", "_doc_len", "_doc_terms", "_extra", "_total_len")

    def __init__(
        self,
        base: dict[str, dict[str, int]],
        dead: frozenset[str],
        extra: dict[str, dict[str, int]],
        doc_terms: dict[str, Counter[str]],
        doc_len: dict[str, int],
        total_len: int,
        arrays: _BaseArrays | None = None,
    ) -> None:
        self._base: dict[str, dict[str, int]] = base
        self._dead: frozenset[str] = dead
        self._extra: dict[str, dict[str, int]] = extra
        self._doc_terms: dict[str, Counter[str]] = doc_terms
        self._doc_len: dict[str, int] = doc_len
        self._total_len: int = total_len
        self._arrays = arrays if arrays is not None else _BaseArrays(list(doc_len), doc_len)
        self._dead_mask: np.ndarray | None = None

    @classmethod
    def build(cls, documents: Mapping[str, str]) -> Bm25Index:
        return cls.from_terms({doc_id: Counter(tokenize(text)) for doc_id, text in documents.items()})

    @classmethod
    def from_terms(cls, doc_terms: dict[str, Counter[str]]) -> Bm25Index:
        postings: dict[str, dict[str, int]] = {}
        doc_len: dict[str, int] = {}
        total = 0
        for doc_id, terms in doc_terms.items():
            n = sum(terms.values())
            doc_len[doc_id] = n
            total += n
            for term, tf in terms.items():
                bucket = postings.get(term)
                if bucket is None:
                    postings[term] = {doc_id: tf}
                else:
                    bucket[doc_id] = tf
        return cls(postings, frozenset(), {}, dict(doc_terms), doc_len, total)

    def __len__(self) -> int:
        return len(self._doc_len)

    @property
    def overlay_size(self) -> int:
        return len(self._dead) + sum(1 for _ in self._extra_docs())

    def _extra_docs(self) -> set[str]:
        docs: set[str] = set()
        for bucket in self._extra.values():
            docs.update(bucket)
        return docs

    def with_changes(self, removed: Iterable[str] = (), added: Mapping[str, str] | None = None) -> Bm25Index:
        """A new index with `removed` ids gone and `added` (id → text) in; `self` is untouched."""
        added = added or {}
        doc_terms = dict(self._doc_terms)
        doc_len = dict(self._doc_len)
        total = self._total_len
        dead = set(self._dead)
        extra = {t: dict(b) for t, b in self._extra.items()} if (removed or added) else self._extra
        for doc_id in set(removed) | set(added):
            old = doc_terms.pop(doc_id, None)
            if old is None:
                continue
            total -= doc_len.pop(doc_id)
            for term in old:
                bucket = extra.get(term)
                if bucket is not None and doc_id in bucket:
                    del bucket[doc_id]
                    if not bucket:
                        del extra[term]
                if doc_id in self._base.get(term, ()):
                    dead.add(doc_id)
        for doc_id, text in added.items():
            terms = Counter(tokenize(text))
            doc_terms[doc_id] = terms
            n = sum(terms.values())
            doc_len[doc_id] = n
            total += n
            for term, tf in terms.items():
                extra.setdefault(term, {})[doc_id] = tf
        index = Bm25Index(self._base, frozenset(dead), extra, doc_terms, doc_len, total, self._arrays)
        if len(dead) + len(added) > max(COMPACT_MIN, COMPACT_RATIO * max(1, len(doc_len))):
            return Bm25Index.from_terms(doc_terms)
        return index

    def _dead_rows(self) -> np.ndarray | None:
        if not self._dead:
            return None
        if self._dead_mask is None:
            mask = np.zeros(len(self._arrays.doc_ids), dtype=bool)
            mask[[self._arrays.pos[d] for d in self._dead if d in self._arrays.pos]] = True
            self._dead_mask = mask
        return self._dead_mask

    def search(self, query: str, top_k: int = 20, min_score: float = 0.5) -> list[tuple[str, float]]:
        n_docs = len(self._doc_len)
        if n_docs == 0:
            return []
        avg_len = self._total_len / n_docs or 1.0
        arrays = self._arrays
        dead = self._dead_rows()
        scores = np.zeros(len(arrays.doc_ids), dtype=np.float64)
        extra_scores: dict[str, float] = {}
        for term in dict.fromkeys(tokenize(query)):
            base = self._base.get(term)
            extra = self._extra.get(term)
            if not base and not extra:
                continue
            idx, tf = arrays.term(term, base) if base else (None, None)
            df = len(extra or ())
            if idx is not None:
                df += len(idx) - (int(np.count_nonzero(dead[idx])) if dead is not None else 0)
            if df == 0:
                continue
            idf = math.log((n_docs - df + 0.5) / (df + 0.5) + 1)
            if idx is not None and tf is not None:
                norm = tf + K1 * (1 - B + B * arrays.doc_len[idx] / avg_len)
                scores[idx] += idf * tf * (K1 + 1) / norm
            for doc_id, f in (extra or {}).items():
                norm = f + K1 * (1 - B + B * self._doc_len[doc_id] / avg_len)
                extra_scores[doc_id] = extra_scores.get(doc_id, 0.0) + idf * f * (K1 + 1) / norm
        ok = (scores > 0) & (scores >= min_score)
        if dead is not None:
            ok &= ~dead
        cand = np.nonzero(ok)[0]
        if len(cand) > top_k:
            kth = np.partition(scores[cand], -top_k)[-top_k]
            cand = cand[scores[cand] >= kth]  # ties at the cut stay in, then the sort decides
        hits = [(arrays.doc_ids[i], float(scores[i])) for i in cand.tolist()]
        hits.extend((d, sc) for d, sc in extra_scores.items() if sc >= min_score)
        return heapq.nlargest(top_k, hits, key=lambda x: (x[1], x[0]))
