// DataLoader: stream indexing across sources (binary search on source
// starts), the keyed per-epoch order (Feistel permutation with cycle walking)
// and, for a blend, the source schedule. Nothing but the schedule's locked
// cache changes after construction, so fills may run concurrently.
#include "data/data_loader.h"

#include <glob.h>

#include <algorithm>
#include <bit>
#include <utility>

#include "base/error.h"
#include "base/rng.h"

namespace parallm {

namespace {
constexpr int kFeistelRounds = 6;
}

int64_t permute_index(int64_t i, int64_t n, uint64_t key) {
  PX_CHECK(i >= 0 && i < n, "permute_index: index {} is outside [0, {})", i, n);
  if (n == 1) return 0;
  const int bits = 64 - std::countl_zero(static_cast<uint64_t>(n - 1));
  const int half = (bits + 1) / 2;  // balanced halves; domain 2^(2*half) < 4n
  const uint64_t mask = (uint64_t{1} << half) - 1;
  uint64_t x = static_cast<uint64_t>(i);
  // Each pass is a bijection of [0, 2^(2*half)); re-applying it until the value
  // lands in [0, n) restricts it to a bijection of [0, n) (cycle walking).
  do {
    uint64_t l = x >> half, r = x & mask;
    for (int round = 0; round < kFeistelRounds; ++round) {
      uint64_t f = mix64(key ^ mix64(r ^ (static_cast<uint64_t>(round) << 56))) & mask;
      l ^= f;
      std::swap(l, r);
    }
    x = (l << half) | r;
  } while (x >= static_cast<uint64_t>(n));
  return static_cast<int64_t>(x);
}

std::vector<std::string> expand_shard_paths(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const std::string& p : paths) {
    if (p.find('*') == std::string::npos) {
      out.push_back(p);
      continue;
    }
    glob_t g{};
    int rc = ::glob(p.c_str(), 0, nullptr, &g);  // results come sorted
    if (rc == 0) {
      for (size_t k = 0; k < g.gl_pathc; ++k) out.emplace_back(g.gl_pathv[k]);
    }
    ::globfree(&g);
    PX_CHECK(rc == 0, "data pattern {} matches no files", p);
  }
  return out;
}

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;  // joined by hand: fmt::join of strings trips a gcc 12 warning
  for (const std::string& f : names) out += (out.empty() ? "" : ", ") + f;
  return out;
}

}  // namespace

struct DataLoader::Stream {
  std::vector<std::unique_ptr<TokenSource>> sources;
  std::vector<int64_t> starts;  // starts[i] = stream offset of source i; back() = N
  int64_t windows = 0;
  uint64_t key = 0;  // keys the per-epoch permutations

  int64_t size() const { return starts.back(); }

  void read(int64_t begin, int64_t n, int32_t* out) const {
    // Source k holds stream [starts[k], starts[k+1]); empty sources are
    // skipped naturally because upper_bound lands past them.
    size_t k = static_cast<size_t>(std::upper_bound(starts.begin(), starts.end(), begin) -
                                   starts.begin()) -
               1;
    while (n > 0) {
      const int64_t local = begin - starts[k];
      const int64_t take = std::min(n, sources[k]->size() - local);
      sources[k]->read(local, take, out);
      out += take;
      begin += take;
      n -= take;
      ++k;
    }
  }

  int64_t window_of(int64_t sample, bool shuffle) const {
    const int64_t pos = sample % windows;
    if (!shuffle) return pos;
    const uint64_t epoch = static_cast<uint64_t>(sample / windows);
    return permute_index(pos, windows, mix64(key ^ mix64(epoch)));
  }
};

DataLoader::DataLoader(std::vector<std::string> spec, int64_t T, uint64_t seed, bool shuffle)
    : T_(T), seed_(seed), shuffle_(shuffle) {
  PX_CHECK(T >= 1, "data loader: seq_len must be >= 1 (got {})", T);
  PX_CHECK(!spec.empty(), "data loader: no data files given");
  const DataSpec parsed = parse_data_spec(spec);
  for (size_t d = 0; d < parsed.sources.size(); ++d) {
    auto st = std::make_unique<Stream>();
    const std::vector<std::string> paths = expand_shard_paths(parsed.sources[d]);
    st->starts.push_back(0);
    for (const std::string& f : paths) {
      st->sources.push_back(open_token_source(f));
      st->starts.push_back(st->starts.back() + st->sources.back()->size());
      files_.push_back(f);
    }
    // A single stream keeps the key it always had, so existing runs resume
    // in the same order; blend sources get one key each.
    st->key = parsed.blended() ? mix64(stream_key(seed, "data.blend_window_order") ^ mix64(d))
                               : stream_key(seed, "data.window_order");
    const int64_t n = st->size();
    if (n < T + 1) {
      PX_FAIL(
          "data has {} tokens in total ({}), but seq_len {} needs at least seq_len + 1 = {} "
          "tokens{}",
          n, joined(paths), T, T + 1, parsed.blended() ? " in each blended source" : "");
    }
    st->windows = (n - 1) / T;
    streams_.push_back(std::move(st));
  }
  if (parsed.blended()) blend_ = std::make_unique<BlendSchedule>(parsed.weights);
}

DataLoader::~DataLoader() = default;
DataLoader::DataLoader(DataLoader&&) noexcept = default;
DataLoader& DataLoader::operator=(DataLoader&&) noexcept = default;

int64_t DataLoader::num_tokens() const {
  int64_t n = 0;
  for (const auto& s : streams_) n += s->size();
  return n;
}

int64_t DataLoader::num_windows() const {
  int64_t n = 0;
  for (const auto& s : streams_) n += s->windows;
  return n;
}

const std::vector<double>& DataLoader::blend_weights() const {
  static const std::vector<double> kNone;
  return blend_ ? blend_->weights() : kNone;
}

DataLoader::SampleRef DataLoader::locate(int64_t sample) const {
  PX_CHECK(sample >= 0, "data loader: sample index {} is negative", sample);
  if (!blend_) return {0, streams_[0]->window_of(sample, shuffle_)};
  const BlendSchedule::Pick p = blend_->pick(sample);
  return {p.source, streams_[static_cast<size_t>(p.source)]->window_of(p.source_sample, shuffle_)};
}

void DataLoader::read_tokens(int64_t begin, int64_t n, int32_t* out) const {
  PX_CHECK(begin >= 0 && n >= 0 && begin + n <= num_tokens(),
           "data loader: tokens [{}, {}) are outside the stream [0, {})", begin, begin + n,
           num_tokens());
  for (const auto& s : streams_) {
    if (n == 0) break;
    if (begin >= s->size()) {
      begin -= s->size();
      continue;
    }
    const int64_t take = std::min(n, s->size() - begin);
    s->read(begin, take, out);
    out += take;
    n -= take;
    begin = 0;
  }
}

void DataLoader::fill_window(int64_t sample, int32_t* inputs, int32_t* targets) const {
  const SampleRef r = locate(sample);
  const Stream& s = *streams_[static_cast<size_t>(r.stream)];
  const int64_t start = r.window * T_;
  s.read(start, T_, inputs);
  s.read(start + 1, T_, targets);
}

void DataLoader::fill_batch(int64_t first_sample, int64_t B, int32_t* inputs,
                            int32_t* targets) const {
  PX_CHECK(B >= 0, "data loader: batch size {} is negative", B);
  for (int64_t b = 0; b < B; ++b) {
    fill_window(first_sample + b, inputs + b * T_, targets + b * T_);
  }
}

int64_t DataLoader::max_token() const {
  int64_t m = -1;
  for (const auto& s : streams_)
    for (const auto& src : s->sources) m = std::max(m, src->max_token());
  return m;
}

void DataLoader::validate_vocab(int64_t vocab) const {
  PX_CHECK(vocab >= 1, "data loader: vocab_size must be >= 1 (got {})", vocab);
  for (const auto& s : streams_) {
    for (const auto& src : s->sources) {
      const int64_t i = src->find_token_outside(vocab);
      PX_CHECK(i < 0,
               "data file {}: token id {} at position {} is outside the vocabulary (vocab_size "
               "{}); was the data tokenized for another model?",
               src->path(), src->at(i), i, vocab);
    }
  }
}

}  // namespace parallm
