// The --where language: a recursive-descent parser into a small tree, evaluated per record.
#include "conveyor/stages/filter.hpp"

#include <re2/re2.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <utility>

namespace conveyor::stages {

namespace {

enum class Op { eq, ne, lt, le, gt, ge, match, no_match, present };

enum class FieldId {
  status,
  bytes,
  duration,
  time,
  severity,
  facility,  // numeric
  host,
  user,
  method,
  path,
  protocol,
  referrer,
  agent,
  program,
  pid,
  message,
  timestamp,
  extra
};

bool is_numeric(FieldId field) noexcept {
  return field <= FieldId::facility;
}

FieldId field_id(std::string_view name) noexcept {
  static constexpr std::pair<std::string_view, FieldId> names[] = {
      {"status", FieldId::status},
      {"bytes", FieldId::bytes},
      {"duration", FieldId::duration},
      {"time", FieldId::time},
      {"severity", FieldId::severity},
      {"facility", FieldId::facility},
      {"host", FieldId::host},
      {"user", FieldId::user},
      {"method", FieldId::method},
      {"path", FieldId::path},
      {"protocol", FieldId::protocol},
      {"referrer", FieldId::referrer},
      {"agent", FieldId::agent},
      {"program", FieldId::program},
      {"pid", FieldId::pid},
      {"message", FieldId::message},
      {"timestamp", FieldId::timestamp}};
  for (const auto& [text, id] : names) {
    if (name == text) return id;
  }
  return FieldId::extra;
}

// Whether all of `text` is a number (from_chars' form), and which.
bool whole_number(std::string_view text, double& number) noexcept {
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  return !text.empty() && error == std::errc() && end == text.data() + text.size();
}

// NaN when absent.
double number_of(const Record& r, FieldId field) noexcept {
  constexpr double absent = std::numeric_limits<double>::quiet_NaN();
  switch (field) {
    case FieldId::status:
      return r.status < 0 ? absent : r.status;
    case FieldId::bytes:
      return r.bytes < 0 ? absent : static_cast<double>(r.bytes);
    case FieldId::duration:
      return r.duration;
    case FieldId::time:
      return r.has_time() ? static_cast<double>(r.time) : absent;
    case FieldId::severity:
      return r.severity < 0 ? absent : r.severity;
    case FieldId::facility:
      return r.facility < 0 ? absent : r.facility;
    default:
      return absent;
  }
}

// Empty when absent.
std::string_view text_of(const Record& r, FieldId field, const std::string& name) noexcept {
  switch (field) {
    case FieldId::host:
      return r.host;
    case FieldId::user:
      return r.user;
    case FieldId::method:
      return r.method;
    case FieldId::path:
      return r.path;
    case FieldId::protocol:
      return r.protocol;
    case FieldId::referrer:
      return r.referrer;
    case FieldId::agent:
      return r.agent;
    case FieldId::program:
      return r.program;
    case FieldId::pid:
      return r.pid;
    case FieldId::message:
      return r.message;
    case FieldId::timestamp:
      return r.timestamp;
    case FieldId::extra:
      for (const Field& f : r.extra) {
        if (f.name == name) return f.value;
      }
      return {};
    default:
      return {};
  }
}

}  // namespace

struct Filter::Node {
  enum class Kind { all, any, negate, compare, always };
  Kind kind = Kind::always;
  std::vector<std::unique_ptr<Node>> children;
  // compare
  FieldId field = FieldId::extra;
  std::string name;
  Op op = Op::present;
  std::string text;
  double number = 0;
  bool numeric_value = false;
  std::unique_ptr<const re2::RE2> pattern;  // RE2: linear time, bounded memory, thread-safe

  [[nodiscard]] bool eval(const Record& r) const {
    switch (kind) {
      case Kind::always:
        return true;
      case Kind::all:
        for (const auto& child : children) {
          if (!child->eval(r)) return false;
        }
        return true;
      case Kind::any:
        for (const auto& child : children) {
          if (child->eval(r)) return true;
        }
        return false;
      case Kind::negate:
        return !children.front()->eval(r);
      case Kind::compare:
        return compare(r);
    }
    return false;
  }

  // The comparison of a value with the expression's, numbers or texts alike; nullopt for a
  // regular expression.
  template <class V>
  [[nodiscard]] std::optional<bool> ordered(const V& value, const V& against) const {
    switch (op) {
      case Op::present:
        return true;
      case Op::eq:
        return value == against;
      case Op::ne:
        return value != against;
      case Op::lt:
        return value < against;
      case Op::le:
        return value <= against;
      case Op::gt:
        return value > against;
      case Op::ge:
        return value >= against;
      case Op::match:
      case Op::no_match:
        break;
    }
    return std::nullopt;
  }

  [[nodiscard]] bool compare(const Record& r) const {
    if (is_numeric(field)) {
      const double value = number_of(r, field);
      if (std::isnan(value)) return false;
      if (const std::optional<bool> result = ordered(value, number)) return *result;
      // As the record writes it: the shortest form that reads back the same (0.7, 200).
      char formatted[32];
      const auto written = std::to_chars(std::begin(formatted), std::end(formatted), value);
      return re2::RE2::PartialMatch(
                 std::string_view(formatted, static_cast<std::size_t>(written.ptr - formatted)),
                 *pattern) == (op == Op::match);
    }
    if (field == FieldId::extra && numeric_value) {
      // A JSON number kept under its key compares with a number as a number (10 > 9).
      for (const Field& f : r.extra) {
        if (f.name != name || !f.number) continue;
        double value = 0;
        if (!whole_number(f.value, value)) break;
        if (const std::optional<bool> result = ordered(value, number)) return *result;
        break;
      }
    }
    const std::string_view value = text_of(r, field, name);
    if (value.empty()) return false;  // a field the record does not have
    if (const std::optional<bool> result = ordered(value, std::string_view(text))) return *result;
    return re2::RE2::PartialMatch(value, *pattern) == (op == Op::match);
  }
};

namespace {

using Node = Filter::Node;

class ExpressionParser {
 public:
  explicit ExpressionParser(std::string_view text) : text_(text) {}

  std::unique_ptr<Node> parse() {
    auto root = disjunction();
    skip_space();
    if (at_ < text_.size()) fail("expected 'and', 'or' or the end of the expression");
    return root;
  }

 private:
  [[noreturn]] void fail(const std::string& message) const {
    throw FilterError(at_, "at position " + std::to_string(at_ + 1) + ": " + message);
  }

  void skip_space() {
    while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t'))
      ++at_;
  }

  // Consumes `word` (a keyword, followed by a non-word character) or `symbol`.
  bool keyword(std::string_view word) {
    skip_space();
    if (text_.substr(at_, word.size()) != word) return false;
    const std::size_t after = at_ + word.size();
    if (after < text_.size() &&
        (std::isalnum(static_cast<unsigned char>(text_[after])) != 0 || text_[after] == '_')) {
      return false;
    }
    at_ = after;
    return true;
  }
  bool symbol(std::string_view sym) {
    skip_space();
    if (text_.substr(at_, sym.size()) != sym) return false;
    at_ += sym.size();
    return true;
  }

  std::unique_ptr<Node> disjunction() {
    auto first = conjunction();
    if (!(keyword("or") || symbol("||"))) return first;
    auto node = std::make_unique<Node>();
    node->kind = Node::Kind::any;
    node->children.push_back(std::move(first));
    do {
      node->children.push_back(conjunction());
    } while (keyword("or") || symbol("||"));
    return node;
  }

  std::unique_ptr<Node> conjunction() {
    auto first = unary();
    if (!(keyword("and") || symbol("&&"))) return first;
    auto node = std::make_unique<Node>();
    node->kind = Node::Kind::all;
    node->children.push_back(std::move(first));
    do {
      node->children.push_back(unary());
    } while (keyword("and") || symbol("&&"));
    return node;
  }

  std::unique_ptr<Node> unary() {
    if (++depth_ > 64) fail("too deeply nested");
    std::unique_ptr<Node> node;
    skip_space();
    if (keyword("not") ||
        (text_.substr(at_, 2) != "!=" && text_.substr(at_, 2) != "!~" && symbol("!"))) {
      node = std::make_unique<Node>();
      node->kind = Node::Kind::negate;
      node->children.push_back(unary());
    } else if (symbol("(")) {
      node = disjunction();
      if (!symbol(")")) fail("expected ')'");
    } else {
      node = comparison();
    }
    --depth_;
    return node;
  }

  std::unique_ptr<Node> comparison() {
    skip_space();
    const std::size_t start = at_;
    while (at_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[at_])) != 0 || text_[at_] == '_' ||
            text_[at_] == '.' || text_[at_] == '@' || text_[at_] == '-')) {
      ++at_;
    }
    if (at_ == start) fail("expected a field name, 'not' or '('");
    auto node = std::make_unique<Node>();
    node->kind = Node::Kind::compare;
    node->name = std::string(text_.substr(start, at_ - start));
    node->field = field_id(node->name);
    node->op = op();
    if (node->op == Op::present) return node;
    skip_space();
    const std::size_t value_at = at_;
    value(*node);
    if (node->op == Op::match || node->op == Op::no_match) {
      re2::RE2::Options options;
      options.set_log_errors(false);
      auto pattern = std::make_unique<const re2::RE2>(node->text, options);
      if (!pattern->ok()) {
        at_ = value_at;
        fail("bad regular expression: " + pattern->error());
      }
      node->pattern = std::move(pattern);
    } else if (is_numeric(node->field)) {
      if (!node->numeric_value) {
        at_ = value_at;
        fail("'" + node->name + "' is a number: compare it with a number");
      }
    }
    return node;
  }

  Op op() {
    skip_space();
    static constexpr std::pair<std::string_view, Op> ops[] = {
        {"==", Op::eq}, {"!=", Op::ne}, {"<=", Op::le}, {">=", Op::ge},  {"!~", Op::no_match},
        {"=", Op::eq},  {"<", Op::lt},  {">", Op::gt},  {"~", Op::match}};
    for (const auto& [text, op] : ops) {
      if (text_.substr(at_, text.size()) == text) {
        at_ += text.size();
        return op;
      }
    }
    return Op::present;
  }

  void value(Node& node) {
    if (at_ >= text_.size()) fail("expected a value");
    const char quote = text_[at_];
    if (quote == '"' || quote == '\'') {
      ++at_;
      std::string text;
      while (at_ < text_.size() && text_[at_] != quote) {
        if (text_[at_] == '\\' && at_ + 1 < text_.size()) ++at_;
        text += text_[at_++];
      }
      if (at_ >= text_.size()) fail(std::string("expected a closing ") + quote);
      ++at_;
      node.text = std::move(text);
    } else {
      // A bare word ends at a space, a ')', or an '&&' or '||' written without spaces.
      const std::size_t start = at_;
      while (at_ < text_.size() && text_[at_] != ' ' && text_[at_] != '\t' && text_[at_] != ')' &&
             text_.substr(at_, 2) != "&&" && text_.substr(at_, 2) != "||") {
        ++at_;
      }
      if (at_ == start) fail("expected a value");
      node.text = std::string(text_.substr(start, at_ - start));
    }
    node.numeric_value = whole_number(node.text, node.number);
  }

  std::string_view text_;
  std::size_t at_ = 0;
  int depth_ = 0;
};

}  // namespace

Filter::Filter() = default;
Filter::~Filter() = default;
Filter::Filter(Filter&&) noexcept = default;
Filter& Filter::operator=(Filter&&) noexcept = default;
Filter::Filter(std::shared_ptr<const Node> root) : root_(std::move(root)) {}

Filter Filter::parse(std::string_view text) {
  return Filter(ExpressionParser(text).parse());
}

Filter Filter::parse_all(const std::vector<std::string>& texts) {
  if (texts.empty()) return Filter();
  if (texts.size() == 1) return parse(texts.front());
  auto node = std::make_unique<Node>();
  node->kind = Node::Kind::all;
  for (const std::string& text : texts)
    node->children.push_back(ExpressionParser(text).parse());
  return Filter(std::move(node));
}

bool Filter::matches(const Record& record) const {
  return root_ == nullptr || root_->eval(record);
}

bool Filter::matches_everything() const noexcept {
  return root_ == nullptr;
}

}  // namespace conveyor::stages
