"""A stand-in for OpenAI's text-embedding-3-small (1536 dimensions), which cannot be reached from the
tests: the same LangChain ``Embeddings`` interface, vectors derived from the words of the text so that
texts sharing words are similar."""

import hashlib

import numpy as np
from langchain_core.embeddings import Embeddings

DIMENSIONS = 1536


class HashedWordsEmbeddings(Embeddings):
    dimensions = DIMENSIONS

    def _vector(self, text: str) -> list[float]:
        vector = np.zeros(DIMENSIONS, dtype=np.float32)
        for word in text.lower().split():
            index = int.from_bytes(hashlib.sha256(word.strip(".,!?'\"").encode()).digest()[:4], "little") % DIMENSIONS
            vector[index] += 1.0
        return vector.tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vector(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        return self._vector(text)


def openai_like() -> Embeddings:
    return HashedWordsEmbeddings()
