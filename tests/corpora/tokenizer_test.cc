#include "corpora/tokenizer.h"

#include <string>
#include <vector>

#include "base/random.h"
#include "gtest/gtest.h"

namespace latentd {
namespace {

using Words = std::vector<std::string>;

Words Tok(std::string_view text, TokenizerOptions options = {}) {
  return Tokenizer(options).Tokenize(text);
}

TokenizerOptions NoStop(size_t min_length = 1) {
  TokenizerOptions o;
  o.remove_stopwords = false;
  o.min_length = min_length;
  return o;
}

TEST(Tokenizer, LowercasesAndSplitsOnNonLetters) {
  EXPECT_EQ(Tok("Hello, WORLD! foo-bar baz_qux x2y 42 don't", NoStop()),
            (Words{"hello", "world", "foo", "bar", "baz", "qux", "x", "y",
                   "don", "t"}));
  EXPECT_EQ(Tok("  \t\n "), Words{});
  EXPECT_EQ(Tok(""), Words{});
}

TEST(Tokenizer, DropsStopwordsAndShortWordsByDefault) {
  EXPECT_EQ(Tok("The model of a topic is not the topic I saw"),
            (Words{"model", "topic", "topic", "saw"}));
  EXPECT_TRUE(IsEnglishStopword("the"));
  EXPECT_TRUE(IsEnglishStopword("yourselves"));
  EXPECT_FALSE(IsEnglishStopword("topic"));
  EXPECT_EQ(Tok("The I a", NoStop()), (Words{"the", "i", "a"}));
  EXPECT_EQ(Tok("The I a x", NoStop(2)), (Words{"the"}));
}

TEST(Tokenizer, MinAndMaxLengthCountCharactersNotBytes) {
  TokenizerOptions o = NoStop(3);
  o.max_length = 4;
  // "été" is 3 characters in 5 bytes; "ab" too short; "abcde" too long.
  EXPECT_EQ(Tok("\xc3\xa9t\xc3\xa9 ab abcd abcde", o),
            (Words{"\xc3\xa9t\xc3\xa9", "abcd"}));
}

TEST(Tokenizer, LowercasesLatin1LatinExtendedGreekCyrillic) {
  // ÉCOLE Straße ŁÓDŹ ΑΘΗΝΑ МОСКВА İ Ÿ
  EXPECT_EQ(
      Tok("\xc3\x89\x43OLE Stra\xc3\x9f\x65 \xc5\x81\xc3\x93\x44\xc5\xb9 "
          "\xce\x91\xce\x98\xce\x97\xce\x9d\xce\x91 "
          "\xd0\x9c\xd0\x9e\xd0\xa1\xd0\x9a\xd0\x92\xd0\x90 \xc4\xb0 \xc5\xb8",
          NoStop()),
      (Words{"\xc3\xa9\x63ole", "stra\xc3\x9f\x65",
             "\xc5\x82\xc3\xb3\x64\xc5\xba",
             "\xce\xb1\xce\xb8\xce\xb7\xce\xbd\xce\xb1",
             "\xd0\xbc\xd0\xbe\xd1\x81\xd0\xba\xd0\xb2\xd0\xb0", "i",
             "\xc3\xbf"}));
}

TEST(Tokenizer, SignsPunctuationAndOtherScriptsSplit) {
  // × ÷ « » “ ” — and CJK split words.
  EXPECT_EQ(Tok("a\xc3\x97"
                "b c\xc3\xb7"
                "d \xc2\xab"
                "e\xc2\xbb "
                "\xe2\x80\x9c"
                "f\xe2\x80\x9d g\xe2\x80\x94h i\xe4\xb8\xad"
                "j",
                NoStop()),
            (Words{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}));
}

TEST(Tokenizer, InvalidUtf8BytesAreSeparators) {
  // Latin-1 "café" (E9 alone), a stray continuation byte, an overlong "/",
  // a surrogate, a truncated sequence at the end.
  EXPECT_EQ(
      Tok("caf\xe9 au\x80lait x\xc0\xafy z\xed\xa0\x80w end\xe2\x82", NoStop()),
      (Words{"caf", "au", "lait", "x", "y", "z", "w", "end"}));
}

TEST(Tokenizer, NeverCrashesOnRandomBytes) {
  Rng rng(7);
  Tokenizer tokenizer(NoStop());
  for (int round = 0; round < 200; ++round) {
    std::string text(rng.UniformInt(300), '\0');
    for (char& c : text) c = static_cast<char>(rng.NextU64());
    Words words = tokenizer.Tokenize(text);
    for (const std::string& w : words) {
      EXPECT_FALSE(w.empty());
      // Output is valid UTF-8 again: tokenizing a word gives the word.
      EXPECT_EQ(tokenizer.Tokenize(w), Words{w});
    }
  }
}

TEST(Tokenizer, StripsPosTagsSoTagsNeverBecomeWords) {
  TokenizerOptions o = NoStop();
  o.strip_pos_tags = true;
  EXPECT_EQ(Tok("\tThe/at Fulton/np-tl County/nn-tl Grand/jj-tl ``/`` "
                "said/vbd ./. 1/2/cd AT&T/np",
                o),
            (Words{"the", "fulton", "county", "grand", "said", "at", "t"}));
  // Without the option the tags are text like any other.
  EXPECT_EQ(Tok("said/vbd", NoStop()), (Words{"said", "vbd"}));
}

TEST(Tokenizer, LowercaseWordKeepsNonLetters) {
  EXPECT_EQ(LowercaseWord("Don't-STOP_42 \xc3\x89t\xc3\xa9\xff"),
            "don't-stop_42 \xc3\xa9t\xc3\xa9\xff");
}

}  // namespace
}  // namespace latentd
