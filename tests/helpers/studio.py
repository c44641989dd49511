"""A template and an embedder for the Studio tests (and the Map's)."""

from __future__ import annotations

TEMPLATE = """\
name: stop-under-operators
trigger: change_of_state
slots:
  name: [Jo, Sam, the teacher]
  habit: [smoke, swim]
conditions:
  - name: plain
    operator: unembedded
    premise: "{name} stopped doing it: {habit}."
    hypothesis: "{name} used to {habit}."
    gold: E
  - name: negated
    operator: negation
    premise: "{name} didn't stop doing it: {habit}."
    hypothesis: "{name} used to {habit}."
    gold: E
  - name: asked
    operator: question
    premise: "Did {name} stop doing it: {habit}?"
    hypothesis: "{name} used to {habit}."
    gold: E
"""


class WordsEmbedder:
    """A deterministic stand-in for the MiniLM embedder in these tests: normalised bag-of-words counts
    (hashed into 512 dimensions), so shared words make texts similar. The real embedder is used by the
    `generate-pairs` command and measured in the README."""

    def encode(self, texts, progress=None):  # the Embedder interface; no bar for a toy
        import zlib

        import numpy as np

        out = np.zeros((len(texts), 512), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in text.lower().split():
                out[i, zlib.crc32(word.encode()) % 512] += 1
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-9)
