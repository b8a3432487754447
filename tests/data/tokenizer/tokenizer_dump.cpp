// tokenizer_dump DIR CORPUS_JSON OUT_JSON: encodes every line of a JSON list
// of strings with the tokenizer in DIR and writes, per line, the ids without
// and with special tokens, both decodes, the round trip, and the streaming
// decoder's pieces, for compare_tokenizers.py to hold against Hugging Face.
#include <fmt/core.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.h"
#include "data/tokenizer/stream_decoder.h"
#include "data/tokenizer/tokenizer.h"
#include "data/tokenizer/utf8.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    fmt::print(stderr, "usage: tokenizer_dump DIR CORPUS_JSON OUT_JSON\n");
    return 2;
  }
  try {
    auto tok = parallm::load_tokenizer(argv[1]);
    std::ifstream in(argv[2]);
    std::stringstream ss;
    ss << in.rdbuf();
    const nlohmann::json lines = nlohmann::json::parse(ss.str());
    nlohmann::json out = nlohmann::json::array();
    for (const auto& l : lines) {
      const std::string text = l.get<std::string>();
      nlohmann::json r;
      const std::vector<int32_t> ids = tok->encode(text, false);
      const std::vector<int32_t> ids_sp = tok->encode(text, true);
      r["ids"] = ids;
      r["ids_special"] = ids_sp;
      r["decode"] = tok->decode(ids_sp, false);
      r["decode_skip"] = tok->decode(ids_sp, true);
      r["roundtrip"] = tok->decode(ids, false);
      parallm::StreamDecoder stream(*tok, false);
      nlohmann::json pieces = nlohmann::json::array();
      bool valid = true;
      int held = 0;
      for (int32_t id : ids_sp) {
        std::string piece = stream.push(id);
        valid = valid && parallm::utf8_valid(piece);
        // A token whose bytes (all of them) were held for the next one.
        if (piece.empty() && !tok->decode({&id, 1}, false).empty()) ++held;
        pieces.push_back(std::move(piece));
      }
      pieces.push_back(stream.flush());
      r["stream"] = pieces;
      r["stream_valid"] = valid;
      r["stream_held"] = held;
      out.push_back(std::move(r));
    }
    std::ofstream o(argv[3]);
    o << out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    return o.good() ? 0 : 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "tokenizer_dump: {}\n", e.what());
    return 1;
  }
}
