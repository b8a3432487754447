// JSON Schema -> Grammar, for response_format json_schema and json_object.
// Supported: type (one or a list), object (properties in schema order,
// required, additionalProperties: false by default as in OpenAI's strict
// mode, or a schema when there are no properties), array (items, minItems,
// maxItems), string (minLength, maxLength, or pattern, or format; the JSON
// escapes), integer (minimum, maximum and the exclusive ones, as
// json_schema_scalars.h can), number, boolean, null, enum, const, anyOf,
// oneOf (as anyOf), a one-item
// allOf, and local $ref (#, #/$defs/.., #/definitions/.., recursive ones
// too). Annotations (title, description, default, examples...) are ignored;
// any other keyword is an Error naming it and where it is.
// The output is one line: no whitespace but one optional space after ':'
// and ','. Numbers have at most 16 digits before and after the point and
// 3 in the exponent, so every bounded schema has a bounded output.
#pragma once
#include <nlohmann/json.hpp>

#include "infer/structured/grammar.h"

namespace parallm::structured {

inline constexpr int64_t kMaxSchemaLength = 10000;  // maxLength, maxItems and the like

Grammar json_schema_grammar(const nlohmann::ordered_json& schema);
// Any JSON value that is an object (response_format json_object).
Grammar json_object_grammar();

}  // namespace parallm::structured
