"""BM25 over title + keys + content, with DLE's tokeniser and parameters (k1 1.5, b 0.75).

The index is immutable. A re-sync that touches a few notes does not rebuild it: it layers the
changed documents over the shared base (a set of dead ids plus postings for new documents),
and folds the layers back into a fresh base only when they grow large.
"""

from __future__ import annotations

import heapq
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping

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


class Bm25Index:
    __slots__ = ("_base", "_dead", "_extra", "_doc_terms", "_doc_len", "_total_len")

    def __init__(self, base, dead, extra, doc_terms, doc_len, total_len) -> None:
        self._base: dict[str, dict[str, int]] = base
        self._dead: frozenset[str] = dead
        self._extra: dict[str, dict[str, int]] = extra
        self._doc_terms: dict[str, Counter] = doc_terms
        self._doc_len: dict[str, int] = doc_len
        self._total_len: int = total_len

    @classmethod
    def build(cls, documents: Mapping[str, str]) -> Bm25Index:
        return cls.from_terms({doc_id: Counter(tokenize(text)) for doc_id, text in documents.items()})

    @classmethod
    def from_terms(cls, doc_terms: dict[str, Counter]) -> Bm25Index:
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
        index = Bm25Index(self._base, frozenset(dead), extra, doc_terms, doc_len, total)
        if len(dead) + len(added) > max(COMPACT_MIN, COMPACT_RATIO * max(1, len(doc_len))):
            return Bm25Index.from_terms(doc_terms)
        return index

    def _postings(self, term: str) -> list[tuple[str, int]]:
        out = [(d, tf) for d, tf in self._base.get(term, {}).items() if d not in self._dead] if self._dead else list(self._base.get(term, {}).items())
        extra = self._extra.get(term)
        if extra:
            out.extend(extra.items())
        return out

    def search(self, query: str, top_k: int = 20, min_score: float = 0.5) -> list[tuple[str, float]]:
        n_docs = len(self._doc_len)
        if n_docs == 0:
            return []
        avg_len = self._total_len / n_docs or 1.0
        scores: dict[str, float] = {}
        for term in dict.fromkeys(tokenize(query)):
            postings = self._postings(term)
            if not postings:
                continue
            df = len(postings)
            idf = math.log((n_docs - df + 0.5) / (df + 0.5) + 1)
            for doc_id, tf in postings:
                norm = tf + K1 * (1 - B + B * self._doc_len[doc_id] / avg_len)
                scores[doc_id] = scores.get(doc_id, 0.0) + idf * tf * (K1 + 1) / norm
        hits = [(d, s) for d, s in scores.items() if s >= min_score]
        return heapq.nlargest(top_k, hits, key=lambda x: (x[1], x[0]))
