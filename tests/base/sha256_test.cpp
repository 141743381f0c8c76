#include "base/sha256.hpp"

#include <gtest/gtest.h>

namespace attn {
namespace {

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, IncrementalEqualsOneShot) {
  std::string text(1000, 'x');
  for (size_t i = 0; i < text.size(); ++i) text[i] = char('a' + i % 26);
  Sha256 pieces;
  for (size_t i = 0; i < text.size(); i += 37) pieces.update(text.substr(i, 37));
  EXPECT_EQ(pieces.hex_digest(), sha256_hex(text));
}

TEST(Sha256, FieldsAreLengthPrefixed) {
  EXPECT_NE(Sha256().update_field("ab").update_field("c").hex_digest(),
            Sha256().update_field("a").update_field("bc").hex_digest());
}

}  // namespace
}  // namespace attn
