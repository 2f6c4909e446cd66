"""The answers of the routes SillyTavern calls (Vector API, KoboldCpp hop, embedding endpoints);
see answers.py."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field

from dle_desktop.server.answers import Answer, may_be_left_out


class VectorError(Answer):
    """TauriTavern's error shape, which SillyTavern 1.18 reads."""

    error: Literal[True]
    message: str = Field(description="what went wrong")
    cause: Literal[
        "invalid_request",
        "embedding_auth_failed",
        "forbidden_origin",
        "vector_endpoint_unavailable",
        "vector_index_conflict",
        "request_too_large",
        "embedding_rate_limited",
        "embedding_unavailable",
        "vector_store_unavailable",
    ]


class VectorMetadata(Answer):
    model_config = ConfigDict(extra="forbid")

    hash: int
    text: str
    index: int


class VectorQueryResult(Answer):
    model_config = ConfigDict(extra="forbid")

    metadata: list[VectorMetadata]
    hashes: list[int]


class PlainError(Answer):
    error: str


class OpenAiErrorError(Answer):
    message: str
    type: str
    code: int


class OpenAiError(Answer):
    error: OpenAiErrorError


class OpenAiEmbeddingsData(Answer):
    object: Literal["embedding"]
    index: int
    embedding: list[float] | str


class OpenAiEmbeddingsUsage(Answer):
    prompt_tokens: int
    total_tokens: int


class OpenAiEmbeddings(Answer):
    object: Literal["list"]
    data: list[OpenAiEmbeddingsData]
    model: str
    usage: OpenAiEmbeddingsUsage


_VECTORS = list[list[float]]


class ScopesEnabled(Answer):
    enabled: Literal[True]


class KoboldEmbedResult(Answer):
    model: str
    embeddings: _VECTORS


class ModelInfo(Answer):
    id: str
    object: str
    created: int = may_be_left_out()
    owned_by: str = may_be_left_out()


class ModelList(Answer):
    object: Literal["list"]
    data: list[ModelInfo]


class OllamaEmbedResult(Answer):
    model: str
    embeddings: _VECTORS
    total_duration: int = may_be_left_out()
    load_duration: int = may_be_left_out()
    prompt_eval_count: int = may_be_left_out()


class OllamaEmbedding(Answer):
    embedding: list[float]


class ExtrasEmbedding(Answer):
    embedding: list[float] | _VECTORS


class ExtrasModules(Answer):
    modules: list[str]
