// jinja::Template::render (jinja.h): a tree-walking interpreter over jinja_syntax.h's tree.
// Names resolve innermost scope first: the render's globals, then one scope per loop iteration
// (jinja2 gives each iteration a fresh one, so a {% set %} in a loop is gone at the next
// iteration and after the loop; a namespace's attributes are how a template carries a value
// out). Cost: one visit of each node per time it runs; values are copied only where a result is
// built (reading a name, an attribute or an item reads it in place).
#include "models/tokenizer/jinja.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <map>
#include <optional>
#include <set>

#include "models/tokenizer/jinja_values.h"
#include "runtime/error.h"

namespace attnscope::tokenizer::jinja {

namespace {

// An int result that fit in 64 bits (Python's ints are unbounded; a template that leaves int64
// is refused rather than wrapped).
std::int64_t fitted(bool overflowed, std::int64_t value, int line) {
  if (overflowed) template_error(line, "an int result does not fit in 64 bits");
  return value;
}

// -x, when it fits (not for INT64_MIN).
std::int64_t negated(std::int64_t x, int line) {
  if (x == INT64_MIN) template_error(line, "an int result does not fit in 64 bits");
  return -x;
}

// A double as an int64 when it is a finite value in range.
std::int64_t int_of(double x, int line) {
  if (!(x > -9.2e18 && x < 9.2e18))
    template_error(line, "the number " + python_float(x) + " is no int64");
  return static_cast<std::int64_t>(x);
}

// What the renderer implements: a template may name anything else, and is refused when a render
// reaches it (as jinja2 raises at render time for a name it does not know).
bool is_supported_filter(std::string_view name) {
  static const std::set<std::string, std::less<>> kFilters = {
      "trim",    "length",     "count",      "tojson",   "upper", "lower",  "capitalize", "title",
      "default", "d",          "first",      "last",     "join",  "string", "int",        "float",
      "list",    "items",      "reverse",    "replace",  "safe",  "abs",    "map",        "select",
      "reject",  "selectattr", "rejectattr", "dictsort", "sort",  "min",    "max",        "indent"};
  return kFilters.count(name) != 0;
}

bool is_supported_test(std::string_view name) {
  static const std::set<std::string, std::less<>> kTests = {
      "defined", "undefined", "none",     "string", "number", "integer", "float", "boolean",
      "mapping", "sequence",  "iterable", "true",   "false",  "odd",     "even",  "divisibleby",
      "equalto", "eq",        "==",       "ne",     "!=",     "in"};
  return kTests.count(name) != 0;
}

bool is_supported_function(std::string_view name) {
  return name == "raise_exception" || name == "strftime_now" || name == "namespace" ||
         name == "dict" || name == "range";
}

bool is_supported_method(std::string_view name) {
  static const std::set<std::string, std::less<>> kMethods = {
      "strip", "lstrip", "rstrip", "split",      "startswith", "endswith",
      "upper", "lower",  "title",  "capitalize", "replace",    "join",
      "items", "keys",   "values", "get",        "format"};
  return kMethods.count(name) != 0;
}

class Renderer {
 public:
  explicit Renderer(const Value& globals) {
    if (!globals.is_object()) throw Error("chat template: the variables must be a JSON object");
    scopes_.push_back(globals);
  }

  enum class Flow { normal, break_, continue_ };

  Flow run(const Body& body) {
    for (const Node& node : body) {
      const Flow flow = run(node);
      if (flow != Flow::normal) return flow;
    }
    return Flow::normal;
  }

  std::string output;

 private:
  // Rendering recurses once per nested statement and expression. The parser bounds a template's
  // own nesting (256 levels of each), but macros calling macros stack their bodies' nesting, so
  // the whole depth is bounded too, before the C++ stack runs out.
  class Nesting {
   public:
    Nesting(Renderer& renderer, int line) : depth_(renderer.depth_) {
      if (++depth_ > kMaxRenderDepth) {
        template_error(line, "the template nests deeper than " + std::to_string(kMaxRenderDepth) +
                                 " levels while rendering");
      }
    }
    ~Nesting() { --depth_; }
    Nesting(const Nesting&) = delete;
    Nesting& operator=(const Nesting&) = delete;

   private:
    int& depth_;
  };

  Flow run(const Node& node) {
    const Nesting nesting(*this, node.line);
    count_step(node.line);
    switch (node.kind) {
      case Node::Kind::text:
        emit(node.text, node.line);
        return Flow::normal;
      case Node::Kind::output: {
        Value storage;
        emit(python_str(eval_ref(*node.expr, storage)), node.line);
        return Flow::normal;
      }
      case Node::Kind::if_:
        for (const auto& [condition, body] : node.branches) {
          if (!condition || truthy(eval(*condition))) return run(body);
        }
        return Flow::normal;
      case Node::Kind::for_:
        run_for(node);
        return Flow::normal;
      case Node::Kind::set:
        assign(node);
        return Flow::normal;
      case Node::Kind::macro:
        macros_[node.target] = &node;
        return Flow::normal;
      case Node::Kind::break_:
        return Flow::break_;
      case Node::Kind::continue_:
        return Flow::continue_;
    }
    return Flow::normal;
  }

  void count_step(int line) {
    if (++steps_ > kMaxRenderSteps) {
      template_error(line,
                     "the template runs more than " + std::to_string(kMaxRenderSteps) + " steps");
    }
  }

  void emit(const std::string& text, int line) {
    if (output.size() + text.size() > kMaxRenderBytes) {
      template_error(line,
                     "the rendered text passes " + std::to_string(kMaxRenderBytes >> 20) + " MiB");
    }
    output += text;
  }

  // The items a for loop walks: a list's elements, a dict's keys, a string's characters.
  Value iteration_items(const Value& v, int line) {
    if (v.is_array()) return v;
    Value items = Value::array();
    if (v.is_discarded()) return items;  // jinja2 iterates an undefined value as empty
    if (v.is_object() && !is_namespace(v)) {
      for (const auto& [key, item] : v.items()) items.push_back(key);
      return items;
    }
    if (v.is_string()) {
      const std::string& s = v.get_ref<const std::string&>();
      const std::vector<std::size_t> starts = code_point_starts(s);
      for (std::size_t i = 0; i + 1 < starts.size(); ++i) {
        items.push_back(s.substr(starts[i], starts[i + 1] - starts[i]));
      }
      return items;
    }
    template_error(line, "cannot iterate over a " + type_name(v));
  }

  void bind_targets(Value& scope, const Node& node, const Value& item) {
    if (node.targets.size() == 1) {
      scope[node.targets[0]] = item;
      return;
    }
    if (!item.is_array() || item.size() != node.targets.size()) {
      template_error(node.line, "cannot unpack a " + type_name(item) + " into " +
                                    std::to_string(node.targets.size()) + " loop variables");
    }
    for (std::size_t i = 0; i < node.targets.size(); ++i) scope[node.targets[i]] = item[i];
  }

  void run_for(const Node& node) {
    Value all = iteration_items(eval(*node.expr), node.line);
    Value items = Value::array();
    if (node.condition) {  // the filter runs first: loop.index and loop.length count what passed
      for (Value& item : all) {
        Value scope = Value::object();
        bind_targets(scope, node, item);
        scopes_.push_back(std::move(scope));
        const bool keep = truthy(eval(*node.condition));
        scopes_.pop_back();
        if (keep) items.push_back(std::move(item));
      }
    } else {
      items = std::move(all);
    }
    if (items.empty()) {
      run(node.else_body);
      return;
    }
    // One scope object serves every iteration: its loop variables and targets are rewritten in
    // place, and what the body set is erased before the next one (each iteration starts fresh).
    const auto length = static_cast<std::int64_t>(items.size());
    scopes_.push_back(Value::object());
    scopes_.back()["loop"] = {{"index", 0},
                              {"index0", 0},
                              {"revindex", 0},
                              {"revindex0", 0},
                              {"first", false},
                              {"last", false},
                              {"length", length},
                              {"previtem", kUndefined},
                              {"nextitem", kUndefined}};
    for (std::int64_t i = 0; i < length; ++i) {
      count_step(node.line);
      const auto at = static_cast<std::size_t>(i);
      Value& scope = scopes_.back();
      if (scope.size() > 1 + node.targets.size()) {
        Value fresh = Value::object();
        fresh["loop"] = std::move(scope["loop"]);
        scope = std::move(fresh);
      }
      Value& variables = scope["loop"];
      variables["index"] = i + 1;
      variables["index0"] = i;
      variables["revindex"] = length - i;
      variables["revindex0"] = length - i - 1;
      variables["first"] = i == 0;
      variables["last"] = i == length - 1;
      variables["previtem"] = i > 0 ? items[at - 1] : kUndefined;
      variables["nextitem"] = i + 1 < length ? items[at + 1] : kUndefined;
      bind_targets(scope, node, items[at]);
      if (run(node.body) == Flow::break_) break;
    }
    scopes_.pop_back();
  }

  void assign(const Node& node) {
    Value value = node.expr ? eval(*node.expr) : Value(render_to_string(node.body));
    if (node.attribute.empty()) {
      scopes_.back()[node.target] = std::move(value);
      return;
    }
    Value* target = find(node.target);
    if (!target || !is_namespace(*target)) {
      template_error(node.line,
                     "cannot assign an attribute of " + node.target + ", which is not a namespace");
    }
    (*target)[std::string(kNamespaceKey)][node.attribute] = std::move(value);
  }

  // What `body` prints, taken out of the output (a macro's text, a block set's value). A break
  // or continue in it cannot reach a loop outside: the parser allows none there.
  std::string render_to_string(const Body& body) {
    const std::size_t start = output.size();
    run(body);
    std::string text = output.substr(start);
    output.resize(start);
    return text;
  }

  // The innermost variable called `name`. While a macro runs it sees its own scopes (from
  // macro_floor_ up) and the template's globals (scopes_[0]), not its caller's loop variables.
  Value* find(const std::string& name) {
    for (std::size_t i = scopes_.size(); i-- > macro_floor_;) {
      const auto found = scopes_[i].find(name);
      if (found != scopes_[i].end()) return &*found;
    }
    if (macro_floor_ == 0) return nullptr;
    const auto found = scopes_[0].find(name);
    return found != scopes_[0].end() ? &*found : nullptr;
  }

  // A macro's text: its body rendered with its parameters bound, as jinja2 calls it (positional
  // arguments, then keywords, then the defaults, evaluated as the parameters before them are
  // bound; one left out and without a default is undefined).
  Value call_macro(const Node& macro, const Expr& e) {
    const Arguments args = arguments(e, 0);
    if (args.positional.size() > macro.parameters.size()) {
      template_error(e.line, macro.target + "() takes " + std::to_string(macro.parameters.size()) +
                                 " arguments, not " + std::to_string(args.positional.size()));
    }
    for (const auto& keyword : args.keywords) {
      const std::string& name = keyword.first;
      const bool known =
          std::any_of(macro.parameters.begin(), macro.parameters.end(),
                      [&](const auto& parameter) { return parameter.first == name; });
      if (!known) template_error(e.line, macro.target + "() has no parameter " + name);
    }
    const std::size_t caller_floor = macro_floor_;
    scopes_.push_back(Value::object());
    macro_floor_ = scopes_.size() - 1;
    for (std::size_t i = 0; i < macro.parameters.size(); ++i) {
      const auto& [name, fallback] = macro.parameters[i];
      const auto keyword = args.keywords.find(name);
      if (i < args.positional.size()) {
        scopes_.back()[name] = args.positional[i];
      } else if (keyword != args.keywords.end()) {
        scopes_.back()[name] = keyword->second;
      } else {
        scopes_.back()[name] = fallback ? eval(*fallback) : kUndefined;
      }
    }
    std::string text = render_to_string(macro.body);
    scopes_.pop_back();
    macro_floor_ = caller_floor;
    return text;
  }

  Value eval(const Expr& e) {
    Value storage;
    const Value& result = eval_ref(e, storage);
    return &result == &storage ? std::move(storage) : result;
  }

  // The value of `e`: a reference into the scopes where it names or reads one in place,
  // otherwise `storage`, computed.
  const Value& eval_ref(const Expr& e, Value& storage) {
    const Nesting nesting(*this, e.line);
    switch (e.kind) {
      case Expr::Kind::literal:
        return e.value;
      case Expr::Kind::name: {
        if (const Value* found = find(e.name)) return *found;
        // The global functions are defined names, as in jinja2 and transformers: templates ask
        // `strftime_now is defined` (Llama 3.2's date) before they call it.
        return is_supported_function(e.name) ? kGlobalFunction : kUndefined;
      }
      case Expr::Kind::attribute: {
        Value object_storage;
        const Value& object = eval_ref(*e.operands[0], object_storage);
        if (object.is_discarded())
          template_error(e.line, "cannot read ." + e.name + " of an undefined value");
        const Value* found = member(object, e.name);
        if (!found) return kUndefined;
        if (&object != &object_storage) return *found;
        storage = *found;
        return storage;
      }
      case Expr::Kind::subscript: {
        Value object_storage;
        const Value& object = eval_ref(*e.operands[0], object_storage);
        const Value key = eval(*e.operands[1]);
        const Value* found = item(object, key, e.line);
        if (!found) return kUndefined;
        if (&object != &object_storage && !object.is_string()) return *found;
        storage = *found;
        return storage;
      }
      default:
        storage = compute(e);
        return storage;
    }
  }

  // obj.name (jinja2 tries the attribute, then the item): a dict's or namespace's entry.
  static const Value* member(const Value& object, const std::string& name) {
    const Value& fields = is_namespace(object) ? object[std::string(kNamespaceKey)] : object;
    if (!fields.is_object()) return nullptr;
    const auto found = fields.find(name);
    return found == fields.end() ? nullptr : &*found;
  }

  // obj[key]: a list's element (negative from the end), a dict's entry; null when missing.
  // A string's character is returned in character_ (callers copy it).
  const Value* item(const Value& object, const Value& key, int line) {
    if (object.is_discarded()) template_error(line, "cannot index an undefined value");
    if (object.is_array() || object.is_string()) {
      if (!is_int(key))
        template_error(line,
                       "a " + type_name(object) + " index must be an int, not " + type_name(key));
      std::int64_t index = key.get<std::int64_t>();
      if (object.is_array()) {
        const auto size = static_cast<std::int64_t>(object.size());
        if (index < 0) index += size;
        return index < 0 || index >= size ? nullptr : &object[static_cast<std::size_t>(index)];
      }
      const std::string& s = object.get_ref<const std::string&>();
      const std::vector<std::size_t> starts = code_point_starts(s);
      const auto size = static_cast<std::int64_t>(starts.size()) - 1;
      if (index < 0) index += size;
      if (index < 0 || index >= size) return nullptr;
      const auto at = static_cast<std::size_t>(index);
      character_ = s.substr(starts[at], starts[at + 1] - starts[at]);
      return &character_;
    }
    if (object.is_object()) {
      if (key.is_string()) return member(object, key.get<std::string>());
      return nullptr;
    }
    template_error(line, "cannot index a " + type_name(object));
  }

  Value compute(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::list: {
        Value list = Value::array();
        for (const ExprPtr& operand : e.operands) list.push_back(eval(*operand));
        return list;
      }
      case Expr::Kind::dict: {
        Value dict = Value::object();
        for (std::size_t i = 0; i < e.operands.size(); i += 2) {
          const Value key = eval(*e.operands[i]);
          if (!key.is_string())
            template_error(e.line, "dict keys must be strings here, not " + type_name(key));
          dict[key.get<std::string>()] = eval(*e.operands[i + 1]);
        }
        return dict;
      }
      case Expr::Kind::slice:
        return slice(e);
      case Expr::Kind::unary: {
        const Value operand = eval(*e.operands[0]);
        if (e.name == "not") return !truthy(operand);
        if (is_int(operand)) {
          const std::int64_t x = operand.get<std::int64_t>();
          return negated(x, e.line);
        }
        if (is_number(operand)) return -as_double(operand);
        template_error(e.line, "cannot negate a " + type_name(operand));
      }
      case Expr::Kind::binary:
        return binary(e);
      case Expr::Kind::conditional:
        if (truthy(eval(*e.operands[0]))) return eval(*e.operands[1]);
        return e.operands[2] ? eval(*e.operands[2]) : kUndefined;
      case Expr::Kind::call:
        return call(e);
      case Expr::Kind::method:
        return method(e);
      case Expr::Kind::filter:
        return filter(e);
      case Expr::Kind::test:
        return test(e);
      default:
        break;
    }
    template_error(e.line, "cannot evaluate this expression");
  }

  Value slice(const Expr& e) {
    const Value object = eval(*e.operands[0]);
    std::array<std::optional<std::int64_t>, 3> bounds;
    for (std::size_t i = 0; i < 3; ++i) {
      if (!e.operands[i + 1]) continue;
      const Value bound = eval(*e.operands[i + 1]);
      if (bound.is_null()) continue;
      if (!is_int(bound))
        template_error(e.line, "slice bounds must be ints, not " + type_name(bound));
      bounds[i] = bound.get<std::int64_t>();
    }
    const std::int64_t step = bounds[2].value_or(1);
    if (step == 0) template_error(e.line, "a slice step cannot be zero");
    std::vector<Value> pieces;  // a string's characters or a list's elements
    if (object.is_string()) {
      pieces = iteration_items(object, e.line).get<std::vector<Value>>();
    } else if (object.is_array()) {
      pieces = object.get<std::vector<Value>>();
    } else {
      template_error(e.line, "cannot slice a " + type_name(object));
    }
    // Python's slice.indices: clamp the bounds into the sequence.
    const auto size = static_cast<std::int64_t>(pieces.size());
    const auto clamp = [&](std::optional<std::int64_t> bound, std::int64_t fallback) {
      if (!bound) return fallback;
      std::int64_t b = *bound < 0 ? *bound + size : *bound;
      if (step > 0) return std::clamp<std::int64_t>(b, 0, size);
      return std::clamp<std::int64_t>(b, -1, size - 1);
    };
    const std::int64_t start = clamp(bounds[0], step > 0 ? 0 : size - 1);
    const std::int64_t stop = clamp(bounds[1], step > 0 ? size : -1);
    Value out = object.is_string() ? Value("") : Value::array();
    for (std::int64_t i = start; step > 0 ? i < stop : i > stop;) {
      const Value& piece = pieces[static_cast<std::size_t>(i)];
      if (object.is_string()) {
        out.get_ref<std::string&>() += piece.get<std::string>();
      } else {
        out.push_back(piece);
      }
      if (__builtin_add_overflow(i, step, &i)) break;  // a step past the ends
    }
    return out;
  }

  static bool equal(const Value& a, const Value& b) {
    if (a.is_discarded() || b.is_discarded()) return a.is_discarded() && b.is_discarded();
    if (is_number(a) && is_number(b)) {
      if (is_int(a) || a.is_boolean()) {
        if (is_int(b) || b.is_boolean()) return as_int(a) == as_int(b);
      }
      return as_double(a) == as_double(b);
    }
    if (a.type() != b.type()) return false;
    if (a.is_array()) {
      if (a.size() != b.size()) return false;
      for (std::size_t i = 0; i < a.size(); ++i) {
        if (!equal(a[i], b[i])) return false;
      }
      return true;
    }
    return a == b;
  }

  // a < b: numbers, strings (code point order), lists element by element.
  static bool less(const Value& a, const Value& b, int line) {
    if (is_number(a) && is_number(b)) return as_double(a) < as_double(b);
    if (a.is_string() && b.is_string())
      return a.get_ref<const std::string&>() < b.get_ref<const std::string&>();
    if (a.is_array() && b.is_array()) {
      for (std::size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
        if (!equal(a[i], b[i])) return less(a[i], b[i], line);
      }
      return a.size() < b.size();
    }
    template_error(line, "cannot order a " + type_name(a) + " and a " + type_name(b));
  }

  static bool contains(const Value& container, const Value& needle, int line) {
    if (container.is_discarded()) return false;  // jinja2's Undefined holds nothing
    if (container.is_string()) {
      if (!needle.is_string())
        template_error(line, "'in <string>' needs a string, not a " + type_name(needle));
      return container.get_ref<const std::string&>().find(needle.get_ref<const std::string&>()) !=
             std::string::npos;
    }
    if (container.is_array()) {
      return std::any_of(container.begin(), container.end(),
                         [&](const Value& element) { return equal(element, needle); });
    }
    if (container.is_object() && !is_namespace(container)) {
      return needle.is_string() && container.contains(needle.get<std::string>());
    }
    template_error(line, "'in' needs a string, list or dict, not a " + type_name(container));
  }

  Value binary(const Expr& e) {
    const std::string& op = e.name;
    if (op == "and") {
      Value left = eval(*e.operands[0]);
      return truthy(left) ? eval(*e.operands[1]) : left;
    }
    if (op == "or") {
      Value left = eval(*e.operands[0]);
      return truthy(left) ? left : eval(*e.operands[1]);
    }
    Value left_storage, right_storage;
    const Value& a = eval_ref(*e.operands[0], left_storage);
    const Value& b = eval_ref(*e.operands[1], right_storage);
    if (op == "==") return equal(a, b);
    if (op == "!=") return !equal(a, b);
    if (op == "<") return less(a, b, e.line);
    if (op == ">") return less(b, a, e.line);
    if (op == "<=") return !less(b, a, e.line);
    if (op == ">=") return !less(a, b, e.line);
    if (op == "in") return contains(b, a, e.line);
    if (op == "not in") return !contains(b, a, e.line);
    if (op == "~") return capped(python_str(a) + python_str(b), e.line);
    return arithmetic(op, a, b, e.line);
  }

  static void check_size(const std::string& text, int line) {
    if (text.size() > kMaxRenderBytes)
      template_error(line, "a string passes the render's size limit");
  }

  static Value capped(std::string text, int line) {
    check_size(text, line);
    return text;
  }

  static Value arithmetic(const std::string& op, const Value& a, const Value& b, int line) {
    const auto refuse = [&]() -> Value {
      template_error(line, "unsupported operand types for " + op + ": " + type_name(a) + " and " +
                               type_name(b));
    };
    if (op == "+") {
      if (a.is_string() && b.is_string())
        return capped(a.get<std::string>() + b.get<std::string>(), line);
      if (a.is_array() && b.is_array()) {
        Value out = a;
        for (const Value& element : b) out.push_back(element);
        return out;
      }
    }
    if (op == "*" && (a.is_string() || a.is_array() || b.is_string() || b.is_array())) {
      const Value& sequence = a.is_string() || a.is_array() ? a : b;
      const Value& times = &sequence == &a ? b : a;
      if (!is_int(times) && !times.is_boolean()) return refuse();
      const std::int64_t n = std::max<std::int64_t>(as_int(times), 0);
      const std::size_t unit = sequence.is_string() ? sequence.get_ref<const std::string&>().size()
                                                    : sequence.size() * 8;
      if (unit != 0 && static_cast<std::size_t>(n) > kMaxRenderBytes / unit) {
        template_error(line, "a repeated value passes the render's size limit");
      }
      Value out = sequence.is_string() ? Value("") : Value::array();
      for (std::int64_t i = 0; i < n; ++i) {
        if (sequence.is_string()) {
          out.get_ref<std::string&>() += sequence.get_ref<const std::string&>();
        } else {
          for (const Value& element : sequence) out.push_back(element);
        }
      }
      return out;
    }
    if (!is_number(a) || !is_number(b)) return refuse();
    const bool ints = !a.is_number_float() && !b.is_number_float();
    if (op == "/") {
      if (as_double(b) == 0.0) template_error(line, "division by zero");
      return as_double(a) / as_double(b);
    }
    if (op == "**") {
      if (ints && as_int(b) >= 0) return int_of(std::pow(as_double(a), as_double(b)), line);
      return std::pow(as_double(a), as_double(b));
    }
    if ((op == "//" || op == "%") && as_double(b) == 0.0) template_error(line, "division by zero");
    if (ints) {
      const std::int64_t x = as_int(a), y = as_int(b);
      std::int64_t r = 0;
      bool overflowed = false;
      if (op == "+") overflowed = __builtin_add_overflow(x, y, &r);
      if (op == "-") overflowed = __builtin_sub_overflow(x, y, &r);
      if (op == "*") overflowed = __builtin_mul_overflow(x, y, &r);
      if (op == "+" || op == "-" || op == "*") return fitted(overflowed, r, line);
      if (y == -1) return op == "//" ? negated(x, line) : 0;
      if (op == "//") return floor_div(x, y);
      if (op == "%") {  // the remainder takes the divisor's sign
        const std::int64_t remainder = x % y;
        return remainder != 0 && (remainder < 0) != (y < 0) ? remainder + y : remainder;
      }
    }
    const double x = as_double(a), y = as_double(b);
    if (op == "+") return x + y;
    if (op == "-") return x - y;
    if (op == "*") return x * y;
    if (op == "//") return std::floor(x / y);
    if (op == "%") {
      const double r = std::fmod(x, y);
      return r != 0.0 && ((r < 0) != (y < 0)) ? r + y : r;
    }
    return refuse();
  }

  // ---- calls: positional arguments evaluated, keywords looked up by name ----

  struct Arguments {
    std::vector<Value> positional;
    std::map<std::string, Value> keywords;

    // The argument at `index` or named `name`, or `fallback`.
    Value get(std::size_t index, const std::string& name, const Value& fallback) const {
      if (index < positional.size()) return positional[index];
      return keyword(name, fallback);
    }
    // The argument named `name` (keyword only), or `fallback`.
    Value keyword(const std::string& name, const Value& fallback) const {
      const auto found = keywords.find(name);
      return found == keywords.end() ? fallback : found->second;
    }
  };

  Arguments arguments(const Expr& e, std::size_t first_operand) {
    Arguments args;
    for (std::size_t i = first_operand; i < e.operands.size(); ++i) {
      args.positional.push_back(eval(*e.operands[i]));
    }
    for (const auto& [name, value] : e.keywords) args.keywords[name] = eval(*value);
    return args;
  }

  static std::string string_argument(const Value& v, const std::string& what, int line) {
    if (!v.is_string()) template_error(line, what + " must be a string, not a " + type_name(v));
    return v.get<std::string>();
  }

  Value call(const Expr& e) {
    if (const auto macro = macros_.find(e.name); macro != macros_.end()) {
      return call_macro(*macro->second, e);
    }
    const Arguments args = arguments(e, 0);
    if (e.name == "raise_exception") {
      template_error(e.line, "raise_exception: " + python_str(args.get(0, "message", kUndefined)));
    }
    if (e.name == "strftime_now") {
      const std::string format =
          string_argument(args.get(0, "format", kUndefined), "strftime_now's format", e.line);
      const std::time_t now = std::time(nullptr);
      std::tm local{};
      localtime_r(&now, &local);
      std::array<char, 256> buffer{};
      const std::size_t length =
          std::strftime(buffer.data(), buffer.size(), format.c_str(), &local);
      return std::string(buffer.data(), length);
    }
    if (e.name == "namespace" || e.name == "dict") {
      Value fields = Value::object();
      if (!args.positional.empty()) {
        if (args.positional.size() > 1 || !args.positional[0].is_object()) {
          template_error(e.line, e.name + "() takes one dict and keyword arguments");
        }
        fields = args.positional[0];
      }
      for (const auto& [name, value] : args.keywords) fields[name] = value;
      if (e.name == "dict") return fields;
      Value ns = Value::object();
      ns[std::string(kNamespaceKey)] = std::move(fields);
      return ns;
    }
    if (e.name != "range") {
      template_error(e.line, "the function " + e.name +
                                 "() is not supported, nor a macro whose definition has run");
    }
    // range(stop) or range(start, stop[, step])
    std::array<std::int64_t, 3> r = {0, 0, 1};
    if (args.positional.empty() || args.positional.size() > 3)
      template_error(e.line, "range() takes 1 to 3 ints");
    for (const Value& v : args.positional) {
      if (!is_int(v)) template_error(e.line, "range() takes ints, not a " + type_name(v));
    }
    if (args.positional.size() == 1) {
      r[1] = args.positional[0].get<std::int64_t>();
    } else {
      for (std::size_t i = 0; i < args.positional.size(); ++i)
        r[i] = args.positional[i].get<std::int64_t>();
    }
    if (r[2] == 0) template_error(e.line, "range() step must not be zero");
    // Its length first (the distance in unsigned 64 bits, where stop - start always fits), so a
    // huge range is refused before it is built.
    const std::int64_t start = r[0], stop = r[1], step = r[2];
    const auto first = static_cast<std::uint64_t>(start), last = static_cast<std::uint64_t>(stop);
    const std::uint64_t stride =
        step > 0 ? static_cast<std::uint64_t>(step) : static_cast<std::uint64_t>(-(step + 1)) + 1;
    std::uint64_t count = 0;
    if (step > 0 && stop > start) count = (last - first - 1) / stride + 1;
    if (step < 0 && stop < start) count = (first - last - 1) / stride + 1;
    if (count > kMaxRenderBytes / 8)
      template_error(e.line, "a range passes the render's size limit");
    Value out = Value::array();
    for (std::uint64_t k = 0; k < count; ++k) {  // start + k step, modulo 2^64 on the way
      out.push_back(static_cast<std::int64_t>(first + k * static_cast<std::uint64_t>(step)));
    }
    return out;
  }

  Value method(const Expr& e) {
    Value object_storage;
    const Value& object = eval_ref(*e.operands[0], object_storage);
    const Arguments args = arguments(e, 1);
    const std::string& name = e.name;
    if (object.is_object() && !is_namespace(object)) {
      if (name == "items" || name == "keys" || name == "values") {
        Value out = Value::array();
        for (const auto& [key, item] : object.items()) {
          if (name == "items") out.push_back(Value::array({key, item}));
          if (name == "keys") out.push_back(key);
          if (name == "values") out.push_back(item);
        }
        return out;
      }
      if (name == "get") {
        const Value key = args.get(0, "key", kUndefined);
        const Value* found = key.is_string() ? member(object, key.get<std::string>()) : nullptr;
        return found ? *found : args.get(1, "default", nullptr);
      }
    }
    if (object.is_string()) {
      const std::string& s = object.get_ref<const std::string&>();
      const Value first = args.get(0, "", nullptr);
      if (name == "strip" || name == "lstrip" || name == "rstrip") {
        const std::optional<std::string> chars =
            first.is_null() ? std::nullopt
                            : std::optional(string_argument(first, name + "'s chars", e.line));
        return strip(s, name != "rstrip", name != "lstrip", chars);
      }
      if (name == "split") {
        const Value limit = args.get(1, "maxsplit", -1);
        if (!is_int(limit)) template_error(e.line, "split's maxsplit must be an int");
        return split(s, args.get(0, "sep", nullptr), limit.get<std::int64_t>());
      }
      if (name == "startswith" || name == "endswith") {
        const std::string affix = string_argument(first, name + "'s argument", e.line);
        if (affix.size() > s.size()) return false;
        return name == "startswith" ? s.compare(0, affix.size(), affix) == 0
                                    : s.compare(s.size() - affix.size(), affix.size(), affix) == 0;
      }
      if (name == "upper") return ascii_case(s, Case::upper);
      if (name == "lower") return ascii_case(s, Case::lower);
      if (name == "capitalize") return ascii_case(s, Case::capitalize);
      if (name == "title") return ascii_case(s, Case::title);
      if (name == "replace") {
        const Value count = args.get(2, "count", -1);
        if (!is_int(count)) template_error(e.line, "replace's count must be an int");
        return capped(
            replace_all(s, string_argument(first, "replace's old", e.line),
                        string_argument(args.get(1, "new", nullptr), "replace's new", e.line),
                        count.get<std::int64_t>()),
            e.line);
      }
      if (name == "format") return format(s, args, e.line);
      if (name == "join") {
        const Value items = iteration_items(first, e.line);
        std::string out;
        for (std::size_t i = 0; i < items.size(); ++i) {
          out += (i ? s : "") + string_argument(items[i], "join's items", e.line);
        }
        return capped(out, e.line);
      }
    }
    if (!is_supported_method(name))
      template_error(e.line, "the method " + name + "() is not supported");
    template_error(e.line, "a " + type_name(object) + " has no method " + name + "()");
  }

  // Python's str.format, as jinja2's sandbox runs it: {} (the next positional argument), {0},
  // {name}, and {{ and }} for braces. Format specs ({:>8}), conversions ({!r}) and fields that
  // reach into a value ({0.name}, {0[1]}) are refused.
  Value format(const std::string& s, const Arguments& args, int line) {
    std::string out;
    std::size_t next_automatic = 0;
    bool automatic = false, numbered = false;
    for (std::size_t i = 0; i < s.size(); ++i) {
      const bool doubled = i + 1 < s.size() && s[i + 1] == s[i];
      if (s[i] == '}' && !doubled) template_error(line, "format: a single '}' in the string");
      if ((s[i] == '{' || s[i] == '}') && doubled) {
        out += s[i++];
        continue;
      }
      if (s[i] != '{') {
        out += s[i];
        continue;
      }
      const std::size_t close = s.find('}', i + 1);
      if (close == std::string::npos) template_error(line, "format: a '{' is never closed");
      const std::string field = s.substr(i + 1, close - i - 1);
      i = close;
      if (field.find_first_of(":!.[{") != std::string::npos) {
        template_error(
            line, "format: the field {" + field + "} is not supported (only {}, {0} and {name})");
      }
      const bool is_index = !field.empty() && std::all_of(field.begin(), field.end(), [](char c) {
        return c >= '0' && c <= '9';
      });
      if (field.empty()) automatic = true;
      if (is_index) numbered = true;
      if (automatic && numbered) template_error(line, "format: cannot mix {} and numbered fields");
      if (!field.empty() && !is_index) {
        const auto found = args.keywords.find(field);
        if (found == args.keywords.end())
          template_error(line, "format: no argument named " + field);
        out += python_str(found->second);
        check_size(out, line);
        continue;
      }
      const std::size_t index = field.empty()      ? next_automatic++
                                : field.size() > 9 ? args.positional.size()
                                                   : std::stoul(field);
      if (index >= args.positional.size())
        template_error(line, "format: no positional argument " + std::to_string(index));
      out += python_str(args.positional[index]);
      check_size(out, line);
    }
    return out;
  }

  // ---- filters and tests ----

  Value apply_filter(const std::string& name, const Value& v, const Arguments& args, int line) {
    if (name == "trim") {
      const Value chars = args.get(0, "chars", nullptr);
      return strip(python_str(v), true, true,
                   chars.is_null() ? std::nullopt
                                   : std::optional(string_argument(chars, "trim's chars", line)));
    }
    if (name == "length" || name == "count") {
      if (v.is_discarded()) return 0;
      if (v.is_string())
        return static_cast<std::int64_t>(code_point_starts(v.get<std::string>()).size() - 1);
      if (v.is_array() || (v.is_object() && !is_namespace(v)))
        return static_cast<std::int64_t>(v.size());
      template_error(line, "a " + type_name(v) + " has no length");
    }
    if (name == "tojson") return tojson(v, args, line);
    if (name == "upper" || name == "lower" || name == "capitalize" || name == "title") {
      const Case mode = name == "lower"        ? Case::lower
                        : name == "upper"      ? Case::upper
                        : name == "capitalize" ? Case::capitalize
                                               : Case::title;
      return ascii_case(python_str(v), mode);
    }
    if (name == "default" || name == "d") {
      const bool boolean = truthy(args.get(1, "boolean", false));
      if (v.is_discarded() || (boolean && !truthy(v))) return args.get(0, "default_value", "");
      return v;
    }
    if (name == "first" || name == "last") {
      const Value items = iteration_items(v, line);
      if (items.empty()) return kUndefined;
      return name == "first" ? items.front() : items.back();
    }
    if (name == "join") {
      const std::string separator = string_argument(args.get(0, "d", ""), "join's separator", line);
      const Value attribute = args.get(1, "attribute", nullptr);
      const Value items = iteration_items(v, line);
      std::string out;
      for (std::size_t i = 0; i < items.size(); ++i) {
        const Value* element = &items[i];
        if (!attribute.is_null()) element = member(items[i], python_str(attribute));
        out += (i ? separator : "") + (element ? python_str(*element) : "");
      }
      return capped(out, line);
    }
    if (name == "string") return python_str(v);
    if (name == "int" || name == "float") {
      double x = 0.0;
      if (is_number(v)) {
        x = as_double(v);
      } else if (v.is_string()) {
        try {
          std::size_t used = 0;
          const std::string trimmed = strip(v.get<std::string>(), true, true, std::nullopt);
          x = std::stod(trimmed, &used);
          if (used != trimmed.size()) throw std::invalid_argument("trailing");
        } catch (const std::exception&) {
          return args.get(0, "default", name == "int" ? Value(0) : Value(0.0));
        }
      } else {
        return args.get(0, "default", name == "int" ? Value(0) : Value(0.0));
      }
      if (name == "float") return x;
      return int_of(x, line);
    }
    if (name == "list") return iteration_items(v, line);
    if (name == "items") {
      if (!v.is_object()) template_error(line, "items needs a dict, not a " + type_name(v));
      return dict_items(v);
    }
    if (name == "dictsort" || name == "sort") return sorted(name, v, args, line);
    if (name == "min" || name == "max") return extreme(name, v, args, line);
    if (name == "indent") return indent(v, args, line);
    if (name == "reverse") {
      Value items = iteration_items(v, line);
      std::reverse(items.begin(), items.end());
      if (!v.is_string()) return items;
      std::string out;
      for (const Value& piece : items) out += piece.get<std::string>();
      return out;
    }
    if (name == "replace") {
      const Value count = args.get(2, "count", -1);
      if (!is_int(count)) template_error(line, "replace's count must be an int");
      return capped(replace_all(python_str(v),
                                string_argument(args.get(0, "old", nullptr), "replace's old", line),
                                string_argument(args.get(1, "new", nullptr), "replace's new", line),
                                count.get<std::int64_t>()),
                    line);
    }
    if (name == "safe") return v;
    if (name == "abs") {
      if (is_int(v)) {
        const std::int64_t x = v.get<std::int64_t>();
        return x < 0 ? negated(x, line) : x;
      }
      if (is_number(v)) return std::fabs(as_double(v));
      template_error(line, "abs needs a number, not a " + type_name(v));
    }
    // map, select, reject, selectattr, rejectattr: over the items.
    const Value items = iteration_items(v, line);
    Value out = Value::array();
    if (name == "map") {
      const auto attribute = args.keywords.find("attribute");
      for (const Value& element : items) {
        if (attribute != args.keywords.end()) {
          const Value* found = member(element, python_str(attribute->second));
          out.push_back(found ? *found : args.keyword("default", kUndefined));
        } else {
          const std::string filter_name =
              string_argument(args.get(0, "", nullptr), "map's filter", line);
          if (!is_supported_filter(filter_name) || filter_name == "map") {
            template_error(line, "map() with the unsupported filter '" + filter_name + "'");
          }
          Arguments rest;
          rest.positional.assign(args.positional.begin() + 1, args.positional.end());
          out.push_back(apply_filter(filter_name, element, rest, line));
        }
      }
      return out;
    }
    const bool by_attribute = name == "selectattr" || name == "rejectattr";
    const bool keep_passing = name == "select" || name == "selectattr";
    const std::size_t test_at = by_attribute ? 1 : 0;
    std::optional<std::string> test_name;
    if (args.positional.size() > test_at)
      test_name = string_argument(args.positional[test_at], name + "'s test", line);
    if (test_name && !is_supported_test(*test_name))
      template_error(line, name + "() with the unsupported test '" + *test_name + "'");
    Arguments test_args;
    if (args.positional.size() > test_at + 1) {
      test_args.positional.assign(
          args.positional.begin() + static_cast<std::ptrdiff_t>(test_at + 1),
          args.positional.end());
    }
    for (const Value& element : items) {
      const Value* subject = &element;
      if (by_attribute) {
        subject =
            member(element, string_argument(args.get(0, "", nullptr), name + "'s attribute", line));
        if (!subject) subject = &kUndefined;
      }
      const bool passes =
          test_name ? apply_test(*test_name, *subject, test_args, line) : truthy(*subject);
      if (passes == keep_passing) out.push_back(element);
    }
    return out;
  }

  Value filter(const Expr& e) {
    if (!is_supported_filter(e.name))
      template_error(e.line, "the filter '" + e.name + "' is not supported");
    Value storage;
    const Value& v = eval_ref(*e.operands[0], storage);
    return apply_filter(e.name, v, arguments(e, 1), e.line);
  }

  // jinja2's indent(width=4, first=false, blank=false): each line after the first (and the first
  // too when `first`) begins with `width` spaces, or with `width` when it is a string; empty lines
  // stay empty unless `blank`. Lines end where Python's str.splitlines ends them.
  Value indent(const Value& v, const Arguments& args, int line) {
    const std::string text = string_argument(v, "indent's value", line);
    const Value width = args.get(0, "width", 4);
    std::string indentation;
    if (width.is_string()) {
      indentation = width.get<std::string>();
    } else if (is_int(width)) {
      const std::int64_t spaces = width.get<std::int64_t>();
      if (spaces > static_cast<std::int64_t>(kMaxRenderBytes))
        template_error(line, "indent's width passes the render's size limit");
      indentation.assign(static_cast<std::size_t>(std::max<std::int64_t>(spaces, 0)), ' ');
    } else {
      template_error(line, "indent's width must be an int or a string, not a " + type_name(width));
    }
    const bool first = truthy(args.get(1, "first", false));
    const bool blank = truthy(args.get(2, "blank", false));
    // (jinja2 splits the text with a newline appended: a trailing newline survives the split.)
    const std::vector<std::string> lines = split_lines(text + "\n");
    std::string out;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      if (i > 0) out += '\n';
      if (i == 0 ? first : blank || !lines[i].empty()) out += indentation;
      out += lines[i];
      check_size(out, line);
    }
    return out;
  }

  // transformers' tojson(ensure_ascii=false, indent=none, separators=none, sort_keys=false):
  // Python's json.dumps with those arguments (an int indent is that many spaces, a string itself).
  Value tojson(const Value& v, const Arguments& args, int line) {
    JsonStyle style;
    style.max_bytes = kMaxRenderBytes;
    style.ensure_ascii = truthy(args.get(0, "ensure_ascii", false));
    const Value indent = args.get(1, "indent", nullptr);
    if (indent.is_string()) {
      style.indent = indent.get<std::string>();
    } else if (is_int(indent)) {
      const std::int64_t spaces = std::clamp<std::int64_t>(
          indent.get<std::int64_t>(), 0, static_cast<std::int64_t>(kMaxRenderBytes) + 1);
      style.indent = std::string(static_cast<std::size_t>(spaces), ' ');
    } else if (!indent.is_null()) {
      template_error(line,
                     "tojson's indent must be an int or a string, not a " + type_name(indent));
    }
    const Value separators = args.get(2, "separators", nullptr);
    if (!separators.is_null()) {
      if (!separators.is_array() || separators.size() != 2 || !separators[0].is_string() ||
          !separators[1].is_string()) {
        template_error(line,
                       "tojson's separators must be two strings (between items, after a key)");
      }
      style.separators.emplace(separators[0].get<std::string>(), separators[1].get<std::string>());
    }
    style.sort_keys = truthy(args.get(3, "sort_keys", false));
    return python_json(v, style);
  }

  // What sort, dictsort, min and max compare an item by: its `attribute` (a string) or itself,
  // lowercased unless case_sensitive.
  static Value ordering_key(const Value& item, const Value& attribute, bool case_sensitive) {
    Value key = item;
    if (attribute.is_string()) {
      const Value* found = member(item, attribute.get<std::string>());
      key = found ? *found : kUndefined;
    }
    if (!case_sensitive && key.is_string()) return ascii_case(key.get<std::string>(), Case::lower);
    return key;
  }

  // jinja2's min and max(case_sensitive=false, attribute=none): the first smallest (largest)
  // item, as Python's min and max pick it; undefined when there is none.
  Value extreme(const std::string& name, const Value& v, const Arguments& args, int line) {
    const bool case_sensitive = truthy(args.get(0, "case_sensitive", false));
    const Value attribute = args.get(1, "attribute", nullptr);
    const Value items = iteration_items(v, line);
    const Value* best = nullptr;
    Value best_key;
    for (const Value& item : items) {
      Value key = ordering_key(item, attribute, case_sensitive);
      const bool better = best == nullptr ||
                          (name == "min" ? less(key, best_key, line) : less(best_key, key, line));
      if (better) {
        best = &item;
        best_key = std::move(key);
      }
    }
    return best ? *best : kUndefined;
  }

  // A dict's [key, value] pairs, in its order (the items filter; dictsort sorts them).
  static Value dict_items(const Value& dict) {
    Value pairs = Value::array();
    for (const auto& [key, item] : dict.items()) pairs.push_back(Value::array({key, item}));
    return pairs;
  }

  // jinja2's dictsort(case_sensitive=false, by='key', reverse=false): a dict's [key, value]
  // pairs; and sort(reverse=false, case_sensitive=false, attribute=none): any iterable's items.
  // Both stable (as Python's sorted), strings compared lowercased unless case_sensitive.
  Value sorted(const std::string& name, const Value& v, const Arguments& args, int line) {
    const bool dictsort = name == "dictsort";
    if (dictsort && !v.is_object())
      template_error(line, "dictsort needs a dict, not a " + type_name(v));
    Value items = dictsort ? dict_items(v) : iteration_items(v, line);
    const bool case_sensitive = truthy(args.get(dictsort ? 0 : 1, "case_sensitive", false));
    const bool reverse = truthy(args.get(dictsort ? 2 : 0, "reverse", false));
    const Value by = dictsort ? args.get(1, "by", "key") : Value();
    if (dictsort && by != "key" && by != "value") {
      template_error(line, "dictsort's by must be 'key' or 'value'");
    }
    const Value attribute = dictsort ? Value() : args.get(2, "attribute", nullptr);
    std::vector<std::pair<Value, Value>> keyed;
    for (Value& item : items) {
      keyed.emplace_back(
          ordering_key(dictsort ? item[by == "key" ? 0 : 1] : item, attribute, case_sensitive),
          std::move(item));
    }
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
      return reverse ? less(b.first, a.first, line) : less(a.first, b.first, line);
    });
    Value out = Value::array();
    for (auto& [key, item] : keyed) out.push_back(std::move(item));
    return out;
  }

  bool apply_test(const std::string& name, const Value& v, const Arguments& args, int line) {
    if (name == "defined") return !v.is_discarded();
    if (name == "undefined") return v.is_discarded();
    if (name == "none") return v.is_null();
    if (name == "string") return v.is_string();
    if (name == "number") return is_number(v);
    if (name == "integer") return is_int(v);
    if (name == "float") return v.is_number_float();
    if (name == "boolean") return v.is_boolean();
    if (name == "true") return v.is_boolean() && v.get<bool>();
    if (name == "false") return v.is_boolean() && !v.get<bool>();
    if (name == "mapping") return v.is_object() && !is_namespace(v);
    if (name == "sequence")
      return v.is_array() || v.is_string() || (v.is_object() && !is_namespace(v));
    if (name == "iterable")
      return v.is_array() || v.is_string() || (v.is_object() && !is_namespace(v));
    const Value other = args.get(0, "", kUndefined);
    if (name == "odd" || name == "even" || name == "divisibleby") {
      if (!is_int(v))
        template_error(line, "the test " + name + " needs an int, not a " + type_name(v));
      const std::int64_t x = v.get<std::int64_t>();
      if (name == "odd") return x % 2 != 0;
      if (name == "even") return x % 2 == 0;
      if (!is_int(other) || other.get<std::int64_t>() == 0)
        template_error(line, "divisibleby needs a nonzero int");
      return x % other.get<std::int64_t>() == 0;
    }
    if (name == "equalto" || name == "eq" || name == "==") return equal(v, other);
    if (name == "ne" || name == "!=") return !equal(v, other);
    return contains(other, v, line);  // "in"
  }

  Value test(const Expr& e) {
    if (!is_supported_test(e.name))
      template_error(e.line, "the test '" + e.name + "' is not supported");
    Value storage;
    const Value& v = eval_ref(*e.operands[0], storage);
    return apply_test(e.name, v, arguments(e, 1), e.line) != e.negated;
  }

  std::vector<Value> scopes_;
  std::size_t macro_floor_ = 0;                             // see find()
  std::map<std::string, const Node*, std::less<>> macros_;  // the macros defined so far
  int depth_ = 0;                                           // see Nesting
  Value character_;
  std::int64_t steps_ = 0;
};

}  // namespace

std::string Template::render(const Value& variables) const {
  Renderer renderer(variables);
  renderer.run(body_);
  return std::move(renderer.output);
}

}  // namespace attnscope::tokenizer::jinja
