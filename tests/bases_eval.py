"""A small evaluator for the part of Obsidian's Bases expression language vaultmem's
dashboard uses (Bases syntax and Functions, help.obsidian.md): numbers, strings, booleans,
note properties, `formula.X`, arithmetic, comparisons, `&&` `||` `!`, list literals and
`[i]`, the global functions `if` `min` `max` `number` `now`, and the methods `reduce`
(with `acc` and `value`), `contains`, `lower`, `toString`, `round`. Anything else is an
error, so a formula using more than this subset fails the test instead of passing unseen."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

_TOKEN = re.compile(r"\s*(?:(\d+(?:\.\d+)?)|(\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*')|([A-Za-z_][A-Za-z_0-9]*)"
                    r"|(==|!=|<=|>=|&&|\|\||[-+*/%<>!()\[\],.]))")


def tokenize(text: str) -> list[tuple[str, Any]]:
    pos, out = 0, []
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise SyntaxError(f"cannot read {text[pos:pos + 20]!r}")
        num, string, name, op = m.groups()
        if num is not None:
            out.append(("num", float(num)))
        elif string is not None:
            out.append(("str", string[1:-1]))
        elif name is not None:
            out.append(("name", name))
        else:
            out.append(("op", op))
        pos = m.end()
    out.append(("end", None))
    return out


_BINARY = {"||": 1, "&&": 2, "==": 3, "!=": 3, "<": 4, ">": 4, "<=": 4, ">=": 4, "+": 5, "-": 5,
           "*": 6, "/": 6, "%": 6}


class Parser:
    """Pratt parser producing nested tuples (the AST)."""

    def __init__(self, text: str) -> None:
        self.tokens = tokenize(text)
        self.i = 0

    def peek(self) -> tuple[str, Any]:
        return self.tokens[self.i]

    def take(self, op: str | None = None) -> tuple[str, Any]:
        tok = self.tokens[self.i]
        if op is not None and tok != ("op", op):
            raise SyntaxError(f"expected {op!r}, got {tok}")
        self.i += 1
        return tok

    def parse(self) -> Any:
        node = self.expr(0)
        if self.peek()[0] != "end":
            raise SyntaxError(f"trailing {self.peek()}")
        return node

    def expr(self, level: int) -> Any:
        left = self.unary()
        while True:
            kind, op = self.peek()
            if kind != "op" or op not in _BINARY or _BINARY[op] <= level:
                return left
            self.take()
            left = ("bin", op, left, self.expr(_BINARY[op]))

    def unary(self) -> Any:
        kind, op = self.peek()
        if kind == "op" and op in ("-", "!"):
            self.take()
            return ("un", op, self.unary())
        return self.postfix(self.primary())

    def args(self) -> list[Any]:
        self.take("(")
        out = []
        while self.peek() != ("op", ")"):
            out.append(self.expr(0))
            if self.peek() == ("op", ","):
                self.take()
        self.take(")")
        return out

    def primary(self) -> Any:
        kind, value = self.take()
        if kind == "num":
            return ("lit", value)
        if kind == "str":
            return ("lit", value)
        if kind == "op" and value == "(":
            node = self.expr(0)
            self.take(")")
            return node
        if kind == "op" and value == "[":
            items = []
            while self.peek() != ("op", "]"):
                items.append(self.expr(0))
                if self.peek() == ("op", ","):
                    self.take()
            self.take("]")
            return ("list", items)
        if kind == "name":
            if value in ("true", "false"):
                return ("lit", value == "true")
            if self.peek() == ("op", "("):
                return ("call", value, self.args())
            if value == "formula":
                self.take(".")
                return ("formula", self.take()[1])
            return ("var", value)
        raise SyntaxError(f"unexpected {kind} {value!r}")

    def postfix(self, node: Any) -> Any:
        while True:
            if self.peek() == ("op", "["):
                self.take()
                index = self.expr(0)
                self.take("]")
                node = ("index", node, index)
            elif self.peek() == ("op", ".") and self.tokens[self.i + 1][0] == "name":
                self.take()
                name = self.take()[1]
                node = ("method", node, name, self.args()) if self.peek() == ("op", "(") else ("field", node, name)
            else:
                return node


def _number(value: Any) -> float:
    if isinstance(value, dt.datetime):
        return value.timestamp() * 1000
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    return float(str(value))


def _truthy(value: Any) -> bool:
    return bool(value) if value is not None else False


class Evaluator:
    """Evaluates a .base file's formulas for one note (its properties) at a fixed `now`."""

    def __init__(self, formulas: dict[str, str], note: dict[str, Any], now: dt.datetime) -> None:
        self.asts = {name: Parser(text).parse() for name, text in formulas.items()}
        self.note, self.now, self.cache = note, now, {}

    def formula(self, name: str) -> Any:
        if name not in self.cache:
            self.cache[name] = self.eval(self.asts[name], {})
        return self.cache[name]

    def eval(self, node: Any, env: dict[str, Any]) -> Any:
        kind = node[0]
        if kind == "lit":
            return node[1]
        if kind == "list":
            return [self.eval(x, env) for x in node[1]]
        if kind == "var":
            return env[node[1]] if node[1] in env else self.note.get(node[1])
        if kind == "formula":
            return self.formula(node[1])
        if kind == "index":
            return self.eval(node[1], env)[int(self.eval(node[2], env))]
        if kind == "un":
            value = self.eval(node[2], env)
            return -value if node[1] == "-" else not _truthy(value)
        if kind == "bin":
            op = node[1]
            if op == "&&":
                left = self.eval(node[2], env)
                return self.eval(node[3], env) if _truthy(left) else left
            if op == "||":
                left = self.eval(node[2], env)
                return left if _truthy(left) else self.eval(node[3], env)
            a, b = self.eval(node[2], env), self.eval(node[3], env)
            return {"==": lambda: a == b, "!=": lambda: a != b, "<": lambda: a < b, ">": lambda: a > b,
                    "<=": lambda: a <= b, ">=": lambda: a >= b, "+": lambda: a + b, "-": lambda: a - b,
                    "*": lambda: a * b, "/": lambda: a / b, "%": lambda: a % b}[op]()
        if kind == "call":
            name, args = node[1], node[2]
            if name == "if":
                cond = _truthy(self.eval(args[0], env))
                if cond:
                    return self.eval(args[1], env)
                return self.eval(args[2], env) if len(args) > 2 else None
            values = [self.eval(a, env) for a in args]
            if name == "max":
                return max(values)
            if name == "min":
                return min(values)
            if name == "number":
                return _number(values[0])
            if name == "now":
                return self.now
            raise NameError(f"function {name} is not in the evaluated subset")
        if kind == "field":
            raise NameError(f"field .{node[2]} is not in the evaluated subset")
        if kind == "method":
            target, name, args = node[1], node[2], node[3]
            if name == "reduce":
                items = self.eval(target, env)
                acc = self.eval(args[1], env)
                for index, value in enumerate(items):
                    acc = self.eval(args[0], {**env, "acc": acc, "value": value, "index": index})
                return acc
            obj = self.eval(target, env)
            values = [self.eval(a, env) for a in args]
            if name == "contains":
                return values[0] in obj
            if name == "lower":
                return obj.lower()
            if name == "toString":
                return str(obj)
            if name == "round":
                digits = int(values[0]) if values else 0
                return round(obj, digits)
            raise NameError(f"method {name} is not in the evaluated subset")
        raise NameError(kind)
