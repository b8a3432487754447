// Safetensors (the Hugging Face tensor file format), read and write.
// SafetensorsFile (safetensors_reader.h) maps and validates a file;
// SafetensorsWriter (safetensors_writer.h) writes one atomically.
// Invariant: whatever the writer produces, the reader accepts unchanged.
#pragma once
#include "io/safetensors_reader.h"
#include "io/safetensors_writer.h"
