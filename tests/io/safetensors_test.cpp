// Safetensors reader/writer and atomic file tests: round trips of every
// dtype and of edge shapes, the exact on-disk layout, and one hand-built bad
// file per validation rule, each checked for an error naming the problem.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/atomic_file.h"
#include "base/error.h"
#include "io/safetensors.h"
#include "tensor/half.h"

namespace parallm {
namespace {

namespace fs = std::filesystem;

class SafetensorsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() / fmt::format("parallm_st_{}_{}", ::getpid(), info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // Writes raw bytes to a file and returns its path.
  std::string write_bytes(const std::string& name, const std::string& bytes) const {
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  }

  // A file with the given header text (length prefix = its size) and `data_len` zero bytes.
  std::string write_st(const std::string& header, size_t data_len,
                       const std::string& name = "bad.safetensors") const {
    uint64_t n = header.size();
    std::string bytes(reinterpret_cast<const char*>(&n), 8);
    return write_bytes(name, bytes + header + std::string(data_len, '\0'));
  }

  // Asserts that opening `file` fails with a message naming the file and each of `parts`.
  static void expect_refused(const std::string& file, std::initializer_list<std::string> parts) {
    try {
      SafetensorsFile::open(file);
      ADD_FAILURE() << "opened " << file << " without error";
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(file), std::string::npos) << msg;
      for (const auto& p : parts)
        EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
    }
  }

  fs::path dir_;
};

template <class T>
std::vector<std::byte> as_bytes(const std::vector<T>& v) {
  std::vector<std::byte> b(v.size() * sizeof(T));
  if (!b.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<std::byte> to_vec(std::span<const std::byte> s) { return {s.begin(), s.end()}; }

TEST_F(SafetensorsTest, RoundTripsEveryDtypeAndEdgeShapes) {
  const std::vector<double> f64 = {1.5, -2.25, 3e100};
  const std::vector<float> f32 = {1, 2, 3, 4, 5, 6};
  const std::vector<uint16_t> bf16 = {f32_to_bf16(1.f), f32_to_bf16(-3.5f)};
  const std::vector<uint16_t> f16 = {f32_to_f16(0.5f), f32_to_f16(65504.f), f32_to_f16(-1.f)};
  const std::vector<int64_t> i64 = {-1, 1ll << 40};
  const std::vector<int32_t> i32 = {7};
  const std::vector<int16_t> i16 = {-300, 300};
  const std::vector<int8_t> i8 = {-128, 0, 127};
  const std::vector<uint16_t> u16 = {65535};
  const std::vector<uint8_t> u8 = {0, 255, 9, 10};
  const std::vector<uint8_t> boolean = {1, 0, 1};

  SafetensorsWriter w;
  w.add("f64", DType::F64, {3}, f64.data());
  w.add("f32", DType::F32, {2, 3}, f32.data());
  w.add("bf16", DType::BF16, {2}, bf16.data());
  w.add("f16", DType::F16, {3, 1}, f16.data());
  w.add("i64", DType::I64, {2}, i64.data());
  w.add("scalar.i32", DType::I32, {}, i32.data());
  w.add("i16", DType::I16, {1, 2}, i16.data());
  w.add("i8", DType::I8, {3}, i8.data());
  w.add("u16", DType::U16, {1, 1, 1}, u16.data());
  w.add("u8", DType::U8, {2, 2}, u8.data());
  w.add("bool", DType::BOOL, {3}, boolean.data());
  w.add("empty.f32", DType::F32, {0}, nullptr);
  w.add("empty.bf16", DType::BF16, {2, 0, 3}, nullptr);
  EXPECT_EQ(w.size(), 13u);
  w.write(path("all.safetensors"));

  const auto f = SafetensorsFile::open(path("all.safetensors"));
  ASSERT_EQ(f.entries().size(), 13u);
  auto check = [&](const char* name, DType dt, std::vector<int64_t> shape,
                   std::vector<std::byte> want) {
    const TensorEntry& e = f.at(name);
    EXPECT_EQ(e.name, name);
    EXPECT_EQ(e.dtype, dt) << name;
    EXPECT_EQ(e.shape, shape) << name;
    EXPECT_EQ(e.nbytes(), want.size()) << name;
    EXPECT_EQ(to_vec(f.bytes(e)), want) << name;
  };
  check("f64", DType::F64, {3}, as_bytes(f64));
  check("f32", DType::F32, {2, 3}, as_bytes(f32));
  check("bf16", DType::BF16, {2}, as_bytes(bf16));
  check("f16", DType::F16, {3, 1}, as_bytes(f16));
  check("i64", DType::I64, {2}, as_bytes(i64));
  check("scalar.i32", DType::I32, {}, as_bytes(i32));
  check("i16", DType::I16, {1, 2}, as_bytes(i16));
  check("i8", DType::I8, {3}, as_bytes(i8));
  check("u16", DType::U16, {1, 1, 1}, as_bytes(u16));
  check("u8", DType::U8, {2, 2}, as_bytes(u8));
  check("bool", DType::BOOL, {3}, as_bytes(boolean));
  check("empty.f32", DType::F32, {0}, {});
  check("empty.bf16", DType::BF16, {2, 0, 3}, {});
  EXPECT_EQ(f.at("scalar.i32").numel(), 1);
  EXPECT_EQ(f.at("empty.bf16").numel(), 0);
  EXPECT_EQ(f.find("missing"), nullptr);
  EXPECT_TRUE(f.metadata().empty());
  try {
    f.at("missing");
    ADD_FAILURE() << "at() found a missing tensor";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no tensor named 'missing'"), std::string::npos);
  }

  EXPECT_EQ(f.read_as_f32(f.at("f32")), f32);
  EXPECT_EQ(f.read_as_f32(f.at("bf16")), (std::vector<float>{1.f, -3.5f}));
  EXPECT_EQ(f.read_as_f32(f.at("f16")), (std::vector<float>{0.5f, 65504.f, -1.f}));
  std::vector<double> d(3);
  f.read_as_f64(f.at("f64"), d.data());
  EXPECT_EQ(d, f64);
  EXPECT_TRUE(f.read_as_f32(f.at("empty.bf16")).empty());
}

TEST_F(SafetensorsTest, LayoutMatchesTheReferenceWriter) {
  const std::vector<float> f32 = {1, 2};
  const std::vector<uint8_t> u8 = {1, 2, 3};
  const std::vector<double> f64 = {4};
  const std::vector<uint16_t> bf16 = {5, 6, 7};
  SafetensorsWriter w;
  w.add("z.u8", DType::U8, {3}, u8.data());
  w.add("b.f32", DType::F32, {2}, f32.data());
  w.add("a.f32", DType::F32, {2}, f32.data());
  w.add("bf16", DType::BF16, {3}, bf16.data());
  w.add("f64", DType::F64, {1}, f64.data());
  w.set_metadata("format", "pt");
  w.write(path("layout.safetensors"));

  const std::string expect_json = R"({"__metadata__":{"format":"pt"},)"
                                  R"("f64":{"dtype":"F64","shape":[1],"data_offsets":[0,8]},)"
                                  R"("a.f32":{"dtype":"F32","shape":[2],"data_offsets":[8,16]},)"
                                  R"("b.f32":{"dtype":"F32","shape":[2],"data_offsets":[16,24]},)"
                                  R"("bf16":{"dtype":"BF16","shape":[3],"data_offsets":[24,30]},)"
                                  R"("z.u8":{"dtype":"U8","shape":[3],"data_offsets":[30,33]}})";
  const std::string header = w.header();
  EXPECT_EQ(header.size() % 8, 0u);
  EXPECT_EQ(header.substr(0, expect_json.size()), expect_json);
  EXPECT_EQ(header.find_first_not_of(' ', expect_json.size()), std::string::npos);

  std::ifstream in(path("layout.safetensors"), std::ios::binary);
  const std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  uint64_t n = 0;
  std::memcpy(&n, file.data(), 8);
  EXPECT_EQ(n, header.size());
  EXPECT_EQ(file.substr(8, n), header);
  EXPECT_EQ(file.size(), 8 + n + 33);
  EXPECT_EQ(file[8 + n + 30], 1);  // z.u8 is last

  std::ostringstream mem;
  w.write_to(mem);
  EXPECT_EQ(mem.str(), file);
  const auto f = SafetensorsFile::open(path("layout.safetensors"));
  EXPECT_EQ(f.header_bytes(), n);
  EXPECT_EQ(f.entries().front().name, "f64");  // file order
  for (const auto& e : f.entries()) EXPECT_EQ(e.begin % dtype_size(e.dtype), 0u) << e.name;
}

TEST_F(SafetensorsTest, MetadataRoundTrips) {
  SafetensorsWriter w;
  w.set_metadata("format", "pt");
  w.set_metadata("note", "héllo \"quoted\" \n tab\t");
  w.set_metadata("format", "np");     // last value wins
  w.write(path("meta.safetensors"));  // no tensors at all is valid
  const auto f = SafetensorsFile::open(path("meta.safetensors"));
  EXPECT_TRUE(f.entries().empty());
  const std::map<std::string, std::string> want = {{"format", "np"},
                                                   {"note", "héllo \"quoted\" \n tab\t"}};
  EXPECT_EQ(f.metadata(), want);
}

TEST_F(SafetensorsTest, StoresFloatsAsBf16AndF16) {
  std::vector<float> x(70000);  // more than one conversion chunk
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.37f - 9000.f;
  x[1] = 1.0f + 1.0f / 256;  // a bf16 tie: rounds to even (1.0)
  SafetensorsWriter w;
  w.add_f32_as("bf", DType::BF16, {700, 100}, x.data());
  w.add_f32_as("half", DType::F16, {70000}, x.data());
  w.add_f32_as("full", DType::F32, {70000}, x.data());
  w.write(path("conv.safetensors"));

  const auto f = SafetensorsFile::open(path("conv.safetensors"));
  EXPECT_EQ(f.at("bf").dtype, DType::BF16);
  EXPECT_EQ(f.at("half").dtype, DType::F16);
  const auto bf = f.read_as_f32(f.at("bf"));
  const auto half = f.read_as_f32(f.at("half"));
  ASSERT_EQ(bf.size(), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(bf[i], bf16_to_f32(f32_to_bf16(x[i]))) << i;
    ASSERT_EQ(half[i], f16_to_f32(f32_to_f16(x[i]))) << i;
  }
  EXPECT_EQ(bf[1], 1.0f);
  EXPECT_EQ(f.read_as_f32(f.at("full")), x);
  std::vector<double> d(x.size());
  f.read_as_f64(f.at("bf"), d.data());
  EXPECT_EQ(d[5], static_cast<double>(bf[5]));
}

TEST_F(SafetensorsTest, ReadAsF32RefusesIntegers) {
  const std::vector<int32_t> v = {1, 2};
  SafetensorsWriter w;
  w.add("ids", DType::I32, {2}, v.data());
  w.write(path("i.safetensors"));
  const auto f = SafetensorsFile::open(path("i.safetensors"));
  try {
    f.read_as_f32(f.at("ids"));
    ADD_FAILURE() << "converted I32";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'ids' has dtype I32"), std::string::npos) << e.what();
  }
}

TEST_F(SafetensorsTest, AddCopyOwnsTheBytes) {
  std::vector<float> v = {1, 2, 3};
  SafetensorsWriter w;
  w.add_copy("c", DType::F32, {3}, v.data());
  v.assign(3, 0.f);
  w.write(path("copy.safetensors"));
  const auto f = SafetensorsFile::open(path("copy.safetensors"));
  EXPECT_EQ(f.read_as_f32(f.at("c")), (std::vector<float>{1, 2, 3}));
}

TEST_F(SafetensorsTest, WriterRefusesBadTensors) {
  const float x = 0;
  SafetensorsWriter w;
  w.add("a", DType::F32, {}, &x);
  EXPECT_THROW(w.add("a", DType::F32, {}, &x), Error);
  EXPECT_THROW(w.add_copy("a", DType::F32, {}, &x), Error);
  EXPECT_THROW(w.add("__metadata__", DType::F32, {}, &x), Error);
  EXPECT_THROW(w.add("neg", DType::F32, {2, -1}, &x), Error);
  EXPECT_THROW(w.add("null", DType::F32, {1}, nullptr), Error);
  EXPECT_THROW(w.add_f32_as("i", DType::I32, {1}, &x), Error);
  EXPECT_THROW(w.add("huge", DType::F64, {1ll << 40, 1ll << 40}, &x), Error);
  EXPECT_EQ(w.size(), 1u);
}

// ---- validation: one hand-built bad file per rule ----

TEST_F(SafetensorsTest, RefusesMissingFile) {
  expect_refused(path("nope.safetensors"), {"cannot open"});
}

TEST_F(SafetensorsTest, RefusesFileShorterThanPrefix) {
  expect_refused(write_bytes("short", "abcde"), {"5 bytes", "shorter than the 8-byte"});
  expect_refused(write_bytes("empty", ""), {"0 bytes", "shorter than the 8-byte"});
}

TEST_F(SafetensorsTest, RefusesHeaderLargerThanLimit) {
  const uint64_t n = 200'000'000;
  expect_refused(write_bytes("big", std::string(reinterpret_cast<const char*>(&n), 8) + "{}"),
                 {"header length 200000000", "exceeds the limit of 100000000"});
}

TEST_F(SafetensorsTest, RefusesHeaderLargerThanFile) {
  const uint64_t n = 100;
  expect_refused(write_bytes("trunc", std::string(reinterpret_cast<const char*>(&n), 8) + "{}  "),
                 {"header length 100", "larger than the 4 bytes"});
}

TEST_F(SafetensorsTest, RefusesHeaderThatIsNotAJsonObject) {
  expect_refused(write_st("{\"a\": ", 0), {"not valid JSON"});
  expect_refused(write_st("[1, 2]", 0), {"starting with '{'", "0x5b"});
  expect_refused(write_st("  7", 0), {"starting with '{'", "byte 2 is 0x37"});
  expect_refused(write_st("", 0), {"starting with '{'", "empty"});
  expect_refused(write_st("   ", 0), {"starting with '{'", "empty"});
  EXPECT_NO_THROW(
      SafetensorsFile::open(write_st(" {} ", 0, "ws.safetensors")));  // as the reference
  expect_refused(write_st("{} x", 0), {"not valid JSON"});
  expect_refused(write_st("{\"a\xff\": 1}", 0), {"not valid JSON"});  // not UTF-8
}

TEST_F(SafetensorsTest, RefusesEntryWithMissingField) {
  expect_refused(write_st(R"({"t": {"shape": [1], "data_offsets": [0, 4]}})", 4),
                 {"'t'", "missing field 'dtype'"});
  expect_refused(write_st(R"({"t": {"dtype": "F32", "data_offsets": [0, 4]}})", 4),
                 {"'t'", "missing field 'shape'"});
  expect_refused(write_st(R"({"t": {"dtype": "F32", "shape": [1]}})", 4),
                 {"'t'", "missing field 'data_offsets'"});
}

TEST_F(SafetensorsTest, RefusesEntryWithWrongJsonTypes) {
  expect_refused(write_st(R"({"t": [1, 2]})", 0), {"'t'", "must be an object"});
  expect_refused(write_st(R"({"t": {"dtype": 5, "shape": [1], "data_offsets": [0, 4]}})", 4),
                 {"'dtype'", "not a string"});
  expect_refused(write_st(R"({"t": {"dtype": "F32", "shape": "1", "data_offsets": [0, 4]}})", 4),
                 {"'shape'", "not an array"});
  expect_refused(write_st(R"({"t": {"dtype": "F32", "shape": [1.0], "data_offsets": [0, 4]}})", 4),
                 {"non-negative integers", "[1.0]"});
  expect_refused(write_st(R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", 4),
                 {"'data_offsets' must be [begin, end]", "[0]"});
  expect_refused(write_st(R"({"t": {"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]}})", 4),
                 {"'data_offsets' must be [begin, end]", "[-4,0]"});
  expect_refused(write_st(R"({"__metadata__": {"k": 1}})", 0),
                 {"'__metadata__'", "'k'", "not a string"});
  expect_refused(write_st(R"({"__metadata__": "x"})", 0), {"'__metadata__'", "must be an object"});
}

TEST_F(SafetensorsTest, RefusesUnknownDtype) {
  expect_refused(write_st(R"({"t": {"dtype": "F33", "shape": [1], "data_offsets": [0, 4]}})", 4),
                 {"'t'", "unknown dtype 'F33'"});
  expect_refused(
      write_st(R"({"t": {"dtype": "F8_E4M3", "shape": [4], "data_offsets": [0, 4]}})", 4),
      {"'t'", "F8_E4M3", "not supported"});
}

TEST_F(SafetensorsTest, RefusesNegativeDimension) {
  expect_refused(
      write_st(R"({"t": {"dtype": "F32", "shape": [2, -3], "data_offsets": [0, 0]}})", 0),
      {"'t'", "negative dimension -3"});
}

TEST_F(SafetensorsTest, RefusesBeginAfterEnd) {
  expect_refused(write_st(R"({"t": {"dtype": "U8", "shape": [0], "data_offsets": [4, 2]}})", 4),
                 {"'t'", "[4, 2)", "begin is after end"});
}

TEST_F(SafetensorsTest, RefusesEndBeyondDataBuffer) {
  expect_refused(write_st(R"({"t": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", 12),
                 {"'t'", "[0, 16)", "beyond the data buffer of 12 bytes"});
}

TEST_F(SafetensorsTest, RefusesSizeThatDoesNotMatchShape) {
  const std::string file = write_st(
      R"({"h.0.attn.weight": {"dtype": "F32", "shape": [5, 6], "data_offsets": [0, 100]}})", 100,
      "model.safetensors");
  expect_refused(file, {"tensor 'h.0.attn.weight' data_offsets [0, 100) hold 100 bytes but "
                        "shape (5, 6) of F32 needs 120"});
  expect_refused(write_st(R"({"t": {"dtype": "F64", "shape": [4294967296, 4294967296],)"
                          R"( "data_offsets": [0, 8]}})",
                          8),
                 {"'t'", "overflows"});
}

TEST_F(SafetensorsTest, RefusesOverlappingTensors) {
  expect_refused(write_st(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},)"
                          R"( "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                          12),
                 {"'a' [0, 8)", "'b' [4, 12)", "overlap"});
}

TEST_F(SafetensorsTest, RefusesHolesInTheDataBuffer) {
  expect_refused(write_st(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
                          R"( "b": {"dtype": "F32", "shape": [1], "data_offsets": [8, 12]}})",
                          12),
                 {"hole", "[4, 8)", "'b'"});
  expect_refused(write_st(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", 8),
                 {"hole", "[0, 4)", "'a'"});
  expect_refused(write_st(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", 6),
                 {"hole", "[4, 6)", "after the last tensor"});
}

TEST_F(SafetensorsTest, RefusesDuplicateNames) {
  expect_refused(write_st(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
                          R"( "a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
                          8),
                 {"duplicate tensor name 'a'"});
  expect_refused(write_st(R"({"a": {"dtype": "F32", "dtype": "I32", "shape": [1],)"
                          R"( "data_offsets": [0, 4]}})",
                          4),
                 {"duplicate key 'dtype' inside 'a'"});
}

TEST_F(SafetensorsTest, AcceptsHandWrittenFileWithExtraFieldsAndZeroSizeTensors) {
  // Unpadded header, fields in another order, unknown fields ignored, a
  // zero-size tensor between two others.
  const std::string file = write_st(
      R"({"b":{"shape":[],"dtype":"I32","data_offsets":[4,8]},"e":{"dtype":"F16","shape":[0,5],)"
      R"("data_offsets":[4,4]},"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4],"x":1}})",
      8);
  const auto f = SafetensorsFile::open(file);
  ASSERT_EQ(f.entries().size(), 3u);
  EXPECT_EQ(f.entries()[0].name, "a");
  EXPECT_EQ(f.at("b").shape, std::vector<int64_t>{});
  EXPECT_EQ(f.at("e").nbytes(), 0u);
}

// ---- atomic writing ----

TEST_F(SafetensorsTest, FailedWriteLeavesNothingBehind) {
  const std::string target = path("out.bin");
  EXPECT_THROW(write_file_atomically(target,
                                     [](std::ostream& out) {
                                       out << "partial";
                                       throw std::runtime_error("boom");
                                     }),
               std::runtime_error);
  EXPECT_FALSE(fs::exists(target));
  EXPECT_FALSE(fs::exists(atomic_temp_path(target)));
  EXPECT_TRUE(fs::is_empty(dir_));

  // An existing file survives a failed rewrite untouched.
  write_file_atomically(target, [](std::ostream& out) { out << "old"; });
  EXPECT_THROW(write_file_atomically(target,
                                     [](std::ostream& out) {
                                       out << "new";
                                       throw Error("boom");
                                     }),
               Error);
  std::ifstream in(target);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(in), {}), "old");
  EXPECT_FALSE(fs::exists(atomic_temp_path(target)));
}

TEST_F(SafetensorsTest, WriteIntoMissingDirectoryNamesThePath) {
  const std::string target = path("no/such/dir/m.safetensors");
  SafetensorsWriter w;
  try {
    w.write(target);
    ADD_FAILURE() << "wrote into a missing directory";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(target), std::string::npos) << e.what();
  }
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(SafetensorsTest, WriterWithBadNameLeavesNothingBehind) {
  const float x = 1;
  SafetensorsWriter w;
  w.add("bad\xff", DType::F32, {}, &x);  // not UTF-8: the header cannot be encoded
  EXPECT_THROW(w.write(path("m.safetensors")), Error);
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(SafetensorsTest, RewriteReplacesAtomically) {
  const std::vector<float> a = {1}, b = {2, 3};
  SafetensorsWriter w1, w2;
  w1.add("t", DType::F32, {1}, a.data());
  w2.add("t", DType::F32, {2}, b.data());
  w1.write(path("m.safetensors"));
  const auto old = SafetensorsFile::open(path("m.safetensors"));  // mapping survives the rename
  w2.write(path("m.safetensors"));
  EXPECT_EQ(old.read_as_f32(old.at("t")), a);
  const auto now = SafetensorsFile::open(path("m.safetensors"));
  EXPECT_EQ(now.read_as_f32(now.at("t")), b);
}

}  // namespace
}  // namespace parallm
