#!/usr/bin/env python3
"""The collapsed joint log p(w, z) per token of a dumped topic assignment.

Usage: joint_ll.py STATE_FILE K ALPHA_SUM BETA [VOCAB_SIZE]

STATE_FILE is what `warplda --dumpz` writes (PREFIX.z.estimate: a line per
document, its token count and then word:topic for each token), or a Mallet
topic state (`mallet_state.gz`, as Mallet's --output-state and `latentctl
export --format mallet` write it: a line per token, "doc source pos
typeindex type topic"). The result is the quantity lda_bench and
`latentctl train` print after a sweep, for the dumped state:

  sum_d [lgamma(K a) - lgamma(N_d + K a) + sum_k lgamma(n_dk + a) - lgamma(a)]
  + sum_k [lgamma(V b) - lgamma(n_k + V b)]
  + sum_{w,k} [lgamma(n_wk + b) - lgamma(b)]

over the tokens T, with a = ALPHA_SUM / K (WarpLDA's --alpha is the sum) and
V the words that have tokens, or VOCAB_SIZE where given (latentd's V is its
corpus's vocabulary: with documents held out, it counts words only they
hold; lda_bench prints it in its first line). WarpLDA prints the same sum during a sweep,
from counts taken at two points of it, which puts it a little below the
state it ends in; this is the figure of the state itself.
"""
import collections
import gzip
import math
import sys


class BadInput(Exception):
    """A line of the state file that is not what its format says."""


def documents(path):
    """Yields (where, [(word, topic), ...]) for each document of the file."""
    if path.endswith(".gz"):
        with gzip.open(path, "rt") as f:
            doc_id, doc = None, []
            for line_no, line in enumerate(f, 1):
                if line.startswith("#") or not line.strip():
                    continue
                fields = line.split()
                try:
                    token = (int(fields[3]), int(fields[5]))
                except (IndexError, ValueError):
                    raise BadInput(f"{path}:{line_no}: not 'doc source pos "
                                   f"typeindex type topic': {line.strip()!r}")
                if fields[0] != doc_id:
                    if doc:
                        yield f"{path}: document {doc_id}", doc
                    doc_id, doc = fields[0], []
                doc.append(token)
            if doc:
                yield f"{path}: document {doc_id}", doc
        return
    with open(path) as f:
        for line_no, line in enumerate(f, 1):
            doc = []
            for field in line.split()[1:]:
                word, _, topic = field.partition(":")
                try:
                    doc.append((int(word), int(topic)))
                except ValueError:
                    raise BadInput(f"{path}:{line_no}: {field!r} is not "
                                   "word:topic")
            if doc:
                yield f"{path}:{line_no}", doc


def main() -> int:
    if len(sys.argv) not in (5, 6):
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    path, k, alpha_sum, beta = (sys.argv[1], int(sys.argv[2]),
                                float(sys.argv[3]), float(sys.argv[4]))
    vocab_size = int(sys.argv[5]) if len(sys.argv) == 6 else 0
    alpha = alpha_sum / k
    lg = math.lgamma
    word_topic = collections.Counter()
    topic_totals = [0] * k
    tokens = 0
    doc_part = 0.0
    try:
        for where, doc_tokens in documents(path):
            doc = collections.Counter()
            for word, t in doc_tokens:
                if not 0 <= t < k:
                    raise BadInput(f"{where}: topic {t} outside 0..{k - 1}")
                doc[t] += 1
                word_topic[(word, t)] += 1
                topic_totals[t] += 1
            n = len(doc_tokens)
            tokens += n
            doc_part += lg(k * alpha) - lg(n + k * alpha)
            doc_part += sum(lg(c + alpha) - lg(alpha) for c in doc.values())
    except (BadInput, OSError) as e:
        print(f"joint_ll.py: {e}", file=sys.stderr)
        return 1
    if tokens == 0:
        print(f"{path}: no tokens", file=sys.stderr)
        return 1
    words = len({w for w, _ in word_topic})
    if vocab_size:
        if vocab_size < words:
            print(f"joint_ll.py: VOCAB_SIZE {vocab_size} is below the "
                  f"{words} words of {path}", file=sys.stderr)
            return 1
        words = vocab_size
    word_part = sum(lg(words * beta) - lg(n + words * beta)
                    for n in topic_totals)
    word_part += sum(lg(c + beta) - lg(beta) for c in word_topic.values())
    print(f"{(doc_part + word_part) / tokens:.6f} tokens {tokens} "
          f"words {words} doc_part {doc_part / tokens:.6f} "
          f"word_part {word_part / tokens:.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
