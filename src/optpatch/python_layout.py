"""Where black and ruff break the lines of one Python statement.

optpatch's edits lengthen or shorten a statement that the project's
formatter laid out. So that the patched file still passes that formatter's
check, `layout_statement` lays the edited statement out again the way black
(and ruff, which follows black's style) would: a statement that fits stays
on one line; otherwise it is split at its last bracket pair (`right-hand
split`), the contents of a bracket that still do not fit, or that end in a
magic trailing comma, go one element per line with a trailing comma
(`delimiter split`), and the optional parentheses of an assignment's or a
`return`'s value appear only when splitting inside the value does not help.

This is the line-splitting half of black's algorithm (black/linegen.py,
black/lines.py, black/brackets.py; written from its documented behaviour
and checked against the real formatters in tests/python/test_python_layout.py),
restricted to what one edited statement needs: an expression statement, an
assignment (plain, chained, augmented, annotated), `return` or `raise`.
Spacing between tokens that shared a line is kept as written (the file was
formatted), so only the breaks are decided here.

A statement outside that subset is refused (`None`): a compound statement's
header, a lambda, `yield`, `:=`, a string spanning lines, a backslash, a
comment on a line of its own inside brackets, a type comment. So are the
cases where black's result depends on more than the statement (a trailing
comma after `*args`, which black adds only for targets it infers from the
whole file). The caller (python_edits.py) then keeps the layout as written.
"""

from __future__ import annotations

import enum
import io
import keyword
import tokenize
import unicodedata
from dataclasses import dataclass, field
from typing import Iterator

COMPREHENSION_PRIORITY = 20
COMMA_PRIORITY = 18
TERNARY_PRIORITY = 16
LOGIC_PRIORITY = 14
STRING_PRIORITY = 12
COMPARATOR_PRIORITY = 10
MATH_PRIORITIES = {"|": 9, "^": 8, "&": 7, "<<": 6, ">>": 6, "+": 5, "-": 5, "*": 4, "/": 4, "//": 4, "%": 4,
                   "@": 4, "**": 2}
DOT_PRIORITY = 1
SPLIT_AFTER = frozenset({COMMA_PRIORITY})
MIGRATE_COMMENTS = frozenset({STRING_PRIORITY, COMMA_PRIORITY})  # delimiters whose comments stay with their leaf

OPENING = {"(": ")", "[": "]", "{": "}"}
CLOSING = {")": "(", "]": "[", "}": "{"}
COMPARATORS = frozenset({"<", ">", "==", "!=", "<=", ">="})
ASSIGNMENTS = frozenset({"=", "+=", "-=", "*=", "@=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "**=", "//="})
OPERAND_KEYWORDS = frozenset({"None", "True", "False"})
UNSUPPORTED_NAMES = frozenset({"lambda", "yield", "async"})
STATEMENT_KEYWORDS = frozenset({"return", "raise"})


class Unsupported(Exception):
    """The statement is outside what this module reproduces faithfully."""


class CannotSplit(Exception):
    """One way of splitting a line does not apply (black's CannotTransform)."""


class Dialect(enum.Enum):
    """Whose choices to follow where black and ruff differ."""

    BLACK = "black"  # black's stable style since 23.1 (24 and later)
    BLACK_22 = "black-22"  # black before 23.1: no parentheses around conditional expressions, no preference
    # for splitting an assignment's right-hand side
    RUFF = "ruff"  # ruff format: black's style, but conditional expressions and tuples are laid out its own way


@dataclass(frozen=True)
class LayoutStyle:
    """What the layout depends on: the formatter, the limit, the magic trailing comma, the indent width."""

    dialect: Dialect
    line_length: int
    magic_trailing_comma: bool = True
    indent_width: int = 4
    # A trailing comma after `*args` / `**kwargs` when a call is exploded: ruff always writes one, black only
    # when it knows the target versions (configured, or inferred from the whole file); None: unknown.
    comma_after_star_args: bool | None = True


# -- leaves -------------------------------------------------------------------------------------------------


class Role:
    CALL = "call"  # `f(`: a call's parentheses
    SUBSCRIPT = "subscript"  # `x[`
    ATOM = "atom"  # a display or parenthesised expression: `(`, `[`, `{`
    INVISIBLE = "invisible"  # black's optional parentheses
    UNARY = "unary"  # `-x`, `*args`, `**kwargs`
    STAR_ARG = "star-arg"  # `*` / `**` directly in a call's arguments
    COMP_FOR = "comp-for"
    COMP_IN = "comp-in"
    COMP_IF = "comp-if"
    TERNARY = "ternary"  # `if` / `else` of `a if b else c`
    NOT_IN = "not-in"  # the `not` of `not in`
    AFTER_NOT = "after-not"  # the `in` of `not in`, the `not` of `is not`


class Leaf:
    """One token of the statement, with what the layout decides about it."""

    __slots__ = ("kind", "value", "bracket", "space", "role", "depth", "opening", "single")

    def __init__(self, kind: str, value: str, space: str, role: str = "", bracket: str = ""):
        self.kind = kind  # "name", "number", "string", "op"
        self.value = value  # "" for an invisible parenthesis
        self.bracket = bracket  # "(" ... "}" for brackets, visible or not
        self.space = space  # what precedes it when the leaf before it is on the same line
        self.role = role
        self.depth = 0  # set by marking a line
        self.opening: Leaf | None = None  # a closing bracket's partner, set by marking
        self.single = False  # an invisible closing parenthesis around one leaf (a comment after it stays on that leaf)

    @property
    def is_open(self) -> bool:
        return self.bracket in OPENING

    @property
    def is_close(self) -> bool:
        return self.bracket in CLOSING

    def copy(self) -> "Leaf":
        leaf = Leaf(self.kind, self.value, self.space, self.role, self.bracket)
        leaf.single = self.single
        return leaf

    def __repr__(self) -> str:
        return f"Leaf({self.value or self.bracket + '?'!r})"


# -- lines ---------------------------------------------------------------------------------------------------


@dataclass(eq=False)
class Line:
    style: LayoutStyle
    depth: int = 0
    leaves: list[Leaf] = field(default_factory=list)
    comments: dict[int, list[str]] = field(default_factory=dict)  # id(leaf) -> comments after it
    inside_brackets: bool = False
    should_split_rhs: bool = False
    magic_trailing_comma: Leaf | None = None
    tracker: "Tracker" = field(default_factory=lambda: Tracker())

    def append(self, leaf: Leaf, mark: bool) -> None:
        if mark or self.inside_brackets:
            self.tracker.mark(leaf)
            if self.has_magic_trailing_comma(leaf):
                if self.style.magic_trailing_comma:
                    self.magic_trailing_comma = leaf
                else:
                    self.remove_trailing_comma()
        self.leaves.append(leaf)

    def append_comment(self, comment: str) -> None:
        if not self.leaves:
            raise Unsupported("a comment alone on a line")
        last = self.leaves[-1]
        if last.bracket == ")" and not last.value and last.single:
            if len(self.leaves) < 2:
                raise Unsupported("a comment alone on a line")
            last = self.leaves[-2]
        self.comments.setdefault(id(last), []).append(comment)

    def comments_after(self, leaf: Leaf) -> list[str]:
        return self.comments.get(id(leaf), [])

    def has_magic_trailing_comma(self, closing: Leaf) -> bool:
        if not (closing.is_close and self.leaves and self.leaves[-1].value == ","):
            return False
        if closing.bracket == "}":
            return True
        if closing.bracket == "]":
            return not (closing.role == Role.SUBSCRIPT and one_sequence_between(closing.opening, closing, self.leaves))
        return not one_sequence_between(closing.opening, closing, self.leaves)

    def remove_trailing_comma(self) -> None:
        comma = self.leaves.pop()
        moved = self.comments.pop(id(comma), [])
        if moved:
            self.comments.setdefault(id(self.leaves[-1]), []).extend(moved)

    @property
    def is_chained_assignment(self) -> bool:
        return sum(1 for leaf in self.leaves if leaf.value == "=") > 1

    def __bool__(self) -> bool:
        return bool(self.leaves or self.comments)

    def render(self) -> str:
        text = " " * (self.style.indent_width * self.depth)
        for index, leaf in enumerate(self.leaves):
            text += (leaf.space if index else "") + leaf.value
        for comments in self.comments.values():
            for comment in comments:
                text += "  " + comment
        return text

    def lengths(self, reverse: bool = False) -> Iterator[tuple[int, Leaf, int]]:
        """Each leaf with the characters it takes, its comments' included (black's `enumerate_with_length`)."""
        indices = range(len(self.leaves) - 1, -1, -1) if reverse else range(len(self.leaves))
        for index in indices:
            leaf = self.leaves[index]
            length = len(leaf.space if index else "") + len(leaf.value)
            for comment in self.comments_after(leaf):
                length += len(comment)
            yield index, leaf, length


def one_sequence_between(opening: Leaf | None, closing: Leaf, leaves: list[Leaf]) -> bool:
    """Whether the brackets hold one element and a trailing comma (a one-tuple, `x[a,]`), not a magic comma."""
    if opening is None or (opening.bracket, closing.bracket) not in (("(", ")"), ("[", "]")):
        return False
    depth = closing.depth + 1
    try:
        start = next(i for i, leaf in enumerate(leaves) if leaf is opening)
    except StopIteration:
        raise Unsupported("an opening bracket outside the line") from None
    commas = 0
    for leaf in leaves[start + 1 :]:
        if leaf is closing:
            break
        if leaf.depth == depth and leaf.value == ",":
            commas += 1
            if opening.role == Role.CALL:  # a call's arguments: never a one-tuple
                commas += 1
                break
    return commas < 2


class Tracker:
    """Bracket depths and split points of one line (black's BracketTracker)."""

    def __init__(self) -> None:
        self.depth = 0
        self.open: list[Leaf] = []
        self.delimiters: dict[int, int] = {}
        self.previous: Leaf | None = None
        self.invisible: list[Leaf] = []
        self._for_depths: list[int] = []

    def mark(self, leaf: Leaf) -> None:
        if self.depth == 0 and leaf.is_close and not self.open:
            return
        if self._for_depths and self._for_depths[-1] == self.depth and leaf.role == Role.COMP_IN:
            self.depth -= 1
            self._for_depths.pop()
        if leaf.is_close:
            self.depth -= 1
            leaf.opening = self.open.pop()
            if not leaf.value:
                self.invisible.append(leaf)
        leaf.depth = self.depth
        if self.depth == 0:
            priority = split_before_priority(leaf, self.previous)
            if priority and self.previous is not None:
                self.delimiters[id(self.previous)] = priority
            elif leaf.value == ",":
                self.delimiters[id(leaf)] = COMMA_PRIORITY
        if leaf.is_open:
            self.open.append(leaf)
            self.depth += 1
            if not leaf.value:
                self.invisible.append(leaf)
        self.previous = leaf
        if leaf.role == Role.COMP_FOR:
            self.depth += 1
            self._for_depths.append(self.depth)

    def max_priority(self, exclude: Leaf | None = None) -> int:
        values = [p for key, p in self.delimiters.items() if exclude is None or key != id(exclude)]
        if not values:
            raise CannotSplit("no delimiters")
        return max(values)

    def count(self, priority: int) -> int:
        return sum(1 for p in self.delimiters.values() if p == priority)


def split_before_priority(leaf: Leaf, previous: Leaf | None) -> int:
    """The priority of breaking the line just before `leaf` (black's is_split_before_delimiter)."""
    if leaf.role in (Role.UNARY, Role.STAR_ARG):
        return 0
    if leaf.value == "." and (previous is None or previous.is_close):
        return DOT_PRIORITY
    if leaf.kind == "op" and leaf.value in MATH_PRIORITIES:
        return MATH_PRIORITIES[leaf.value]
    if leaf.value in COMPARATORS:
        return COMPARATOR_PRIORITY
    if leaf.kind == "string" and previous is not None and previous.kind == "string":
        return STRING_PRIORITY
    if leaf.kind != "name":
        return 0
    if leaf.role in (Role.COMP_FOR, Role.COMP_IF):
        return COMPREHENSION_PRIORITY
    if leaf.role == Role.TERNARY:
        return TERNARY_PRIORITY
    if leaf.value == "is" or (leaf.value == "in" and leaf.role == "") or leaf.role == Role.NOT_IN:
        return COMPARATOR_PRIORITY
    if leaf.value in ("and", "or"):
        return LOGIC_PRIORITY
    return 0


def width(text: str) -> int:
    """Columns on screen, as the formatters count them (East Asian wide characters take two)."""
    if text.isascii():
        return len(text)
    return sum(0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


# -- reading the statement ------------------------------------------------------------------------------------


@dataclass
class _Statement:
    leaves: list[Leaf]
    comments: dict[int, list[str]]  # index of the real leaf a trailing comment follows -> comments
    comment_in_brackets: bool  # ruff keeps a bracket with a comment inside expanded, where black may join it


def _read(text: str) -> _Statement:
    """The statement's tokens as leaves, with black's roles, and its trailing comments."""
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(text).readline)]
    except (tokenize.TokenError, SyntaxError, IndentationError) as error:
        raise Unsupported(f"does not tokenize: {error}") from None
    leaves: list[Leaf] = []
    comments: dict[int, list[str]] = {}
    stack: list[dict] = [{"for": 0, "seen_for": False, "opening": None}]
    previous_end: tuple[int, int] | None = None
    comment_in_brackets = False
    lines = text.splitlines() or [""]
    for index, token in enumerate(tokens):
        kind = token.type
        if kind in (tokenize.NL, tokenize.NEWLINE, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT):
            continue
        if kind == tokenize.COMMENT:
            if previous_end is None or previous_end[0] != token.start[0]:
                raise Unsupported("a comment on a line of its own")
            if token.string.lstrip("#").lstrip().startswith("type:"):
                raise Unsupported("a type comment")
            comments.setdefault(len(leaves) - 1, []).append(token.string.rstrip())
            comment_in_brackets = comment_in_brackets or len(stack) > 1
            continue
        if kind == tokenize.ERRORTOKEN:
            raise Unsupported("an error token")
        if kind == tokenize.STRING and "\n" in token.string:
            raise Unsupported("a string over several lines")
        if previous_end is None:
            space = ""
        elif previous_end[0] == token.start[0]:
            space = lines[token.start[0] - 1][previous_end[1] : token.start[1]]
            if space.strip():
                raise Unsupported("text between tokens")
        elif len(stack) == 1:
            raise Unsupported("a backslash continuation")
        else:
            space = None  # a line break inside brackets: decided by `_joined_space` below
        previous = leaves[-1] if leaves else None
        value = token.string
        leaf = Leaf({tokenize.NAME: "name", tokenize.NUMBER: "number", tokenize.STRING: "string"}.get(kind, "op"),
                    value, "" if space is None else space)
        context = stack[-1]
        if kind == tokenize.NAME:
            if value in UNSUPPORTED_NAMES:
                raise Unsupported(f"`{value}`")
            if value == "for":
                leaf.role = Role.COMP_FOR
                context["for"] += 1
                context["seen_for"] = True
            elif value == "in" and context["for"]:
                leaf.role = Role.COMP_IN
                context["for"] -= 1
            elif value == "in" and previous is not None and previous.value == "not":
                leaf.role = Role.AFTER_NOT
            elif value == "not" and _next_value(tokens, index) == "in":
                leaf.role = Role.AFTER_NOT if previous is not None and previous.value == "is" else Role.NOT_IN
            elif value == "not" and previous is not None and previous.value == "is":
                leaf.role = Role.AFTER_NOT
            elif value == "if":
                leaf.role = Role.COMP_IF if context["seen_for"] else Role.TERNARY
            elif value == "else":
                leaf.role = Role.TERNARY
        elif kind == tokenize.OP:
            if value == ":=":
                raise Unsupported("an assignment expression")
            if value == ";":
                raise Unsupported("several statements on a line")
            if value in OPENING:
                leaf.bracket = value
                leaf.role = (Role.SUBSCRIPT if value == "[" else Role.CALL) if _ends_operand(previous) and value != "{" else Role.ATOM
                stack.append({"for": 0, "seen_for": False, "opening": leaf})
            elif value in CLOSING:
                if len(stack) == 1:
                    raise Unsupported("an unmatched bracket")
                opening = stack.pop()["opening"]
                leaf.bracket = value
                leaf.role = opening.role
            elif value in ("-", "+", "~", "*", "**") and not _ends_operand(previous):
                call = context["opening"]
                in_arguments = call is not None and call.role == Role.CALL and previous is not None and previous.value in "(,"
                leaf.role = Role.STAR_ARG if value in ("*", "**") and in_arguments else Role.UNARY
        if space is None:
            leaf.space = _joined_space(previous, leaf)
        leaves.append(leaf)
        previous_end = token.end
    if len(stack) != 1:
        raise Unsupported("unbalanced brackets")
    if not leaves:
        raise Unsupported("no tokens")
    return _Statement(leaves, comments, comment_in_brackets)


def _next_value(tokens, index: int) -> str | None:
    for token in tokens[index + 1 :]:
        if token.type not in (tokenize.NL, tokenize.COMMENT):
            return token.string
    return None


def _ends_operand(leaf: Leaf | None) -> bool:
    """Whether an operator after `leaf` is binary, and a bracket after it a call or subscript."""
    if leaf is None:
        return False
    if leaf.kind == "name":
        return not keyword.iskeyword(leaf.value) or leaf.value in OPERAND_KEYWORDS
    return leaf.kind in ("number", "string") or leaf.is_close


def _joined_space(previous: Leaf | None, leaf: Leaf) -> str:
    """The space between two tokens that the formatter had put on separate lines, once they share one.

    The formatters break only after an opening bracket, before a closing
    one, after a comma, and before an operator, a dot or a keyword operator;
    that is all this needs to know.
    """
    if previous is None or previous.is_open or leaf.is_close or leaf.value in (",", ".") or previous.value == ".":
        return ""
    return " "


def _with_optional_parentheses(statement: _Statement, dialect: Dialect) -> list[Leaf]:
    """Black's invisible parentheses: around an assignment's value, a `return`'s, and a conditional expression.

    Redundant visible parentheses around a whole value become invisible, as
    black makes them: they come back only where the layout needs them.
    Comments move onto the last parenthesis inserted after their leaf.
    """
    leaves = statement.leaves
    wraps: list[tuple[int, int]] = []  # (first, last) real leaf indices to put in invisible parentheses
    depths = _depths(leaves)
    top = [i for i, leaf in enumerate(leaves) if depths[i] == 0]
    assignments = [i for i in top if leaves[i].value in ASSIGNMENTS]
    if leaves[0].value in STATEMENT_KEYWORDS:
        if leaves[0].value == "return" and len(leaves) > 1:
            wraps.append((1, len(leaves) - 1))
    elif assignments:
        first_target_end = assignments[0] - 1
        annotation = next((i for i in top if leaves[i].value == ":" and i < assignments[0]), None)
        if any(leaves[i].value == "," for i in top if i <= first_target_end) and annotation is None:
            if leaves[first_target_end].value == ",":
                raise Unsupported("a one-tuple target")
            wraps.append((0, first_target_end))
        if annotation is not None and dialect is not Dialect.BLACK_22:
            wraps.append((annotation + 1, assignments[0] - 1))  # black 24 parenthesises long annotations too
        bounds = assignments + [len(leaves)]
        for start, end in zip(bounds, bounds[1:]):
            if start + 1 <= end - 1:
                wraps.append((start + 1, end - 1))
    elif leaves[0].kind == "name" and keyword.iskeyword(leaves[0].value) and leaves[0].value not in OPERAND_KEYWORDS | {"not"}:
        raise Unsupported(f"a `{leaves[0].value}` statement")
    elif any(leaves[i].kind == "op" and leaves[i].value in MATH_PRIORITIES and leaves[i].role == "" for i in top):
        raise Unsupported("an arithmetic expression statement")
    made_invisible: dict[int, int] = {}  # first -> last of visible parentheses that become invisible
    values: list[tuple[int, int]] = []
    inserted: list[tuple[int, int]] = []
    for first, last in wraps:
        if leaves[first].bracket == "(" and _matching(leaves, depths, first) == last:
            if not _parentheses_stay(leaves, depths, first, last):
                if leaves[first + 1].bracket == "(" and _matching(leaves, depths, first + 1) == last - 1:
                    raise Unsupported("nested redundant parentheses")
                made_invisible[first] = last
            values.append((first, last))
            continue
        if first == last and leaves[first].kind == "string" and _is_triple_quoted(leaves[first].value):
            continue
        if leaves[last].value == "," and not any(
            leaves[i].value == "," for i in range(first, last) if depths[i] == depths[first]
        ):
            raise Unsupported("a one-tuple value")
        values.append((first, last))
        inserted.append((first, last))
    conditionals = _conditional_expressions(leaves, depths, values)
    if dialect is Dialect.BLACK:
        inserted += conditionals
    elif sum(1 for leaf in leaves if leaf.role == Role.TERNARY and leaf.value == "if") > 1:
        raise Unsupported("ruff lays out nested conditional expressions its own way")
    for first, last in made_invisible.items():
        leaves[first].value = leaves[last].value = ""
        leaves[last].single = last == first + 2
    opens: dict[int, int] = {}
    closes: dict[int, list[int]] = {}
    for first, last in inserted:
        opens[first] = opens.get(first, 0) + 1
        closes.setdefault(last, []).append(first)
    result: list[Leaf] = []
    comment_target: dict[int, Leaf] = {}
    for index, leaf in enumerate(leaves):
        for _ in range(opens.get(index, 0)):
            result.append(Leaf("op", "", leaf.space, Role.INVISIBLE, "("))
            leaf.space = ""
        result.append(leaf)
        comment_target[index] = leaf
        for first in sorted(closes.get(index, ()), reverse=True):
            parenthesis = Leaf("op", "", "", Role.INVISIBLE, ")")
            parenthesis.single = first == index
            result.append(parenthesis)
            comment_target[index] = parenthesis
    statement.comments = {id(comment_target[index]): comments for index, comments in statement.comments.items()}
    return result


def _is_triple_quoted(text: str) -> bool:
    return text.lstrip("rRbBuUfF").startswith(('"""', "'''"))


def _depths(leaves: list[Leaf]) -> list[int]:
    depths, depth = [], 0
    for leaf in leaves:
        if leaf.is_close:
            depth -= 1
        depths.append(depth)
        if leaf.is_open:
            depth += 1
    return depths


def _matching(leaves: list[Leaf], depths: list[int], first: int) -> int:
    for index in range(first + 1, len(leaves)):
        if leaves[index].is_close and depths[index] == depths[first]:
            return index
    raise Unsupported("an unmatched bracket")


def _parentheses_stay(leaves: list[Leaf], depths: list[int], first: int, last: int) -> bool:
    """Parentheses black keeps visible around a whole value: `()`, a tuple, a generator (black's atom rules)."""
    if last == first + 1:
        return True
    inner = depths[first] + 1
    return any(leaves[i].value == "," or leaves[i].role == Role.COMP_FOR for i in range(first + 1, last) if depths[i] == inner)


def _conditional_expressions(leaves: list[Leaf], depths: list[int], values: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The conditional expressions black puts in invisible parentheses: all but a value's or a bracket's whole content."""
    found = []
    for index, leaf in enumerate(leaves):
        if leaf.role != Role.TERNARY or leaf.value != "if":
            continue
        depth = depths[index]
        start = index
        while start > 0 and depths[start - 1] >= depth and not (
            depths[start - 1] == depth and _outside_conditional(leaves[start - 1], left=True)
        ):
            start -= 1
        end = index
        while end + 1 < len(leaves) and depths[end + 1] >= depth and not (
            depths[end + 1] == depth and _outside_conditional(leaves[end + 1], left=False)
        ):
            end += 1
        before = leaves[start - 1] if start > 0 else None
        after = leaves[end + 1] if end + 1 < len(leaves) else None
        whole_content = before is not None and before.bracket == "(" and after is not None and after.is_close
        if (start, end) in values or whole_content:
            continue  # black's `already parenthesized`
        found.append((start, end))
    return found


def _outside_conditional(leaf: Leaf, left: bool) -> bool:
    """Whether `leaf`, at the depth of a conditional expression, bounds it (on its left or on its right)."""
    if leaf.value in ASSIGNMENTS or leaf.value in (",", ":") or leaf.role in (Role.COMP_FOR, Role.COMP_IF, Role.STAR_ARG):
        return True
    if left:
        return (leaf.role in (Role.TERNARY, Role.COMP_IN) and leaf.value != "if") or leaf.value in STATEMENT_KEYWORDS
    return False


# -- the layout ----------------------------------------------------------------------------------------------


def layout_statement(text: str, depth: int, style: LayoutStyle) -> str:
    """The statement laid out as the formatter would: its lines, the first without indentation.

    `text` runs from the statement's first token to the end of its last
    line (a trailing comment included); `depth` is its indentation in
    levels. Raises `Unsupported` for statements this module does not
    reproduce.
    """
    statement = _read(text)
    if statement.comment_in_brackets and style.dialect is Dialect.RUFF:
        raise Unsupported("ruff keeps brackets holding a comment expanded, where black may join them")
    leaves = _with_optional_parentheses(statement, style.dialect)
    line = Line(style, depth)
    for leaf in leaves:
        line.append(leaf, mark=True)
        for comment in statement.comments.get(id(leaf), ()):
            line.append_comment(comment)
    lines = _Layout(style).transform(line)
    rendered = [each.render() for each in lines]
    if style.dialect is Dialect.RUFF and any(width(text) > style.line_length for text in rendered):
        raise Unsupported("ruff's choices for a line that cannot fit differ from black's")
    rendered[0] = rendered[0][style.indent_width * depth :]
    return "\n".join(rendered)


class _Layout:
    """black's `transform_line` and its right-hand and delimiter splits, for one style."""

    def __init__(self, style: LayoutStyle):
        self.style = style

    def fits(self, line: Line, text: str | None = None) -> bool:
        return width(line.render() if text is None else text) <= self.style.line_length

    def transform(self, line: Line, force_parens: bool = False) -> list[Line]:
        text = line.render()
        if not line.should_split_rhs and not line.magic_trailing_comma and self.fits(line, text):
            return [line]
        transforms = [self.delimiter_split, self.rhs] if line.inside_brackets else [self.rhs]
        for transform in transforms:
            try:
                return self.run(line, transform, text, force_parens)
            except CannotSplit:
                continue
        return [line]

    def run(self, line: Line, transform, text: str, force_parens: bool) -> list[Line]:
        result: list[Line] = []
        for piece in transform(line, force_parens):
            if piece.render() == text:
                raise CannotSplit("the split changed nothing")
            result.extend(self.transform(piece, force_parens))
        if (force_parens or transform != self.rhs or not line.tracker.invisible
                or any(bracket.value for bracket in line.tracker.invisible) or self.fits(result[0])):
            return result
        copy = _copied(line)
        second = self.run(copy, transform, text, True)
        if all(self.fits(each) for each in second):
            return second
        return result

    # -- right-hand split ----------------------------------------------------------------------------------

    def rhs(self, line: Line, force_parens: bool) -> list[Line]:
        for omit in self.trailers_to_omit(line):
            lines = self.right_hand_split(line, force_parens, omit)
            if self.fits(lines[0]):
                return lines
        return self.right_hand_split(line, force_parens, frozenset())

    def right_hand_split(self, line: Line, force_parens: bool, omit: frozenset[int]) -> list[Line]:
        return list(self._maybe_omit_optional_parens(self._first_rhs(line, omit), line, force_parens, omit))

    def _first_rhs(self, line: Line, omit: frozenset[int]) -> "_Split":
        tail: list[Leaf] = []
        body: list[Leaf] = []
        head: list[Leaf] = []
        current = tail
        opening = closing = None
        for leaf in reversed(line.leaves):
            if current is body and leaf is opening:
                current = head if body else tail
            current.append(leaf)
            if current is tail and leaf.is_close and id(leaf) not in omit:
                opening, closing = leaf.opening, leaf
                current = body
        if opening is None or closing is None or not head:
            raise CannotSplit("no brackets found")
        tail.reverse()
        body.reverse()
        head.reverse()
        split = _Split(self._build(head, line, "head"), self._build(body, line, "body", opening),
                       self._build(tail, line, "tail"), opening, closing)
        tail_length = len(split.tail.render().strip())
        if not split.body:
            if tail_length == 0:
                raise CannotSplit("the split produced the same line")
            if tail_length < 3:
                raise CannotSplit("an empty body is not worth a split")
        return split

    def _build(self, leaves: list[Leaf], original: Line, component: str, opening: Leaf | None = None) -> Line:
        result = Line(self.style, original.depth)
        tracked: set[int] = set()
        if component == "body":
            result.inside_brackets = True
            result.depth += 1
        elif component == "head":
            tracked = _inside_matching_brackets(leaves)
        for leaf in leaves:
            result.append(leaf, mark=id(leaf) in tracked)
            for comment in original.comments_after(leaf):
                result.append_comment(comment)
        if component == "body" and opening is not None and _should_split(result, opening):
            result.should_split_rhs = True
        return result

    def _maybe_omit_optional_parens(self, split: "_Split", line: Line, force_parens: bool, omit: frozenset[int]):
        if (not force_parens and split.opening.bracket == "(" and not split.opening.value
                and split.closing.bracket == ")" and not split.closing.value
                and self._can_omit_invisible_parens(split)):
            omit = omit | {id(split.closing)}
            try:
                without = self._first_rhs(line, omit)
                head = split.head.leaves
                right_after_equal = len(head) >= 2 and head[-2].value == "="
                head_has_brackets = any(leaf.bracket for leaf in head[:-1])
                head_short = width(split.head.render()) <= self.style.line_length - 1
                head_not_exploding = split.head.magic_trailing_comma is None
                if self.style.dialect is Dialect.BLACK_22 \
                        or not (right_after_equal and head_has_brackets and head_short and head_not_exploding) \
                        or self._prefer_without_parens(without, split):
                    return list(self._maybe_omit_optional_parens(without, line, force_parens, omit))
            except CannotSplit as error:
                if line.is_chained_assignment:
                    pass
                elif not _can_be_split(split.body) and not self.fits(split.body):
                    raise CannotSplit("the body is too long and cannot be split") from error
        if split.opening.bracket == "(":
            split.opening.value = "("
        if split.closing.bracket == ")":
            split.closing.value = ")"
        return [part for part in (split.head, split.body, split.tail) if part]

    def _prefer_without_parens(self, without: "_Split", split: "_Split") -> bool:
        equals = [leaf.value for leaf in split.head.leaves].count("=")
        equals_without = [leaf.value for leaf in without.head.leaves].count("=")
        if equals > 1 and equals > equals_without:
            return False
        closing_after_assign = False
        for leaf in reversed(without.head.leaves):
            if leaf.value == "=":
                break
            if leaf.is_close:
                closing_after_assign = True
                break
        return closing_after_assign or (
            any(leaf.value == "=" for leaf in without.head.leaves) and self.fits(without.head)
        )

    def _can_omit_invisible_parens(self, split: "_Split") -> bool:
        line = split.body
        tracker = line.tracker
        if not tracker.delimiters:
            return True
        priority = tracker.max_priority()
        if tracker.count(priority) > 1:
            return False
        if priority == COMMA_PRIORITY and self.style.dialect is Dialect.RUFF:
            raise Unsupported("ruff chooses between a tuple's parentheses and its last element's its own way")
        if priority == DOT_PRIORITY:
            return True
        if len(line.leaves) < 2:
            raise Unsupported("a stranded delimiter")
        first, second = line.leaves[0], line.leaves[1]
        if first.is_open and not second.is_close and self._can_omit_opening_paren(line, first):
            return True
        penultimate, last = line.leaves[-2], line.leaves[-1]
        if last.bracket == ")" or last.bracket == "}" or (last.bracket == "]" and last.role != Role.SUBSCRIPT):
            if penultimate.is_open:
                return False
            if self._can_omit_closing_paren(line, last):
                return True
        return False

    def _can_omit_opening_paren(self, line: Line, first: Leaf) -> bool:
        remainder = False
        length = self.style.indent_width * line.depth
        index = -1
        for index, leaf, leaf_length in line.lengths():
            if leaf.is_close and leaf.opening is first:
                remainder = True
            if remainder:
                length += leaf_length
                if length > self.style.line_length:
                    return False
                if leaf.is_open:
                    remainder = False
        return len(line.leaves) == index + 1

    def _can_omit_closing_paren(self, line: Line, last: Leaf) -> bool:
        length = self.style.indent_width * line.depth
        seen_other_brackets = False
        for _, leaf, leaf_length in line.lengths():
            length += leaf_length
            if leaf is last.opening:
                if seen_other_brackets or length <= self.style.line_length:
                    return True
            elif leaf.is_open:
                seen_other_brackets = True
        return False

    def trailers_to_omit(self, line: Line) -> Iterator[frozenset[int]]:
        """The sets of closing brackets to skip, growing from the right (black's generate_trailers_to_omit)."""
        omit: set[int] = set()
        if not line.magic_trailing_comma:
            yield frozenset(omit)
        length = self.style.indent_width * line.depth
        opening = closing = None
        inner: set[int] = set()
        for index, leaf, leaf_length in line.lengths(reverse=True):
            length += leaf_length
            if length > self.style.line_length:
                break
            if line.comments_after(leaf):
                break
            previous = line.leaves[index - 1] if index > 0 else None
            if opening is not None:
                if leaf is opening:
                    opening = None
                elif leaf.is_close:
                    if previous is not None and previous.value == "," and leaf.opening is not None \
                            and not one_sequence_between(leaf.opening, leaf, line.leaves):
                        break
                    inner.add(id(leaf))
            elif leaf.is_close:
                if previous is not None and previous.is_open:
                    inner.add(id(leaf))
                    continue
                if closing is not None:
                    omit.add(id(closing))
                    omit.update(inner)
                    inner.clear()
                    yield frozenset(omit)
                if previous is not None and previous.value == "," and leaf.opening is not None \
                        and not one_sequence_between(leaf.opening, leaf, line.leaves):
                    break
                if leaf.value:
                    opening, closing = leaf.opening, leaf

    # -- delimiter split -----------------------------------------------------------------------------------

    def delimiter_split(self, line: Line, force_parens: bool) -> list[Line]:
        if not line.leaves:
            raise CannotSplit("an empty line")
        last = line.leaves[-1]
        delimiters = line.tracker.delimiters
        priority = line.tracker.max_priority(exclude=last)
        if priority == DOT_PRIORITY and line.tracker.count(priority) == 1:
            raise CannotSplit("a single attribute access")
        result: list[Line] = []
        current = Line(self.style, line.depth, inside_brackets=line.inside_brackets)
        lowest = None
        comma_safe = True
        for index, leaf in enumerate(line.leaves):
            current.append(leaf, mark=True)
            previous_priority = delimiters.get(id(line.leaves[index - 1])) if index > 0 else None
            if previous_priority != priority or priority in MIGRATE_COMMENTS:
                for comment in line.comments_after(leaf):
                    current.append_comment(comment)
            lowest = leaf.depth if lowest is None else min(lowest, leaf.depth)
            if comma_safe and leaf.depth == lowest and leaf.role == Role.STAR_ARG:
                comma_safe = self._comma_after_star_args()
            if delimiters.get(id(leaf)) == priority:
                if index + 1 < len(line.leaves) and priority not in MIGRATE_COMMENTS:
                    for comment in line.comments_after(line.leaves[index + 1]):
                        current.append_comment(comment)
                result.append(current)
                current = Line(self.style, line.depth, inside_brackets=line.inside_brackets)
        if current:
            if comma_safe and priority == COMMA_PRIORITY and current.leaves[-1].value != ",":
                current.append(Leaf("op", ",", ""), mark=True)
            result.append(current)
        return result

    def _comma_after_star_args(self) -> bool:
        if self.style.comma_after_star_args is None:
            raise Unsupported("whether black writes a trailing comma after *args depends on the whole file")
        return self.style.comma_after_star_args


@dataclass
class _Split:
    head: Line
    body: Line
    tail: Line
    opening: Leaf
    closing: Leaf


def _inside_matching_brackets(leaves: list[Leaf]) -> set[int]:
    """The leaves inside bracket pairs that open and close within `leaves` (black's head tracking)."""
    start = next((i for i, leaf in enumerate(leaves) if leaf.is_open), None)
    if start is None:
        return set()
    stack: list[tuple[str, int]] = []
    found: set[int] = set()
    for index in range(start, len(leaves)):
        leaf = leaves[index]
        if leaf.is_open:
            stack.append((OPENING[leaf.bracket], index))
        if leaf.is_close:
            if stack and leaf.bracket == stack[-1][0]:
                _, begin = stack.pop()
                found.update(id(each) for each in leaves[begin : index + 1])
            else:
                break
    return found


def _should_split(line: Line, opening: Leaf) -> bool:
    """Whether a body goes one element per line at once: a magic trailing comma, or a collection's elements."""
    trailing_comma = bool(line.leaves) and line.leaves[-1].value == ","
    try:
        priority = line.tracker.max_priority(exclude=line.leaves[-1] if trailing_comma else None)
    except (CannotSplit, IndexError):
        return False
    collection = opening.role in (Role.ATOM, Role.INVISIBLE)
    return priority == COMMA_PRIORITY and ((line.style.magic_trailing_comma and trailing_comma) or collection)


def _can_be_split(line: Line) -> bool:
    """False when the line surely cannot be split (black's `can_be_split`)."""
    leaves = line.leaves
    if len(leaves) < 2:
        return False
    if leaves[0].kind == "string" and leaves[1].value == ".":
        calls = dots = 0
        following = leaves[-1]
        for leaf in leaves[-2::-1]:
            if leaf.is_open:
                if not following.is_close:
                    return False
                calls += 1
            elif leaf.value == ".":
                dots += 1
            elif leaf.kind == "name":
                if not (following.value == "." or following.is_open):
                    return False
            elif not leaf.is_close:
                return False
            if dots > 1 and calls > 1:
                return False
    return True


def _copied(line: Line) -> Line:
    """The line with fresh leaves, marked again (black's second opinion with forced optional parentheses)."""
    copy = Line(line.style, line.depth, inside_brackets=line.inside_brackets, should_split_rhs=line.should_split_rhs,
                magic_trailing_comma=line.magic_trailing_comma)
    for leaf in line.leaves:
        fresh = leaf.copy()
        copy.append(fresh, mark=True)
        for comment in line.comments_after(leaf):
            copy.append_comment(comment)
    return copy
