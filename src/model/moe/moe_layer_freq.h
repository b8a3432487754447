// Megatron's list expressions for --moe-layer-freq (TOML moe_layer_freq as a
// string): Python-like arithmetic on integers and lists, e.g.
// "([1]*3+[0]*1)*3" or "[0]+[1]*23", giving one 0 (dense) or 1 (MoE) per
// layer. Grammar: expr = term {'+' term}; term = factor {'*' factor};
// factor = integer | '[' [expr {',' expr}] ']' | '(' expr ')'. list + list
// concatenates, list * n (or n * list) repeats, numbers add and multiply.
// Anything else (names, calls, nested lists, entries other than 0/1) is
// refused with a message naming the text; nothing is evaluated by Python.
#pragma once
#include <string>
#include <vector>

namespace parallm {

// The 0/1 pattern of the list expression `text`; throws, naming the text and
// the position, on anything outside the grammar or a result that is not a
// non-empty list of 0 and 1.
std::vector<int> parse_moe_layer_freq_list(const std::string& text);

}  // namespace parallm
