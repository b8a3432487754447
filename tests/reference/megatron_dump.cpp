// megatron_dump: the reference test's window into parallm's Megatron reader
// and writer (tests/reference/megatron_compat.py).
//   megatron_dump read PREFIX   prints JSON: dtype code, sequence lengths,
//                               pointers, document indices, the tokens of every
//                               sequence, and the stream the DataLoader reads.
//   megatron_dump write PREFIX CODE DOCS.txt
//                               writes DOCS.txt (one document per line, token
//                               ids separated by spaces) with dtype CODE.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "data/data_loader.h"
#include "data/megatron_dataset.h"

using namespace parallm;

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "read" && argc == 3) {
      MegatronDataset ds(argv[2]);
      std::vector<std::string> seqs;
      for (int64_t i = 0; i < ds.num_sequences(); ++i)
        seqs.push_back(fmt::format("[{}]", fmt::join(ds.sequence(i), ",")));
      DataLoader dl({argv[2]}, 1, 0, false);
      std::vector<int32_t> stream(static_cast<size_t>(dl.num_tokens()));
      dl.read_tokens(0, dl.num_tokens(), stream.data());
      fmt::print(
          "{{\"dtype\": {}, \"lengths\": [{}], \"pointers\": [{}], \"document_indices\": [{}], "
          "\"sequences\": [{}], \"stream\": [{}]}}\n",
          static_cast<int>(ds.dtype()), fmt::join(ds.sequence_lengths(), ","),
          fmt::join(ds.sequence_pointers(), ","), fmt::join(ds.document_indices(), ","),
          fmt::join(seqs, ","), fmt::join(stream, ","));
      return 0;
    }
    if (mode == "write" && argc == 5) {
      std::ifstream in(argv[4]);
      PX_CHECK(in.good(), "cannot read {}", argv[4]);
      std::vector<int32_t> tokens;
      std::vector<int64_t> offsets{0};
      for (std::string line; std::getline(in, line);) {
        std::istringstream ls(line);
        for (int64_t v; ls >> v;) tokens.push_back(static_cast<int32_t>(v));
        offsets.push_back(static_cast<int64_t>(tokens.size()));
      }
      write_megatron_dataset(argv[2], tokens, offsets,
                             static_cast<MegatronDType>(std::stoi(argv[3])));
      return 0;
    }
    std::fprintf(stderr, "usage: megatron_dump read PREFIX | write PREFIX CODE DOCS.txt\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
