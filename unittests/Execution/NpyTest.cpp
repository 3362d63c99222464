//===- NpyTest.cpp - .npy round trips and malformed files -----------------===//
#include "ds/Execution/Npy.h"

#include "gtest/gtest.h"

#include <string>

using namespace mlir::ds::exec;

namespace {

TEST(Npy, RoundTripKeepsDTypeShapeAndData) {
  Tensor t = Tensor::fromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6.5f});
  std::string bytes = serializeNpy(t);
  // Header padded so the data starts on a 64-byte boundary.
  EXPECT_EQ((bytes.size() - 24) % 64, 0u);
  EXPECT_NE(bytes.find("'descr': '<f4', 'fortran_order': False, "
                       "'shape': (2, 3), }"),
            std::string::npos);
  auto back = parseNpy(bytes, "mem");
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(back->dtype(), DType::F32);
  EXPECT_EQ(back->shape(), llvm::ArrayRef<int64_t>({2, 3}));
  EXPECT_EQ(back->toVector<float>(), t.toVector<float>());

  Tensor v = Tensor::fromVector<int64_t>({3}, {7, -1, 42});
  EXPECT_NE(serializeNpy(v).find("'shape': (3,)"), std::string::npos);
  auto v2 = parseNpy(serializeNpy(v), "mem");
  ASSERT_TRUE(bool(v2));
  EXPECT_EQ(v2->toVector<int64_t>(), (std::vector<int64_t>{7, -1, 42}));

  Tensor s = Tensor::scalar<double>(2.5);
  auto s2 = parseNpy(serializeNpy(s), "mem");
  ASSERT_TRUE(bool(s2));
  EXPECT_EQ(s2->rank(), 0);
  EXPECT_EQ(s2->data<double>()[0], 2.5);
}

TEST(Npy, MalformedFilesSayWhy) {
  auto notNpy = parseNpy("hello", "x.npy");
  ASSERT_FALSE(bool(notNpy));
  EXPECT_EQ(llvm::toString(notNpy.takeError()),
            "x.npy: not a .npy file (no \\x93NUMPY magic)");

  Tensor t = Tensor::fromVector<float>({4}, {1, 2, 3, 4});
  std::string bytes = serializeNpy(t);
  auto truncated = parseNpy(bytes.substr(0, bytes.size() - 4), "t.npy");
  ASSERT_FALSE(bool(truncated));
  EXPECT_EQ(llvm::toString(truncated.takeError()),
            "t.npy: 12 data bytes for tensor<4xf32> (16 expected)");

  // A header claiming 2^60 elements is an error, not an allocation.
  auto npyWithShape = [](const std::string &shape) {
    std::string dict =
        "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
    dict.append((64 - (10 + dict.size() + 1) % 64) % 64, ' ');
    dict += '\n';
    std::string bytes("\x93NUMPY\x01\x00", 8);
    bytes += char(dict.size() & 0xff);
    bytes += char(dict.size() >> 8);
    return bytes + dict + std::string(16, '\0');
  };
  auto h = parseNpy(npyWithShape("(1152921504606846976,)"), "h.npy");
  ASSERT_FALSE(bool(h));
  EXPECT_EQ(llvm::toString(h.takeError()),
            "h.npy: 16 data bytes for tensor<1152921504606846976xf32> "
            "(4611686018427387904 expected)");
  auto o = parseNpy(npyWithShape("(4611686018427387904,8)"), "o.npy");
  ASSERT_FALSE(bool(o));
  EXPECT_EQ(llvm::toString(o.takeError()),
            "o.npy: shape (4611686018427387904,8) holds more bytes than a "
            "file can");

  std::string fortran = bytes;
  fortran.replace(fortran.find("False"), 5, "True ");
  auto f = parseNpy(fortran, "f.npy");
  ASSERT_FALSE(bool(f));
  EXPECT_NE(llvm::toString(f.takeError()).find("Fortran-order"),
            std::string::npos);
}

} // namespace
