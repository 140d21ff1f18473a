// The generated corpus that the service, cluster and command-line tests
// train on (tests/testdata/make_test_corpus.cc; the build writes it): a
// test links the CMake target test_corpus, which names its directory.
#ifndef LATENTD_TESTS_TESTDATA_TEST_CORPUS_H_
#define LATENTD_TESTS_TESTDATA_TEST_CORPUS_H_

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace latentd::testing {

// The directory holding corpus.ldac (LDA-C), vocab.txt (its words),
// other.lines (raw text, one document a line, half its words not in
// vocab.txt) and graph.txt (an edge list in the shape of SNAP ca-GrQc).
inline std::string TestCorpusDir() { return LATENTD_TEST_CORPUS_DIR; }
inline std::string TestCorpusFile(const std::string& name) {
  return TestCorpusDir() + "/" + name;
}

// latentd's flags that train on it.
inline std::vector<std::string> TestCorpusArgs() {
  return {"--corpus",       TestCorpusFile("corpus.ldac"), "--format", "ldac",
          "--corpus-vocab", TestCorpusFile("vocab.txt")};
}

// Its size, counted from the files (once).
struct TestCorpusCounts {
  uint64_t documents = 0;
  uint64_t tokens = 0;
  uint64_t words = 0;  // lines of vocab.txt; every one occurs
};
inline const TestCorpusCounts& TestCorpusSize() {
  static const TestCorpusCounts counts = [] {
    TestCorpusCounts c;
    std::ifstream docs(TestCorpusFile("corpus.ldac"));
    std::string line;
    while (std::getline(docs, line)) {
      if (line.empty()) continue;
      ++c.documents;
      std::istringstream cells(line);
      std::string cell;
      cells >> cell;  // the number of distinct words
      while (cells >> cell) {
        c.tokens += std::stoull(cell.substr(cell.find(':') + 1));
      }
    }
    std::ifstream vocab(TestCorpusFile("vocab.txt"));
    while (std::getline(vocab, line)) c.words += !line.empty();
    return c;
  }();
  return counts;
}

}  // namespace latentd::testing

#endif  // LATENTD_TESTS_TESTDATA_TEST_CORPUS_H_
