// The syntax tree of a parsed chat template: expressions (Expr) and the
// statements of the supported tags (Stmt). Built by template_parser, walked by
// template_renderer.
// Invariant: every filter, test, function and method name in a tree is one
// template_builtins supports (the parser refuses the rest, naming them), so a
// template that parses can fail at render time only on its values.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "infer/chat/template_value.h"

namespace parallm::chat {

enum class ExprKind {
  Literal,  // literal
  Name,     // name
  List,     // args: items
  Dict,     // args: key0, value0, key1, value1, ...
  Attr,     // args[0].name
  Item,     // args[0][args[1]]
  Slice,    // args[0][args[1]:args[2]:args[3]], absent parts null
  Call,     // name(args, kwargs): a global function
  Method,   // args[0].name(args[1:], kwargs)
  Filter,   // args[0] | name(args[1:], kwargs)
  Test,     // args[0] is [not] name(args[1:])
  Neg,      // -args[0]
  Pos,      // +args[0]
  Binary,   // args[0] name args[1]: + - * / // % ** ~
  Compare,  // args[0] ops[0] args[1] ops[1] args[2] ...: == != < > <= >= in notin
  And,
  Or,
  Not,
  Cond,  // args[0] if args[1] else args[2] (args[2] null: undefined)
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  ExprKind kind;
  int line = 0;
  Value literal;
  std::string name;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
  bool negated = false;  // `is not`
};

inline ExprPtr make_expr(ExprKind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

enum class StmtKind {
  Text,     // text
  Output,   // {{ expr }}
  If,       // branches: (condition, body); a null condition is the else branch
  For,      // {% for targets in expr [if filter] %} body [{% else %} else_body]
  Set,      // {% set targets[0] = expr %}
  SetAttr,  // {% set targets[0].targets[1] = expr %}
};

struct Stmt;
using Body = std::vector<Stmt>;

struct Stmt {
  StmtKind kind;
  int line = 0;
  std::string text;
  ExprPtr expr;
  std::vector<std::pair<ExprPtr, Body>> branches;
  std::vector<std::string> targets;
  ExprPtr filter;
  Body body;
  Body else_body;
};

}  // namespace parallm::chat
