"""UMass and NPMI as sampler/coherence.h defines them, computed from
document word sets: the independent reference the coherence tests compare
latentctl's and latentd's values with."""
import math


class Reference:
    """Document (co-)occurrence counts of a corpus given as word lists."""

    def __init__(self, documents):
        self.docs = [set(d) for d in documents]
        self.n = len(self.docs)

    def d(self, w):
        return sum(w in doc for doc in self.docs)

    def d2(self, u, v):
        return sum(u in doc and v in doc for doc in self.docs)

    def umass(self, words):
        """Mean over pairs l < m of log((D(v_m, v_l) + 1) / D(v_l)); pairs
        with D(v_l) = 0 left out; None without a pair."""
        terms = [math.log((self.d2(words[m], words[l]) + 1) / self.d(words[l]))
                 for m in range(1, len(words)) for l in range(m)
                 if self.d(words[l]) > 0]
        return sum(terms) / len(terms) if terms else None

    def npmi(self, words):
        """Mean over pairs of Bouma's NPMI; -1 never together, 1 always."""
        vals = []
        for i in range(len(words)):
            for j in range(i + 1, len(words)):
                joint = self.d2(words[i], words[j])
                if joint == 0:
                    vals.append(-1.0)
                elif joint == self.n:
                    vals.append(1.0)
                else:
                    p = joint / self.n
                    pu, pv = self.d(words[i]) / self.n, self.d(words[j]) / self.n
                    vals.append(math.log(p / (pu * pv)) / -math.log(p))
        return sum(vals) / len(vals) if vals else None


def close(a, b, tol=1e-9):
    return (a is None and b is None) or (
        a is not None and b is not None and abs(a - b) < tol)
