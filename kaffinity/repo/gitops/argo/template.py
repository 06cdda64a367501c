"""ApplicationSet templates: the two template languages of Argo CD's applicationset controller.

- *fasttemplate* (``goTemplate`` unset): ``{{ key }}`` replaced by the parameter ``key`` (a flat
  string map: ``path``, ``path.basename``, ``path[0]``...); a tag naming no parameter is kept as
  written (argo-cd applicationset/utils/utils.go, ``Render.RenderTemplateParams`` with
  ``fasttemplate.ExecuteFuncStringWithErr``, whose callback writes unknown tags back).
- *Go text/template* (``goTemplate: true``): the subset seen in real ApplicationSets -- field
  chains (``{{.path.basename}}``), ``index``, pipelines, ``if``/``else``/``end``, literals and a
  few of the Sprig functions Argo offers (``sprig.TxtFuncMap()`` without ``env``/``expandenv``/
  ``getHostByName``) plus Argo's ``normalize``/``toYaml``. A construct outside the subset raises
  :class:`TemplateError`, which the caller reports as a release not rendered.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

_FAST_TAG = re.compile(r"\{\{(.*?)\}\}", re.S)
_ACTION = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.S)


class TemplateError(ValueError):
    """A template the subset cannot evaluate (or that Go's own would refuse)."""


def fast_render(text: str, params: Mapping[str, Any]) -> str:
    """fasttemplate's ``{{key}}`` substitution, unknown tags kept."""

    def replace(match: re.Match[str]) -> str:
        key = match.group(1).strip()
        if key and key in params:
            return _text(params[key])
        return match.group(0)

    return _FAST_TAG.sub(replace, text)


def sanitize_name(name: str) -> str:
    """argo-cd applicationset/utils ``SanitizeName`` (``normalize``, ``*Normalized`` parameters):
    lower case, every character but ``a-z0-9-.`` a ``-``, at most 253, trimmed of ``-``/``.``."""
    text = re.sub(r"[^a-z0-9.-]", "-", name.lower())
    return text[:253].strip("-.")


def render_value(value: Any, render: Callable[[str], str]) -> Any:
    """``value`` with every string in it rendered (mapping keys are kept)."""
    if isinstance(value, str):
        return render(value)
    if isinstance(value, Mapping):
        return {key: render_value(item, render) for key, item in value.items()}
    if isinstance(value, list):
        return [render_value(item, render) for item in value]
    return value


# --- Go text/template, a subset ----------------------------------------------------------------


def go_render(text: str, params: Mapping[str, Any], *, missing_error: bool = False) -> str:
    """Go ``text/template`` on ``text`` with ``params`` as dot. ``missing_error``: the
    ``missingkey=error`` option (a missing map key fails; otherwise it prints ``<no value>``)."""
    if "{{" not in text:
        return text
    return _GoTemplate(text, params, missing_error).run()


_Node = tuple[str, Any]


class _GoTemplate:
    def __init__(self, text: str, params: Mapping[str, Any], missing_error: bool) -> None:
        self.params = params
        self.missing_error = missing_error
        self.nodes = self._parse(self._tokens(text))

    @staticmethod
    def _tokens(text: str) -> list[tuple[str, str]]:
        tokens: list[tuple[str, str]] = []
        position = 0
        trim_next = False
        for match in _ACTION.finditer(text):
            literal = text[position : match.start()]
            if trim_next:
                literal = literal.lstrip()
            if match.group(1):
                literal = literal.rstrip()
            if literal:
                tokens.append(("text", literal))
            tokens.append(("action", match.group(2).strip()))
            trim_next = bool(match.group(3))
            position = match.end()
        literal = text[position:]
        if trim_next:
            literal = literal.lstrip()
        if literal:
            tokens.append(("text", literal))
        return tokens

    def _parse(self, tokens: list[tuple[str, str]]) -> list[_Node]:
        stack: list[tuple[list[_Node], Any]] = []
        nodes: list[_Node] = []
        for kind, body in tokens:
            if kind == "text":
                nodes.append(("text", body))
                continue
            if body.startswith("/*"):
                continue
            word = body.split(None, 1)[0] if body else ""
            if word == "if":
                branch: dict[str, Any] = {"branches": [[body[2:].strip(), []]], "else": None}
                nodes.append(("if", branch))
                stack.append((nodes, branch))
                nodes = branch["branches"][0][1]
            elif word == "else":
                if not stack:
                    raise TemplateError("{{else}} outside {{if}}")
                branch = stack[-1][1]
                rest = body[4:].strip()
                if rest.startswith("if "):
                    branch["branches"].append([rest[3:].strip(), []])
                    nodes = branch["branches"][-1][1]
                else:
                    branch["else"] = []
                    nodes = branch["else"]
            elif word == "end":
                if not stack:
                    raise TemplateError("{{end}} outside {{if}}")
                nodes, _ = stack.pop()
            elif word in ("range", "with", "define", "template", "block") or ":=" in body:
                raise TemplateError(f"{{{{{word}}}}} is not evaluated by kaffinity")
            else:
                nodes.append(("pipeline", body))
        if stack:
            raise TemplateError("{{if}} without {{end}}")
        return nodes

    def run(self) -> str:
        return "".join(self._execute(self.nodes))

    def _execute(self, nodes: list[_Node]) -> list[str]:
        out: list[str] = []
        for kind, body in nodes:
            if kind == "text":
                out.append(body)
            elif kind == "pipeline":
                out.append(_go_text(self._pipeline(body)))
            else:
                for condition, inner in body["branches"]:
                    if _truth(self._pipeline(condition)):
                        out.extend(self._execute(inner))
                        break
                else:
                    if body["else"] is not None:
                        out.extend(self._execute(body["else"]))
        return out

    # pipelines: commands separated by |, each a function and its arguments or one operand

    def _pipeline(self, text: str) -> Any:
        value: Any = _NOTHING
        for command in _split_pipes(text):
            words = _words(command)
            if not words:
                raise TemplateError(f"empty command in {{{{{text}}}}}")
            head, args = words[0], words[1:]
            if _is_function(head):
                arguments = [self._operand(arg) for arg in args]
                if value is not _NOTHING:
                    arguments.append(value)
                value = self._call(head, arguments)
            else:
                if args or value is not _NOTHING:
                    raise TemplateError(f"cannot evaluate {{{{{text}}}}}")
                value = self._operand(head)
        return None if value is _NOTHING else value

    def _operand(self, word: str) -> Any:
        if word.startswith("(") and word.endswith(")"):
            return self._pipeline(word[1:-1])
        literal = _literal(word)
        if literal is not _NOTHING:
            return literal
        if word.startswith("$"):
            word = word[1:] or "."
            if word != "." and not word.startswith("."):
                raise TemplateError(f"variable ${word} is not evaluated by kaffinity")
        if word.startswith("."):
            return self._field(word)
        raise TemplateError(f"{word} is not evaluated by kaffinity")

    def _field(self, word: str) -> Any:
        value: Any = self.params
        for name in (part for part in word.split(".") if part):
            if not isinstance(value, Mapping):
                raise TemplateError(f"cannot read field {name} of {_go_text(value)}")
            if name not in value:
                if self.missing_error:
                    raise TemplateError(f'map has no entry for key "{name}"')
                return None
            value = value[name]
        return value

    def _call(self, name: str, args: list[Any]) -> Any:
        function = _FUNCTIONS.get(name)
        if function is None:
            raise TemplateError(f'function "{name}" is not evaluated by kaffinity')
        try:
            return function(*args)
        except TemplateError:
            raise
        except Exception as error:  # noqa: BLE001 - any failure of a function is the template's
            raise TemplateError(f"{name}: {error}") from None


_NOTHING = object()


def _literal(word: str) -> Any:
    """A string, number, boolean or nil constant, or ``_NOTHING``."""
    if word.startswith('"'):
        return _go_string(word)
    if word.startswith("`") and word.endswith("`"):
        return word[1:-1]
    if word in ("true", "false"):
        return word == "true"
    if word == "nil":
        return None
    if re.fullmatch(r"-?\d+", word):
        return int(word)
    if re.fullmatch(r"-?\d+\.\d*", word):
        return float(word)
    return _NOTHING


def _split_pipes(text: str) -> list[str]:
    parts, depth, quote, current = [], 0, "", []
    for char in text:
        if quote:
            current.append(char)
            if char == quote:
                quote = ""
            continue
        if char in '"`':
            quote = char
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "|" and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    parts.append("".join(current).strip())
    return parts


def _words(text: str) -> list[str]:
    words: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char.isspace():
            index += 1
            continue
        start = index
        if char in '"`':
            index += 1
            while index < len(text) and text[index] != char:
                index += 2 if text[index] == "\\" and char == '"' else 1
            index += 1
        elif char == "(":
            depth = 0
            while index < len(text):
                if text[index] == "(":
                    depth += 1
                elif text[index] == ")":
                    depth -= 1
                    if depth == 0:
                        break
                index += 1
            index += 1
        else:
            while index < len(text) and not text[index].isspace():
                index += 1
        words.append(text[start:index])
    return words


def _is_function(word: str) -> bool:
    return re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", word) is not None and word not in ("true", "false", "nil")


def _go_string(word: str) -> str:
    import json

    try:
        value = json.loads(word)
    except ValueError:
        raise TemplateError(f"bad string {word}") from None
    return str(value)


def _truth(value: Any) -> bool:
    if value is None or value is _NOTHING or (isinstance(value, (str, list, dict)) and not value):
        return False
    return value is not False and value != 0


def _go_text(value: Any) -> str:
    """How Go's fmt prints a value in a template: ``<no value>`` for a missing key."""
    if value is None:
        return "<no value>"
    return _text(value)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):
        return "[" + " ".join(_text(item) for item in value) + "]"
    if isinstance(value, Mapping):
        return "map[" + " ".join(f"{key}:{_text(item)}" for key, item in sorted(value.items())) + "]"
    return "" if value is None else str(value)


def _index(value: Any, *keys: Any) -> Any:
    for key in keys:
        if isinstance(value, Mapping):
            value = value.get(key)
        elif isinstance(value, list) and isinstance(key, int):
            if not 0 <= key < len(value):
                raise TemplateError(f"index out of range: {key}")
            value = value[key]
        else:
            raise TemplateError(f"cannot index {_go_text(value)} with {key}")
    return value


def _default(fallback: Any, value: Any = None) -> Any:
    # sprig's default: the given value unless empty.
    return value if _truth(value) else fallback


def _to_yaml(value: Any) -> str:
    import json

    from ruamel.yaml import YAML

    yaml = YAML()
    yaml.default_flow_style = False
    import io

    stream = io.StringIO()
    yaml.dump(json.loads(json.dumps(value)), stream)
    return stream.getvalue().rstrip("\n")


def _printf(form: str, *args: Any) -> str:
    converted = re.sub(r"%v|%s|%d", "%s", form)
    return converted % tuple(_text(arg) for arg in args)


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "index": _index,
    "default": _default,
    "normalize": lambda text: sanitize_name(_text(text)),
    "lower": lambda text: _text(text).lower(),
    "upper": lambda text: _text(text).upper(),
    "title": lambda text: _text(text).title(),
    "trim": lambda text: _text(text).strip(),
    "trimPrefix": lambda prefix, text: _text(text).removeprefix(prefix),
    "trimSuffix": lambda suffix, text: _text(text).removesuffix(suffix),
    "trimAll": lambda chars, text: _text(text).strip(chars),
    "replace": lambda old, new, text: _text(text).replace(old, new),
    "trunc": lambda count, text: _text(text)[:count] if count >= 0 else _text(text)[count:],
    "quote": lambda *items: " ".join(f'"{_text(item)}"' for item in items),
    "squote": lambda *items: " ".join(f"'{_text(item)}'" for item in items),
    "toString": _text,
    "printf": _printf,
    "print": lambda *items: "".join(_text(item) for item in items),
    "base": lambda text: _text(text).rstrip("/").rsplit("/", 1)[-1],
    "dir": lambda text: _text(text).rstrip("/").rsplit("/", 1)[0] if "/" in _text(text) else ".",
    "join": lambda separator, items: separator.join(_text(item) for item in items),
    "splitList": lambda separator, text: _text(text).split(separator),
    "first": lambda items: items[0] if items else None,
    "last": lambda items: items[-1] if items else None,
    "list": lambda *items: list(items),
    "eq": lambda a, *others: any(a == other for other in others),
    "ne": lambda a, b: a != b,
    "not": lambda value: not _truth(value),
    "and": lambda *values: next((value for value in values if not _truth(value)), values[-1]),
    "or": lambda *values: next((value for value in values if _truth(value)), values[-1]),
    "empty": lambda value: not _truth(value),
    "hasPrefix": lambda prefix, text: _text(text).startswith(prefix),
    "hasSuffix": lambda suffix, text: _text(text).endswith(suffix),
    "contains": lambda part, text: part in _text(text),
    "kebabcase": lambda text: re.sub(r"(?<!^)(?=[A-Z])", "-", _text(text)).replace("_", "-").lower(),
    "snakecase": lambda text: re.sub(r"(?<!^)(?=[A-Z])", "_", _text(text)).replace("-", "_").lower(),
    "toYaml": _to_yaml,
}
