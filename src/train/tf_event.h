// TensorBoard's event-file encoding, written by hand because it is small: a
// file is a sequence of TFRecords (uint64 length, masked CRC-32C of the
// length, the bytes, masked CRC-32C of the bytes; little-endian), each record
// one serialized `Event` protobuf (tensorboard/compat/proto/event.proto:
// wall_time 1, step 2, file_version 3, summary 5, session_log 7; a summary
// value is tag 1 + simple_value 2). Only the fields parallm writes exist here.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace parallm::tfevent {

// CRC-32C (Castagnoli), as TFRecord uses; crc32c("123456789") == 0xE3069283.
uint32_t crc32c(std::string_view bytes);
// TFRecord's masked form: rotate right by 15, add 0xa282ead8.
uint32_t masked_crc32c(std::string_view bytes);

// Event{wall_time, file_version "brain.Event:2"}: the first record of a file.
std::string file_version_event(double wall_time);
// Event{wall_time, step, summary{value{tag, simple_value}...}}.
std::string scalars_event(double wall_time, int64_t step,
                          const std::vector<std::pair<std::string, float>>& scalars);
// Event{wall_time, step, session_log{status START}}: TensorBoard drops the
// events of this step and later ones that an earlier (interrupted) run of
// the same directory wrote, so a resumed run reads as one curve.
std::string session_start_event(double wall_time, int64_t step);

// One TFRecord holding `payload`.
std::string tf_record(std::string_view payload);

}  // namespace parallm::tfevent
