//===- SymExpr.cpp - torch.export's symbolic size expressions -------------===//
//
// A recursive-descent reader of the sympy text torch.export writes for
// sizes, evaluating as it reads. Values are exact rationals (an
// IntTrueDiv, a Rational(1, 2) coefficient), so only the final result must
// be an integer; every operation checks for int64 overflow.
//
//===----------------------------------------------------------------------===//
#include "SymExpr.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/Twine.h"

#include <cctype>
#include <limits>
#include <numeric>

using namespace mlir::ds::importer;

namespace {

/// Thrown inside the reader, caught by evaluateSymExpr.
struct Failure {
  std::string why;
};

[[noreturn]] void fail(const llvm::Twine &why) { throw Failure{why.str()}; }

int64_t checkedMul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    fail("overflows 64-bit integers");
  return r;
}

int64_t checkedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    fail("overflows 64-bit integers");
  return r;
}

/// An exact rational num / den, den > 0, in lowest terms.
struct Q {
  int64_t num = 0, den = 1;
  static Q of(int64_t n, int64_t d = 1) {
    if (d == 0)
      fail("divides by zero");
    // std::gcd and negation need |n| and |d| representable.
    if (n == std::numeric_limits<int64_t>::min() ||
        d == std::numeric_limits<int64_t>::min())
      fail("overflows 64-bit integers");
    if (d < 0) {
      n = checkedMul(n, -1);
      d = checkedMul(d, -1);
    }
    int64_t g = std::gcd(n, d);
    return {n / (g ? g : 1), d / (g ? g : 1)};
  }
  bool isInt() const { return den == 1; }
  /// floor(num / den), rounding toward -infinity.
  int64_t floor() const {
    int64_t q = num / den;
    return (num % den != 0 && num < 0) ? q - 1 : q;
  }
  int64_t ceil() const { return isInt() ? num : floor() + 1; }
};

Q operator+(Q a, Q b) {
  return Q::of(checkedAdd(checkedMul(a.num, b.den), checkedMul(b.num, a.den)),
               checkedMul(a.den, b.den));
}
Q operator-(Q a) { return Q::of(checkedMul(a.num, -1), a.den); }
Q operator-(Q a, Q b) { return a + -b; }
Q operator*(Q a, Q b) {
  return Q::of(checkedMul(a.num, b.num), checkedMul(a.den, b.den));
}
Q operator/(Q a, Q b) {
  if (b.num == 0)
    fail("divides by zero");
  return Q::of(checkedMul(a.num, b.den), checkedMul(a.den, b.num));
}
/// -1, 0 or 1 as a < b, a == b, a > b.
int compare(Q a, Q b) {
  int64_t l = checkedMul(a.num, b.den), r = checkedMul(b.num, a.den);
  return l < r ? -1 : l > r ? 1 : 0;
}
Q floorDiv(Q a, Q b) { return Q::of((a / b).floor()); }
/// Python's a % b: the sign of b.
Q pyMod(Q a, Q b) { return a - b * floorDiv(a, b); }
Q truth(bool b) { return Q::of(b ? 1 : 0); }

/// A parsed value: a number, or a string literal (a Symbol's name).
struct Val {
  Q q;
  std::optional<std::string> text;
};

class Reader {
public:
  Reader(llvm::StringRef s, const llvm::StringMap<int64_t> &symbols)
      : s(s), symbols(symbols) {}

  Q all() {
    Q v = logicOr();
    skip();
    if (at < s.size())
      fail("unexpected '" + s.substr(at, 12) + "' at offset " +
           llvm::Twine(at));
    return v;
  }

private:
  void skip() {
    while (at < s.size() && std::isspace(static_cast<unsigned char>(s[at])))
      ++at;
  }
  /// Consumes `tok` if it comes next (and, for "*" and "/", is not the
  /// start of "**" or "//").
  bool eat(llvm::StringRef tok) {
    skip();
    if (!s.substr(at).starts_with(tok))
      return false;
    if ((tok == "*" || tok == "/" || tok == "=" || tok == "<" || tok == ">") &&
        at + 1 < s.size() && (s[at + 1] == tok[0] || s[at + 1] == '='))
      return false;
    at += tok.size();
    return true;
  }
  void expect(char c) {
    skip();
    if (at >= s.size() || s[at] != c)
      fail(llvm::Twine("expected '") + llvm::Twine(c) + "' at offset " +
           llvm::Twine(at));
    ++at;
  }

  Q number(const Val &v) {
    if (v.text)
      fail("'" + *v.text + "' is a string where a number belongs");
    return v.q;
  }

  /// Counts the nesting of one recursive rule; deeper than kMaxDepth is an
  /// error, not a stack overflow.
  struct Nest {
    explicit Nest(size_t &depth) : depth(depth) {
      if (++depth > kMaxDepth)
        fail("nests deeper than " + llvm::Twine(kMaxDepth));
    }
    ~Nest() { --depth; }
    size_t &depth;
  };
  static constexpr size_t kMaxDepth = 256;

  Q logicOr() {
    Nest nest(depth);
    Q v = logicAnd();
    while (eat("|"))
      v = truth(logicAnd().num != 0 || v.num != 0);
    return v;
  }
  Q logicAnd() {
    Q v = comparison();
    while (eat("&"))
      v = truth(comparison().num != 0 && v.num != 0);
    return v;
  }
  Q comparison() {
    Q v = sum();
    for (llvm::StringRef op : {"<=", ">=", "==", "!=", "<", ">"}) {
      if (!eat(op))
        continue;
      int c = compare(v, sum());
      return truth(op == "<="   ? c <= 0
                   : op == ">=" ? c >= 0
                   : op == "==" ? c == 0
                   : op == "!=" ? c != 0
                   : op == "<"  ? c < 0
                                : c > 0);
    }
    return v;
  }
  Q sum() {
    Q v = term();
    while (true) {
      if (eat("+"))
        v = v + term();
      else if (eat("-"))
        v = v - term();
      else
        return v;
    }
  }
  Q term() {
    Q v = unary();
    while (true) {
      if (eat("//"))
        v = floorDiv(v, unary());
      else if (eat("*"))
        v = v * unary();
      else if (eat("/"))
        v = v / unary();
      else if (eat("%"))
        v = pyMod(v, unary());
      else
        return v;
    }
  }
  Q unary() {
    Nest nest(depth);
    if (eat("-"))
      return -unary();
    if (eat("+"))
      return unary();
    if (eat("~"))
      return truth(unary().num == 0);
    Q base = number(primary());
    if (eat("**"))
      return power(base, unary());
    return base;
  }
  static Q power(Q base, Q exp) {
    if (!exp.isInt())
      fail("raises to a non-integer power");
    if (exp.num > 64 || exp.num < -64)
      fail("raises to a power beyond 64");
    Q r = Q::of(1);
    for (int64_t k = 0; k < std::abs(exp.num); ++k)
      r = r * base;
    return exp.num < 0 ? Q::of(1) / r : r;
  }

  Val primary() {
    skip();
    if (at >= s.size())
      fail("ends where a value belongs");
    char c = s[at];
    if (c == '(') {
      ++at;
      Q v = logicOr();
      expect(')');
      return {v, {}};
    }
    if (c == '\'' || c == '"') {
      size_t end = s.find(c, at + 1);
      if (end == llvm::StringRef::npos)
        fail("has an unterminated string at offset " + llvm::Twine(at));
      Val v{Q(), s.slice(at + 1, end).str()};
      at = end + 1;
      return v;
    }
    if (std::isdigit(static_cast<unsigned char>(c)))
      return {decimal(), {}};
    if (!std::isalpha(static_cast<unsigned char>(c)) && c != '_')
      fail("unexpected '" + s.substr(at, 12) + "' at offset " +
           llvm::Twine(at));
    size_t start = at;
    while (at < s.size() &&
           (std::isalnum(static_cast<unsigned char>(s[at])) || s[at] == '_'))
      ++at;
    std::string name = s.slice(start, at).str();
    if (!eat("("))
      return {word(name), {}};
    llvm::SmallVector<Val> args;
    skip();
    if (!eat(")")) {
      do {
        // Keyword arguments (Symbol's positive=True) say nothing about
        // the value.
        skip();
        size_t save = at;
        while (
            at < s.size() &&
            (std::isalnum(static_cast<unsigned char>(s[at])) || s[at] == '_'))
          ++at;
        if (at > save && eat("=")) {
          logicOr();
          continue;
        }
        at = save;
        Val arg = primaryOrExpr();
        args.push_back(std::move(arg));
      } while (eat(","));
      expect(')');
    }
    return {call(name, args), {}};
  }
  /// A call's argument: a string literal stays one, else an expression.
  Val primaryOrExpr() {
    skip();
    if (at < s.size() && (s[at] == '\'' || s[at] == '"')) {
      size_t save = at;
      Val v = primary();
      skip();
      if (at >= s.size() || s[at] == ',' || s[at] == ')')
        return v;
      at = save;
    }
    return {logicOr(), {}};
  }

  Q decimal() {
    int64_t num = 0, den = 1;
    for (; at < s.size() && std::isdigit(static_cast<unsigned char>(s[at]));
         ++at)
      num = checkedAdd(checkedMul(num, 10), s[at] - '0');
    if (at < s.size() && s[at] == '.') {
      ++at;
      for (; at < s.size() && std::isdigit(static_cast<unsigned char>(s[at]));
           ++at) {
        num = checkedAdd(checkedMul(num, 10), s[at] - '0');
        den = checkedMul(den, 10);
      }
    }
    return Q::of(num, den);
  }

  /// A name without a call: a symbol (str()'s form) or a truth value.
  Q word(const std::string &name) {
    if (name == "True" || name == "true")
      return truth(true);
    if (name == "False" || name == "false")
      return truth(false);
    auto it = symbols.find(name);
    if (it == symbols.end())
      fail("symbol " + name + " has no value");
    return Q::of(it->second);
  }

  Q call(const std::string &f, llvm::ArrayRef<Val> args) {
    auto arity = [&](size_t lo, size_t hi) {
      if (args.size() >= lo && args.size() <= hi)
        return;
      std::string want = std::to_string(lo);
      if (hi > 8)
        want += " or more";
      else if (hi != lo)
        want += " to " + std::to_string(hi);
      fail(f + " takes " + want + " arguments, not " +
           llvm::Twine(args.size()));
    };
    auto n = [&](size_t i) { return number(args[i]); };
    if (f == "Symbol") {
      arity(1, 1);
      if (!args[0].text)
        fail("Symbol without a name");
      return word(*args[0].text);
    }
    if (f == "Integer" || f == "ToFloat" || f == "Float") {
      arity(1, 1);
      return n(0);
    }
    if (f == "Rational") {
      arity(2, 2);
      return n(0) / n(1);
    }
    if (f == "BooleanTrue" || f == "BooleanFalse") {
      arity(0, 0);
      return truth(f == "BooleanTrue");
    }
    static constexpr size_t many = 1 << 20;
    if (f == "Add" || f == "Mul" || f == "Max" || f == "Min" || f == "And" ||
        f == "Or") {
      arity(1, many);
      Q v = n(0);
      for (size_t i = 1; i < args.size(); ++i) {
        Q x = n(i);
        v = f == "Add"   ? v + x
            : f == "Mul" ? v * x
            : f == "Max" ? (compare(x, v) > 0 ? x : v)
            : f == "Min" ? (compare(x, v) < 0 ? x : v)
            : f == "And" ? truth(v.num != 0 && x.num != 0)
                         : truth(v.num != 0 || x.num != 0);
      }
      return v;
    }
    if (f == "Pow" || f == "PowByNatural") {
      arity(2, 2);
      return power(n(0), n(1));
    }
    if (f == "FloorDiv" || f == "CleanDiv") {
      arity(2, 2);
      return floorDiv(n(0), n(1));
    }
    if (f == "CeilDiv") {
      arity(2, 2);
      return Q::of((n(0) / n(1)).ceil());
    }
    if (f == "IntTrueDiv" || f == "FloatTrueDiv") {
      arity(2, 2);
      return n(0) / n(1);
    }
    if (f == "Mod" || f == "PythonMod") {
      arity(2, 2);
      return pyMod(n(0), n(1));
    }
    if (f == "ModularIndexing") {
      arity(3, 3);
      return pyMod(floorDiv(n(0), n(1)), n(2));
    }
    if (f == "floor" || f == "FloorToInt") {
      arity(1, 1);
      return Q::of(n(0).floor());
    }
    if (f == "ceiling" || f == "CeilToInt") {
      arity(1, 1);
      return Q::of(n(0).ceil());
    }
    if (f == "TruncToInt" || f == "TruncToFloat") {
      arity(1, 1);
      Q x = n(0);
      return Q::of(x.num < 0 ? -(-x).floor() : x.floor());
    }
    if (f == "Abs") {
      arity(1, 1);
      Q x = n(0);
      return x.num < 0 ? -x : x;
    }
    if (f == "Where") {
      arity(3, 3);
      return n(0).num != 0 ? n(1) : n(2);
    }
    if (f == "Not") {
      arity(1, 1);
      return truth(n(0).num == 0);
    }
    if (f == "LShift" || f == "RShift") {
      arity(2, 2);
      Q shift = n(1);
      if (!shift.isInt() || shift.num < 0 || shift.num > 62)
        fail(f + " by " + llvm::Twine(shift.num) + "/" +
             llvm::Twine(shift.den));
      Q scale = Q::of(int64_t(1) << shift.num);
      return f == "LShift" ? n(0) * scale : floorDiv(n(0), scale);
    }
    static const std::pair<llvm::StringRef, llvm::StringRef> relations[] = {
        {"Eq", "=="}, {"Equality", "=="},
        {"Ne", "!="}, {"Unequality", "!="},
        {"Lt", "<"},  {"StrictLessThan", "<"},
        {"Le", "<="}, {"LessThan", "<="},
        {"Gt", ">"},  {"StrictGreaterThan", ">"},
        {"Ge", ">="}, {"GreaterThan", ">="}};
    for (auto [name, op] : relations) {
      if (f != name)
        continue;
      arity(2, 2);
      int c = compare(n(0), n(1));
      return truth(op == "=="   ? c == 0
                   : op == "!=" ? c != 0
                   : op == "<"  ? c < 0
                   : op == "<=" ? c <= 0
                   : op == ">"  ? c > 0
                                : c >= 0);
    }
    fail("calls " + f + ", a function ds does not evaluate");
  }

  llvm::StringRef s;
  const llvm::StringMap<int64_t> &symbols;
  size_t at = 0, depth = 0;
};

} // namespace

llvm::Expected<int64_t>
pt2::evaluateSymExpr(llvm::StringRef expr,
                     const llvm::StringMap<int64_t> &symbols) {
  try {
    Q v = Reader(expr, symbols).all();
    if (!v.isInt())
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     ("is " + llvm::Twine(v.num) + "/" +
                                      llvm::Twine(v.den) + ", not an integer")
                                         .str());
    return v.num;
  } catch (const Failure &f) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), f.why);
  }
}

std::optional<std::string> pt2::bareSymbol(llvm::StringRef expr) {
  expr = expr.trim();
  auto isName = [](llvm::StringRef s) {
    return !s.empty() &&
           (std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_') &&
           llvm::all_of(s, [](char c) {
             return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
           });
  };
  if (isName(expr) && expr != "True" && expr != "False")
    return expr.str();
  if (!expr.consume_front("Symbol(") || !expr.consume_back(")"))
    return std::nullopt;
  expr = expr.ltrim();
  if (expr.empty() || (expr[0] != '\'' && expr[0] != '"'))
    return std::nullopt;
  char quote = expr[0];
  size_t end = expr.find(quote, 1);
  if (end == llvm::StringRef::npos)
    return std::nullopt;
  llvm::StringRef name = expr.slice(1, end);
  if (!isName(name))
    return std::nullopt;
  return name.str();
}

std::vector<std::string> pt2::symbolsOf(llvm::StringRef expr) {
  // Lexically: Symbol('name', ...)'s string, and any other name that is not
  // called, not a keyword argument and not a truth value.
  std::vector<std::string> names;
  auto note = [&](llvm::StringRef name) {
    if (llvm::find(names, name) == names.end())
      names.push_back(name.str());
  };
  auto isWord = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  };
  for (size_t at = 0; at < expr.size();) {
    char c = expr[at];
    if (c == '\'' || c == '"') {
      size_t end = expr.find(c, at + 1);
      at = end == llvm::StringRef::npos ? expr.size() : end + 1;
      continue;
    }
    if (!std::isalpha(static_cast<unsigned char>(c)) && c != '_') {
      ++at;
      // A number's digits are not a name.
      while (std::isdigit(static_cast<unsigned char>(c)) && at < expr.size() &&
             isWord(expr[at]))
        ++at;
      continue;
    }
    size_t start = at;
    while (at < expr.size() && isWord(expr[at]))
      ++at;
    llvm::StringRef name = expr.slice(start, at);
    llvm::StringRef rest = expr.substr(at).ltrim();
    if (name == "Symbol" && rest.starts_with("(")) {
      rest = rest.drop_front().ltrim();
      if (!rest.empty() && (rest[0] == '\'' || rest[0] == '"')) {
        size_t end = rest.find(rest[0], 1);
        if (end != llvm::StringRef::npos)
          note(rest.slice(1, end));
      }
      continue;
    }
    if (rest.starts_with("(") ||
        (rest.starts_with("=") && !rest.starts_with("==")) || name == "True" ||
        name == "False" || name == "true" || name == "false")
      continue;
    note(name);
  }
  return names;
}
