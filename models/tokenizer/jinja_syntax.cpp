// parse_template (jinja_syntax.h): a template's text cut into tags, then each tag's tokens parsed
// by recursive descent in jinja2's precedence, lowest first:
//   x if c else y  <  or  <  and  <  not  <  == != < > <= >= in, not in  <  + -  <  ~  <
//   * / // %  <  **  <  unary -  <  postfix (.a [i] [i:j] (args))  <  filters | f and tests is t
// Cost: one pass over the text, one over each tag's tokens.
#include "models/tokenizer/jinja_syntax.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <limits>
#include <map>
#include <optional>
#include <utility>

#include "models/tokenizer/utf8.h"
#include "runtime/error.h"

namespace attnscope::tokenizer::jinja {

namespace {

// How deep expressions and blocks may nest: far beyond any chat template, far below what would
// overflow the parser's (and the renderer's) stack.
constexpr int kMaxNesting = 256;

// Counts one level of nesting while it lives.
class NestingGuard {
 public:
  NestingGuard(int& depth, int line, const char* what) : depth_(depth) {
    if (++depth_ > kMaxNesting) {
      template_error(
          line, std::string(what) + " nest deeper than " + std::to_string(kMaxNesting) + " levels");
    }
  }
  ~NestingGuard() { --depth_; }
  NestingGuard(const NestingGuard&) = delete;
  NestingGuard& operator=(const NestingGuard&) = delete;

 private:
  int& depth_;
};

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// ---- scanning: text, {{ }}, {% %} and {# #}, with jinja2's whitespace rules ----

struct Token {
  enum class Kind { name, string, integer, floating, op };
  Kind kind;
  std::string text;  // a name or an operator; a string's value
  Value number;
  int line;
};

struct Tag {
  enum class Kind { text, output, statement };
  Kind kind;
  std::string text;
  std::vector<Token> tokens;
  int line;
};

// A Python string literal's escapes, as jinja2 decodes them ("unicode-escape").
std::string unescape(std::string_view body, int line) {
  std::string out;
  for (std::size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '\\' || i + 1 == body.size()) {
      out += body[i];
      continue;
    }
    const char c = body[++i];
    const auto hex = [&](int digits) {
      if (i + digits >= body.size())
        template_error(line, "a truncated \\" + std::string(1, c) + " escape");
      std::uint32_t value = 0;
      const auto [end, ec] =
          std::from_chars(body.data() + i + 1, body.data() + i + 1 + digits, value, 16);
      if (ec != std::errc() || end != body.data() + i + 1 + digits) {
        template_error(line, "a malformed \\" + std::string(1, c) + " escape");
      }
      if (value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF)) {
        template_error(line, "an escape outside Unicode's scalar values");
      }
      i += digits;
      out += encode_utf8(value);
    };
    switch (c) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case '\\':
        out += '\\';
        break;
      case '\'':
        out += '\'';
        break;
      case '"':
        out += '"';
        break;
      case 'a':
        out += '\a';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'v':
        out += '\v';
        break;
      case '\n':
        break;  // a backslash-newline continues the line
      case 'x':
        hex(2);
        break;
      case 'u':
        hex(4);
        break;
      case 'U':
        hex(8);
        break;
      default:
        out += '\\';
        out += c;  // unknown escapes stay as written, as in Python
    }
  }
  return out;
}

class Scanner {
 public:
  explicit Scanner(std::string_view source) {
    // jinja2 reads \r\n and \r as \n, and drops one newline at the very end
    // (keep_trailing_newline is off).
    for (std::size_t i = 0; i < source.size(); ++i) {
      if (source[i] == '\r') {
        text_ += '\n';
        if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
      } else {
        text_ += source[i];
      }
    }
    if (!text_.empty() && text_.back() == '\n') text_.pop_back();
  }

  std::vector<Tag> scan() {
    std::vector<Tag> tags;
    bool line_starting = true;  // the text before the next tag starts a line
    while (pos_ < text_.size()) {
      const std::size_t open = find_open();
      std::string text = text_.substr(pos_, open - pos_);
      const int text_line = line_;
      count_lines(pos_, open);
      if (open == text_.size()) {
        tags.push_back({Tag::Kind::text, std::move(text), {}, text_line});
        break;
      }
      const char kind = text_[open + 1];
      std::size_t inside = open + 2;
      const char sign =
          inside < text_.size() && (text_[inside] == '-' || (kind != '{' && text_[inside] == '+'))
              ? text_[inside]
              : 0;
      if (sign) ++inside;
      if (sign == '-') {
        while (!text.empty() && is_space(text.back())) text.pop_back();
      } else if (sign != '+' && kind != '{') {
        // lstrip_blocks: a block or comment tag takes the indentation before it on its line.
        const std::size_t line_start =
            text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
        if ((line_start > 0 || line_starting) && line_start < text.size() &&
            std::all_of(text.begin() + static_cast<std::ptrdiff_t>(line_start), text.end(),
                        is_space)) {
          text.resize(line_start);
        }
      }
      if (!text.empty()) tags.push_back({Tag::Kind::text, std::move(text), {}, text_line});
      const int tag_line = line_;
      pos_ = inside;
      if (kind == '#') {
        const std::size_t close = text_.find("#}", pos_);
        if (close == std::string::npos) template_error(tag_line, "a comment {# is never closed");
        count_lines(pos_, close);
        const char close_sign = close > pos_ && (text_[close - 1] == '-' || text_[close - 1] == '+')
                                    ? text_[close - 1]
                                    : 0;
        pos_ = close + 2;
        line_starting = after_block_end(close_sign, true);
        continue;
      }
      Tag tag{kind == '{' ? Tag::Kind::output : Tag::Kind::statement, {}, {}, tag_line};
      const char close_sign = tokenize(kind, tag);
      tags.push_back(std::move(tag));
      line_starting = after_block_end(close_sign, kind == '%');
    }
    return tags;
  }

 private:
  std::size_t find_open() const {
    for (std::size_t i = pos_; i + 1 < text_.size(); ++i) {
      if (text_[i] == '{' && (text_[i + 1] == '{' || text_[i + 1] == '%' || text_[i + 1] == '#')) {
        return i;
      }
    }
    return text_.size();
  }

  void count_lines(std::size_t from, std::size_t to) {
    line_ += static_cast<int>(std::count(text_.begin() + static_cast<std::ptrdiff_t>(from),
                                         text_.begin() + static_cast<std::ptrdiff_t>(to), '\n'));
  }

  // After a tag's end: `-` strips the whitespace that follows; trim_blocks drops the one newline
  // right after a block or comment tag (unless `+`). Says whether what follows starts a line.
  bool after_block_end(char close_sign, bool block) {
    const std::size_t from = pos_;
    if (close_sign == '-') {
      while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
    } else if (close_sign != '+' && block && pos_ < text_.size() && text_[pos_] == '\n') {
      ++pos_;
    }
    count_lines(from, pos_);
    return pos_ > from && text_[pos_ - 1] == '\n';
  }

  bool at(std::string_view s) const { return text_.compare(pos_, s.size(), s) == 0; }

  // Reads the tokens of a {{ }} or {% %} tag up to its end (outside brackets); returns the end's
  // sign ('-', '+' or 0).
  char tokenize(char kind, Tag& tag) {
    const std::string close = kind == '{' ? "}}" : "%}";
    int depth = 0;
    while (true) {
      while (pos_ < text_.size() && is_space(text_[pos_])) {
        if (text_[pos_] == '\n') ++line_;
        ++pos_;
      }
      if (pos_ >= text_.size())
        template_error(tag.line, std::string("a tag {") + kind + " is never closed");
      if (depth == 0) {
        for (const char sign : {'-', '+'}) {
          if (text_[pos_] == sign && at(std::string(1, sign) + close) &&
              (sign == '-' || kind == '%')) {
            pos_ += 3;
            return sign;
          }
        }
        if (at(close)) {
          pos_ += 2;
          return 0;
        }
      }
      tag.tokens.push_back(next_token(depth));
    }
  }

  Token next_token(int& depth) {
    const char c = text_[pos_];
    const int line = line_;
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const std::size_t start = pos_;
      while (pos_ < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) {
        ++pos_;
      }
      return {Token::Kind::name, text_.substr(start, pos_ - start), {}, line};
    }
    if (std::isdigit(static_cast<unsigned char>(c))) return number(line);
    if (c == '\'' || c == '"') {
      const std::size_t start = ++pos_;
      while (pos_ < text_.size() && text_[pos_] != c) {
        if (text_[pos_] == '\\') ++pos_;
        if (pos_ < text_.size() && text_[pos_] == '\n') ++line_;
        ++pos_;
      }
      if (pos_ >= text_.size()) template_error(line, "a string is never closed");
      const std::string body = text_.substr(start, pos_ - start);
      ++pos_;
      return {Token::Kind::string, unescape(body, line), {}, line};
    }
    static constexpr std::array<std::string_view, 6> kTwo = {"//", "**", "==", "!=", ">=", "<="};
    for (std::string_view op : kTwo) {
      if (at(op)) {
        pos_ += 2;
        return {Token::Kind::op, std::string(op), {}, line};
      }
    }
    if (std::string_view("+-*/%~<>=()[]{},.:|").find(c) == std::string_view::npos) {
      template_error(line, std::string("unexpected character '") + c + "'");
    }
    if (c == '(' || c == '[' || c == '{') ++depth;
    if ((c == ')' || c == ']' || c == '}') && depth > 0) --depth;
    ++pos_;
    return {Token::Kind::op, std::string(1, c), {}, line};
  }

  Token number(int line) {
    const std::size_t start = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    bool floating = false;
    if (pos_ + 1 < text_.size() && text_[pos_] == '.' &&
        std::isdigit(static_cast<unsigned char>(text_[pos_ + 1]))) {
      floating = true;
      ++pos_;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      std::size_t exponent = pos_ + 1;
      if (exponent < text_.size() && (text_[exponent] == '+' || text_[exponent] == '-')) ++exponent;
      if (exponent < text_.size() && std::isdigit(static_cast<unsigned char>(text_[exponent]))) {
        floating = true;
        pos_ = exponent;
        while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
      }
    }
    const std::string digits = text_.substr(start, pos_ - start);
    Token token{floating ? Token::Kind::floating : Token::Kind::integer, digits, {}, line};
    if (floating) {
      // As Python reads a float literal: past the largest double, inf; below the smallest, 0.0.
      double value = 0.0;
      const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
      if (ec == std::errc::result_out_of_range) {
        value = digits.find("e-") == std::string::npos && digits.find("E-") == std::string::npos
                    ? std::numeric_limits<double>::infinity()
                    : 0.0;
      }
      token.number = value;
    } else {
      std::int64_t value = 0;
      const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
      if (ec != std::errc()) template_error(line, "the integer " + digits + " is out of range");
      token.number = value;
    }
    return token;
  }

  std::string text_;
  std::size_t pos_ = 0;
  int line_ = 1;
};

// ---- expressions: one tag's tokens ----

class ExpressionParser {
 public:
  ExpressionParser(const std::vector<Token>& tokens, std::size_t start, int line)
      : tokens_(tokens), pos_(start), line_(line) {}

  ExprPtr expression() {
    const NestingGuard guard(depth_, here(), "expressions");
    ExprPtr value = or_expr();
    while (skip_name("if")) {
      ExprPtr condition = or_expr();
      ExprPtr otherwise = skip_name("else") ? expression() : nullptr;
      ExprPtr node = make(Expr::Kind::conditional);
      node->operands.push_back(std::move(condition));
      node->operands.push_back(std::move(value));
      node->operands.push_back(std::move(otherwise));
      value = std::move(node);
    }
    return value;
  }

  ExprPtr or_expr() {
    ExprPtr left = and_expr();
    while (skip_name("or")) left = binary("or", std::move(left), and_expr());
    return left;
  }

  bool done() const { return pos_ >= tokens_.size(); }
  bool skip_name(std::string_view name) {
    if (!is_name(name)) return false;
    ++pos_;
    return true;
  }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    ++pos_;
    return true;
  }
  void expect_op(std::string_view op) {
    if (!skip_op(op)) template_error(here(), "expected '" + std::string(op) + "'" + found());
  }
  std::string expect_name() {
    if (done() || tokens_[pos_].kind != Token::Kind::name)
      template_error(here(), "expected a name" + found());
    return tokens_[pos_++].text;
  }
  void expect_end() {
    if (!done()) template_error(here(), "unexpected '" + tokens_[pos_].text + "'");
  }
  int here() const { return done() ? line_ : tokens_[pos_].line; }

 private:
  bool is_name(std::string_view name) const {
    return !done() && tokens_[pos_].kind == Token::Kind::name && tokens_[pos_].text == name;
  }
  bool is_op(std::string_view op) const {
    return !done() && tokens_[pos_].kind == Token::Kind::op && tokens_[pos_].text == op;
  }
  std::string found() const {
    return done() ? ", found the end of the tag" : ", found '" + tokens_[pos_].text + "'";
  }

  ExprPtr make(Expr::Kind kind) const {
    auto node = std::make_unique<Expr>();
    node->kind = kind;
    node->line = here();
    return node;
  }
  ExprPtr binary(std::string op, ExprPtr left, ExprPtr right) const {
    ExprPtr node = make(Expr::Kind::binary);
    node->name = std::move(op);
    node->operands.push_back(std::move(left));
    node->operands.push_back(std::move(right));
    return node;
  }

  ExprPtr and_expr() {
    ExprPtr left = not_expr();
    while (skip_name("and")) left = binary("and", std::move(left), not_expr());
    return left;
  }

  ExprPtr not_expr() {
    const NestingGuard guard(depth_, here(), "expressions");
    if (skip_name("not")) {
      ExprPtr node = make(Expr::Kind::unary);
      node->name = "not";
      node->operands.push_back(not_expr());
      return node;
    }
    return comparison();
  }

  ExprPtr comparison() {
    ExprPtr left = sum();
    std::optional<std::string> op = comparison_op();
    if (!op) return left;
    ExprPtr node = binary(*op, std::move(left), sum());
    if (comparison_op())
      template_error(here(), "chained comparisons (a < b < c) are not supported");
    return node;
  }

  // Consumes a comparison operator if one is next.
  std::optional<std::string> comparison_op() {
    for (std::string_view op : {"==", "!=", "<=", ">=", "<", ">"}) {
      if (skip_op(op)) return std::string(op);
    }
    if (skip_name("in")) return "in";
    if (is_name("not") && pos_ + 1 < tokens_.size() &&
        tokens_[pos_ + 1].kind == Token::Kind::name && tokens_[pos_ + 1].text == "in") {
      pos_ += 2;
      return "not in";
    }
    return std::nullopt;
  }

  ExprPtr sum() {
    ExprPtr left = concatenation();
    while (is_op("+") || is_op("-")) {
      const std::string op = tokens_[pos_++].text;
      left = binary(op, std::move(left), concatenation());
    }
    return left;
  }

  ExprPtr concatenation() {
    ExprPtr left = product();
    while (skip_op("~")) left = binary("~", std::move(left), product());
    return left;
  }

  ExprPtr product() {
    ExprPtr left = power();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      const std::string op = tokens_[pos_++].text;
      left = binary(op, std::move(left), power());
    }
    return left;
  }

  ExprPtr power() {
    ExprPtr left = unary(true);
    while (skip_op("**")) left = binary("**", std::move(left), unary(true));
    return left;
  }

  // jinja2's parse_unary: a sign applies to the operand before its postfix and filters, which
  // then apply to the negated value (`-x | abs` is abs(-x)).
  ExprPtr unary(bool with_filters) {
    const NestingGuard guard(depth_, here(), "expressions");
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      const std::string sign = tokens_[pos_++].text;
      ExprPtr operand = unary(false);
      if (sign == "+") {
        node = std::move(operand);
      } else {
        node = make(Expr::Kind::unary);
        node->name = "-";
        node->operands.push_back(std::move(operand));
      }
    } else {
      node = primary();
    }
    node = postfix(std::move(node));
    return with_filters ? filters_and_tests(std::move(node)) : std::move(node);
  }

  ExprPtr primary() {
    if (done()) template_error(here(), "expected an expression, found the end of the tag");
    const Token& token = tokens_[pos_];
    switch (token.kind) {
      case Token::Kind::name: {
        ++pos_;
        static const std::map<std::string, Value, std::less<>> kConstants = {
            {"true", true},   {"True", true},    {"false", false},
            {"False", false}, {"none", nullptr}, {"None", nullptr}};
        if (const auto found = kConstants.find(token.text); found != kConstants.end()) {
          ExprPtr node = make(Expr::Kind::literal);
          node->value = found->second;
          return node;
        }
        ExprPtr node = make(Expr::Kind::name);
        node->name = token.text;
        return node;
      }
      case Token::Kind::string: {
        std::string text;
        while (!done() && tokens_[pos_].kind == Token::Kind::string) text += tokens_[pos_++].text;
        ExprPtr node = make(Expr::Kind::literal);
        node->value = text;
        return node;
      }
      case Token::Kind::integer:
      case Token::Kind::floating: {
        ExprPtr node = make(Expr::Kind::literal);
        node->value = token.number;
        ++pos_;
        return node;
      }
      case Token::Kind::op:
        break;
    }
    if (skip_op("(")) {
      ExprPtr first = expression();
      if (!is_op(",")) {
        expect_op(")");
        return first;
      }
      ExprPtr tuple = make(Expr::Kind::list);  // a tuple reads as a list
      tuple->operands.push_back(std::move(first));
      while (skip_op(",") && !is_op(")")) tuple->operands.push_back(expression());
      expect_op(")");
      return tuple;
    }
    if (skip_op("[")) {
      ExprPtr list = make(Expr::Kind::list);
      while (!is_op("]")) {
        list->operands.push_back(expression());
        if (!skip_op(",")) break;
      }
      expect_op("]");
      return list;
    }
    if (skip_op("{")) {
      ExprPtr dict = make(Expr::Kind::dict);
      while (!is_op("}")) {
        dict->operands.push_back(expression());
        expect_op(":");
        dict->operands.push_back(expression());
        if (!skip_op(",")) break;
      }
      expect_op("}");
      return dict;
    }
    template_error(here(), "unexpected '" + token.text + "'");
  }

  ExprPtr postfix(ExprPtr node) {
    while (true) {
      if (skip_op(".")) {
        std::string name = expect_name();
        if (is_op("(")) {
          ExprPtr call = make(Expr::Kind::method);
          call->name = std::move(name);
          call->operands.push_back(std::move(node));
          arguments(*call);
          node = std::move(call);
        } else {
          ExprPtr attribute = make(Expr::Kind::attribute);
          attribute->name = std::move(name);
          attribute->operands.push_back(std::move(node));
          node = std::move(attribute);
        }
      } else if (skip_op("[")) {
        node = subscript(std::move(node));
      } else if (is_op("(")) {
        if (node->kind != Expr::Kind::name)
          template_error(here(), "only global functions can be called");
        ExprPtr call = make(Expr::Kind::call);
        call->name = node->name;
        call->line = node->line;
        arguments(*call);
        node = std::move(call);
      } else {
        return node;
      }
    }
  }

  ExprPtr subscript(ExprPtr target) {
    std::array<ExprPtr, 3> parts;
    int colons = 0;
    if (!is_op(":")) parts[0] = expression();
    while (colons < 2 && skip_op(":")) {
      ++colons;
      if (!is_op(":") && !is_op("]")) parts[static_cast<std::size_t>(colons)] = expression();
    }
    expect_op("]");
    ExprPtr node = make(colons == 0 ? Expr::Kind::subscript : Expr::Kind::slice);
    node->operands.push_back(std::move(target));
    if (colons == 0) {
      node->operands.push_back(std::move(parts[0]));
    } else {
      for (ExprPtr& part : parts) node->operands.push_back(std::move(part));
    }
    return node;
  }

  // ( positional, ..., keyword=value, ... ) into node's operands and keywords.
  void arguments(Expr& node) {
    expect_op("(");
    while (!is_op(")")) {
      if (!done() && tokens_[pos_].kind == Token::Kind::name && pos_ + 1 < tokens_.size() &&
          tokens_[pos_ + 1].kind == Token::Kind::op && tokens_[pos_ + 1].text == "=") {
        std::string key = tokens_[pos_].text;
        pos_ += 2;
        node.keywords.emplace_back(std::move(key), expression());
      } else {
        if (!node.keywords.empty())
          template_error(here(), "a positional argument after a keyword one");
        node.operands.push_back(expression());
      }
      if (!skip_op(",")) break;
    }
    expect_op(")");
  }

  ExprPtr filters_and_tests(ExprPtr node) {
    while (true) {
      if (skip_op("|")) {
        std::string name = expect_name();
        ExprPtr filter = make(Expr::Kind::filter);
        filter->name = std::move(name);
        filter->operands.push_back(std::move(node));
        if (is_op("(")) arguments(*filter);
        node = std::move(filter);
      } else if (skip_name("is")) {
        ExprPtr test = make(Expr::Kind::test);
        test->negated = skip_name("not");
        test->name = expect_name();
        test->operands.push_back(std::move(node));
        if (is_op("(")) {
          arguments(*test);
        } else if (takes_bare_test_argument()) {
          test->operands.push_back(postfix(primary()));
        }
        node = std::move(test);
      } else {
        return node;
      }
    }
  }

  // jinja2 reads `x is divisibleby 3` with its one argument unbracketed when a value follows.
  bool takes_bare_test_argument() const {
    if (done()) return false;
    const Token& next = tokens_[pos_];
    if (next.kind == Token::Kind::name) {
      return next.text != "else" && next.text != "or" && next.text != "and";
    }
    return next.kind != Token::Kind::op || next.text == "(" || next.text == "[" || next.text == "{";
  }

  const std::vector<Token>& tokens_;
  std::size_t pos_;
  int line_;
  int depth_ = 0;
};

// ---- statements: the tags in order ----

class TemplateParser {
 public:
  explicit TemplateParser(std::vector<Tag> tags) : tags_(std::move(tags)) {}

  Body parse() {
    Body body = parse_body({});
    return body;
  }

 private:
  // The statement's keyword ("" for text and output tags).
  std::string keyword(const Tag& tag) const {
    if (tag.kind != Tag::Kind::statement) return "";
    if (tag.tokens.empty() || tag.tokens[0].kind != Token::Kind::name) {
      template_error(tag.line, "a {% %} tag must start with a statement name");
    }
    return tag.tokens[0].text;
  }

  static bool is_block_end(std::string_view word) {
    return word == "elif" || word == "else" || word == "endif" || word == "endfor" ||
           word == "endgeneration" || word == "endmacro" || word == "endset";
  }

  // Nodes up to one of `ends` (consumed; its tag is at ended_) or the template's end.
  Body parse_body(std::initializer_list<std::string_view> ends) {
    Body body;
    while (next_ < tags_.size()) {
      const Tag& tag = tags_[next_++];
      const std::string word = keyword(tag);
      if (std::find(ends.begin(), ends.end(), word) != ends.end()) {
        ended_ = &tag;
        return body;
      }
      if (is_block_end(word)) {
        if (ends.size() == 0)
          template_error(tag.line, "{% " + word + " %} without its opening tag");
        template_error(tag.line, "{% " + word + " %} where {% " +
                                     std::string(*std::prev(ends.end())) +
                                     " %} was expected (the block opened on line " +
                                     std::to_string(opened_line_) + ")");
      }
      if (tag.kind == Tag::Kind::text) {
        Node node{Node::Kind::text, tag.line};
        node.text = tag.text;
        body.push_back(std::move(node));
      } else if (tag.kind == Tag::Kind::output) {
        ExpressionParser parser(tag.tokens, 0, tag.line);
        Node node{Node::Kind::output, tag.line};
        node.expr = parser.expression();
        parser.expect_end();
        body.push_back(std::move(node));
      } else if (word == "generation") {
        ExpressionParser(tag.tokens, 1, tag.line).expect_end();
        for (Node& node : parse_block({"endgeneration"}, tag)) body.push_back(std::move(node));
      } else {
        body.push_back(statement(tag, word));
      }
    }
    if (ends.size() != 0) {
      template_error(opened_line_, "{% " + std::string(*std::prev(ends.end())) + " %} is missing");
    }
    return body;
  }

  // A block's body, which must end with one of `ends`.
  Body parse_block(std::initializer_list<std::string_view> ends, const Tag& opening) {
    const NestingGuard guard(depth_, opening.line, "blocks");
    const int outer = opened_line_;
    opened_line_ = opening.line;
    Body body = parse_body(ends);
    opened_line_ = outer;
    return body;
  }

  Node statement(const Tag& tag, const std::string& word) {
    ExpressionParser parser(tag.tokens, 1, tag.line);
    Node node{Node::Kind::text, tag.line};
    if (word == "if") {
      node.kind = Node::Kind::if_;
      ExprPtr condition = parser.expression();
      parser.expect_end();
      while (true) {
        Body body = parse_block({"elif", "else", "endif"}, tag);
        node.branches.emplace_back(std::move(condition), std::move(body));
        const Tag& end = *ended_;
        const std::string end_word = keyword(end);
        ExpressionParser end_parser(end.tokens, 1, end.line);
        if (end_word == "elif") {
          condition = end_parser.expression();
          end_parser.expect_end();
          continue;
        }
        end_parser.expect_end();
        if (end_word == "else") {
          Body otherwise = parse_block({"endif"}, tag);
          ExpressionParser(ended_->tokens, 1, ended_->line).expect_end();
          node.branches.emplace_back(nullptr, std::move(otherwise));
        }
        return node;
      }
    }
    if (word == "for") {
      node.kind = Node::Kind::for_;
      do {
        node.targets.push_back(parser.expect_name());
      } while (parser.skip_op(","));
      if (!parser.skip_name("in")) template_error(parser.here(), "expected 'in' in the for loop");
      node.expr = parser.or_expr();
      if (parser.skip_name("if")) node.condition = parser.or_expr();
      if (parser.skip_name("recursive"))
        template_error(tag.line, "recursive loops are not supported");
      parser.expect_end();
      ++loops_;
      node.body = parse_block({"else", "endfor"}, tag);
      --loops_;
      if (keyword(*ended_) == "else") {
        ExpressionParser(ended_->tokens, 1, ended_->line).expect_end();
        node.else_body = parse_block({"endfor"}, tag);
      }
      ExpressionParser(ended_->tokens, 1, ended_->line).expect_end();
      return node;
    }
    if (word == "set") {
      node.kind = Node::Kind::set;
      node.target = parser.expect_name();
      if (parser.skip_op(".")) node.attribute = parser.expect_name();
      if (node.attribute.empty() && parser.done()) {       // {% set name %} text {% endset %}
        const int outer_loops = std::exchange(loops_, 0);  // no break out of the text
        node.body = parse_block({"endset"}, tag);
        loops_ = outer_loops;
        ExpressionParser(ended_->tokens, 1, ended_->line).expect_end();
        return node;
      }
      if (!parser.skip_op("=")) {
        template_error(parser.here(),
                       "only {% set name = value %} and {% set name %} ... {% endset %} are "
                       "supported (not a tuple or a filtered block)");
      }
      node.expr = parser.expression();
      parser.expect_end();
      return node;
    }
    if (word == "macro") {
      // {% macro name(a, b = default, ...) %} body {% endmacro %}. Calls find their macro when
      // they run, as in jinja2: a macro may call itself, or one defined after it.
      node.kind = Node::Kind::macro;
      node.target = parser.expect_name();
      if (!parser.skip_op("(")) template_error(parser.here(), "expected ( after the macro's name");
      while (!parser.skip_op(")")) {
        if (!node.parameters.empty() && !parser.skip_op(",")) {
          template_error(parser.here(), "expected , or ) in the macro's parameters");
        }
        std::string parameter = parser.expect_name();
        node.parameters.emplace_back(std::move(parameter),
                                     parser.skip_op("=") ? parser.expression() : nullptr);
      }
      parser.expect_end();
      const int outer_loops = std::exchange(loops_, 0);  // a loop around it is not the macro's
      node.body = parse_block({"endmacro"}, tag);
      loops_ = outer_loops;
      ExpressionParser(ended_->tokens, 1, ended_->line).expect_end();
      return node;
    }
    if (word == "break" || word == "continue") {
      if (loops_ == 0) template_error(tag.line, "{% " + word + " %} outside a loop");
      parser.expect_end();
      node.kind = word == "break" ? Node::Kind::break_ : Node::Kind::continue_;
      return node;
    }
    template_error(tag.line, "the statement {% " + word + " %} is not supported");
  }

  std::vector<Tag> tags_;
  std::size_t next_ = 0;
  const Tag* ended_ = nullptr;
  int opened_line_ = 0;
  int loops_ = 0;
  int depth_ = 0;
};

}  // namespace

void template_error(int line, const std::string& what) {
  throw Error("chat template: line " + std::to_string(line) + ": " + what);
}

Body parse_template(std::string_view source) {
  return TemplateParser(Scanner(source).scan()).parse();
}

}  // namespace attnscope::tokenizer::jinja
