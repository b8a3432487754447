// The structured-output fields of a chat or completions request, read into
// a compiled grammar: OpenAI's response_format ({"type": "text"},
// {"type": "json_object"}, {"type": "json_schema", "json_schema": {"name",
// "schema", "strict"}}) and vLLM's structured_outputs ({"json": schema,
// "regex": ..., "grammar": GBNF, "choice": [..]}), with vLLM's older
// guided_json / guided_regex / guided_grammar / guided_choice as aliases.
// At most one of them may constrain a request. A field of the wrong shape,
// or a schema, regex or grammar that does not compile, is ApiError 400
// naming the field and the problem; a request without any gets null.
#pragma once
#include <nlohmann/json.hpp>

#include <memory>

#include "infer/serve/request_fields.h"
#include "infer/structured/byte_grammar.h"

namespace parallm::serve {

// ordered: the same body parsed keeping key order (a schema's properties
// are generated in the order written), or null to use `f`'s (sorted) order.
std::shared_ptr<const structured::ByteGrammar> structured_output_grammar(
    const RequestFields& f, const nlohmann::ordered_json* ordered);

}  // namespace parallm::serve
