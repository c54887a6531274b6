// Filter: the `--where` expression language, parsed once and evaluated per record.
//
//   status>=500                       numbers compare as numbers
//   path~^/api and method==POST       `~` is a regular expression search (RE2 syntax)
//   not (host=="10.0.0.1" or agent~bot)
//   duration > 0.5 || status == 404
//   referrer                          a bare field: present and not empty
//   path !~ "\.(css|js)$"             `!~` is the negation of `~`
//
// Grammar:
//   expr       := and (("or" | "||") and)*
//   and        := unary (("and" | "&&") unary)*
//   unary      := ("not" | "!") unary | "(" expr ")" | comparison
//   comparison := field [op value]
//   op         := == | = | != | < | <= | > | >= | ~ | !~
//   value      := number | "text" | 'text' | word
// Numeric fields: status, bytes, duration, time (seconds since the epoch), severity, facility.
// Text fields: host, user, method, path, protocol, referrer, agent, program, pid, message,
// timestamp; any other name is a field that the format kept (a JSON key, say). A comparison with
// a field the record does not have is false.
//
// Contract: `parse` throws FilterError, whose position() is the 0-based offset of the problem in
// the text, and whose what() says what was expected. A parsed Filter is immutable and may be
// evaluated from many threads at once.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "conveyor/stages/record.hpp"

namespace conveyor::stages {

class FilterError : public std::runtime_error {
 public:
  FilterError(std::size_t position, const std::string& message)
      : std::runtime_error(message), position_(position) {}
  [[nodiscard]] std::size_t position() const noexcept { return position_; }

 private:
  std::size_t position_;
};

class Filter {
 public:
  // Matches everything.
  Filter();
  ~Filter();
  Filter(Filter&&) noexcept;
  Filter& operator=(Filter&&) noexcept;

  static Filter parse(std::string_view text);
  // All of them must hold (how several --where options combine).
  static Filter parse_all(const std::vector<std::string>& texts);

  [[nodiscard]] bool matches(const Record& record) const;
  [[nodiscard]] bool matches_everything() const noexcept;

  struct Node;

 private:
  explicit Filter(std::shared_ptr<const Node> root);
  std::shared_ptr<const Node> root_;
};

}  // namespace conveyor::stages
