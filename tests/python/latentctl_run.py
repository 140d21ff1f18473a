"""latentctl for the Python tests: the binary from $LATENTCTL, and a model
trained on the test corpus ($LATENTD_TEST_CORPUS, tests/testdata) as the
gensim tests train it."""

import os
import subprocess

CTL = os.environ["LATENTCTL"]
CORPUS = os.environ["LATENTD_TEST_CORPUS"]


def latentctl(*args):
    """Runs latentctl; its CompletedProcess, or AssertionError with its
    stderr when it fails."""
    proc = subprocess.run([CTL, *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise AssertionError(f"latentctl {args}: {proc.stderr}")
    return proc


def train_test_model(out, topics, sweeps=10):
    """Trains `topics` topics on the test corpus (LDA-C with its
    vocabulary, one thread) into directory `out`."""
    latentctl("train", "--corpus", f"{CORPUS}/corpus.ldac", "--vocab",
              f"{CORPUS}/vocab.txt", "--format", "ldac", "--topics",
              str(topics), "--sweeps", str(sweeps), "--threads", "1", "--out",
              out)
