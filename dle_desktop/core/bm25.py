"""BM25 over title + keys + content, with DLE's tokeniser and parameters (k1 1.5, b 0.75).

The index is immutable. Its base is a compressed inverted index in numpy arrays (one posting
run per term, built with a stable sort instead of a Python loop per posting), so a query sums
whole posting lists in C. A re-sync that touches a few notes does not rebuild it: it layers the
changed documents over the shared base (a set of dead ids plus postings for new documents),
and folds the layers back into a fresh base only when they grow large.
"""

from __future__ import annotations

import heapq
import itertools
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

K1 = 1.5
B = 0.75
#: Runs of letters and digits of at least 2 characters: one findall, no filtering pass. A run
#: of one character cannot match, and a match always starts where a run starts.
_TOKEN_RE = re.compile(r"[^\W_]{2,}")
#: The same for ASCII text (NFC leaves it as it is), a fifth faster than the Unicode class.
_ASCII_TOKEN_RE = re.compile(r"[a-z0-9]{2,}")
#: Fold the overlay into a new base once it holds this share of the documents.
COMPACT_RATIO = 0.05
COMPACT_MIN = 256


def tokenize(text: str) -> list[str]:
    """NFC, lower case, runs of letters and digits, at least 2 characters. No stemming."""
    if text.isascii():
        return _ASCII_TOKEN_RE.findall(text.lower())
    return _TOKEN_RE.findall(unicodedata.normalize("NFC", text).lower())


def document_text(title: str, keys: Iterable[str], content: str) -> str:
    return f"{title} {' '.join(keys)} {content}"


class _BasePostings:
    """The base documents' postings as arrays, shared by every overlay built on the same base:
    term t's postings are rows[starts[t]:starts[t + 1]] (document rows, ascending) and the
    matching term frequencies."""

    __slots__ = ("doc_ids", "doc_len", "pos", "rows", "starts", "tf", "vocab")

    def __init__(self, doc_terms: Mapping[str, Counter[str]], doc_len: Mapping[str, int]) -> None:
        import numpy as np  # here, not at the top: a warm `dle-desktop index` never loads numpy

        self.doc_ids = list(doc_terms)
        self.pos = {d: i for i, d in enumerate(self.doc_ids)}
        self.doc_len = np.array([doc_len[d] for d in self.doc_ids], dtype=np.float64)
        counters = list(doc_terms.values())
        sizes = np.fromiter(map(len, counters), dtype=np.int64, count=len(counters))
        n = int(sizes.sum())
        terms = list(itertools.chain.from_iterable(counters))
        self.vocab = {t: i for i, t in enumerate(dict.fromkeys(terms))}
        term_ids = np.fromiter(map(self.vocab.__getitem__, terms), dtype=np.int64, count=n)
        freqs = np.fromiter(itertools.chain.from_iterable(c.values() for c in counters), dtype=np.float64, count=n)
        rows = np.repeat(np.arange(len(counters), dtype=np.int64), sizes)
        # A stable sort keeps each term's documents in insertion order, as the postings dicts
        # of earlier versions did: the per-document arithmetic of a query is the same.
        order = np.argsort(term_ids, kind="stable")
        self.rows = rows[order]
        self.tf = freqs[order]
        self.starts = np.zeros(len(self.vocab) + 1, dtype=np.int64)
        np.cumsum(np.bincount(term_ids, minlength=len(self.vocab)), out=self.starts[1:])

    def term(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        t = self.vocab.get(term)
        if t is None:
            return None
        lo, hi = int(self.starts[t]), int(self.starts[t + 1])
        return self.rows[lo:hi], self.tf[lo:hi]

    def has_postings(self, doc_id: str) -> bool:
        row = self.pos.get(doc_id)
        return row is not None and self.doc_len[row] > 0


class Bm25Index:
    __slots__ = ("_base", "_dead", "_dead_mask", "_doc_len", "_doc_terms", "_extra", "_total_len")

    def __init__(
        self,
        base: _BasePostings,
        dead: frozenset[str],
        extra: dict[str, dict[str, int]],
        doc_terms: dict[str, Counter[str]],
        doc_len: dict[str, int],
        total_len: int,
    ) -> None:
        self._base = base
        self._dead: frozenset[str] = dead
        self._extra: dict[str, dict[str, int]] = extra
        self._doc_terms: dict[str, Counter[str]] = doc_terms
        self._doc_len: dict[str, int] = doc_len
        self._total_len: int = total_len
        self._dead_mask: np.ndarray | None = None

    @classmethod
    def build(cls, documents: Mapping[str, str]) -> Bm25Index:
        return cls.from_terms({doc_id: Counter(tokenize(text)) for doc_id, text in documents.items()})

    @classmethod
    def from_terms(cls, doc_terms: dict[str, Counter[str]]) -> Bm25Index:
        doc_len = {doc_id: sum(terms.values()) for doc_id, terms in doc_terms.items()}
        base = _BasePostings(doc_terms, doc_len)
        return cls(base, frozenset(), {}, dict(doc_terms), doc_len, sum(doc_len.values()))

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
            if self._base.has_postings(doc_id):
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

    def _dead_rows(self) -> np.ndarray | None:
        if not self._dead:
            return None
        if self._dead_mask is None:
            import numpy as np

            mask = np.zeros(len(self._base.doc_ids), dtype=bool)
            mask[[self._base.pos[d] for d in self._dead if d in self._base.pos]] = True
            self._dead_mask = mask
        return self._dead_mask

    def search(self, query: str, top_k: int = 20, min_score: float = 0.5) -> list[tuple[str, float]]:
        import numpy as np

        n_docs = len(self._doc_len)
        if n_docs == 0:
            return []
        avg_len = self._total_len / n_docs or 1.0
        base = self._base
        dead = self._dead_rows()
        scores = np.zeros(len(base.doc_ids), dtype=np.float64)
        extra_scores: dict[str, float] = {}
        for term in dict.fromkeys(tokenize(query)):
            postings = base.term(term)
            extra = self._extra.get(term)
            if postings is None and not extra:
                continue
            df = len(extra or ())
            if postings is not None:
                idx = postings[0]
                df += len(idx) - (int(np.count_nonzero(dead[idx])) if dead is not None else 0)
            if df == 0:
                continue
            idf = math.log((n_docs - df + 0.5) / (df + 0.5) + 1)
            if postings is not None:
                idx, tf = postings
                norm = tf + K1 * (1 - B + B * base.doc_len[idx] / avg_len)
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
        hits = [(base.doc_ids[i], float(scores[i])) for i in cand.tolist()]
        hits.extend((d, sc) for d, sc in extra_scores.items() if sc >= min_score)
        return heapq.nlargest(top_k, hits, key=lambda x: (x[1], x[0]))
