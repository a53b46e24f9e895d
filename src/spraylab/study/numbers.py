"""No typed-in results: the check every study template and its prose pass before anything runs.

A page's numbers must come from the store (runs, their scenarios, the claims' data). So, in a
template's literal text and in a study's prose fields (title, claim texts):

* a number is refused: a word that starts with a digit (``400 Gb/s``, ``1.2x``, ``(0 discards)``).
  Digits inside a name are words, not numbers (``RoCEv2``, ``Mixtral-8x7B``, ``top-2``, ``p99``),
  and a code span or block (a label ``dfs[B=64]/sr``, a file name, a command) is not prose;
* in template expressions, a numeric constant other than 0 and 1 is refused unless it is a
  keyword argument (``seed=2``, ``where={"run.seed": 2}``), a column's ``"digits"`` or an index: a threshold or a formula belongs in a
  claim or a registered metric, where it is data and named. A string constant with spaces is
  prose and follows the first rule.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from spraylab.model.scenario import ScenarioError

_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
_LIST_MARK = re.compile(r"^(\s*)\d+[.)](\s)", re.M)  # "1. " of a Markdown list is not a result
_WORD = re.compile(r"[A-Za-z0-9_.+\-/]*\d[A-Za-z0-9_.+\-/]*")


def typed_numbers(text: str) -> list[tuple[int, str]]:
    """(line, word) of every number typed into ``text`` outside code spans."""
    found = []
    stripped = _CODE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    stripped = _LIST_MARK.sub(r"\1-\2", stripped)
    for lineno, line in enumerate(stripped.split("\n"), 1):
        for match in _WORD.finditer(line):
            word = match.group(0).lstrip("+-./")
            if word and word[0].isdigit():
                found.append((lineno, match.group(0)))
    return found


def check_text(text: str, where: str, first_line: int = 1) -> list[str]:
    return [
        f"{where} line {first_line + line - 1}: {word!r}: a number typed into the prose; compute it "
        "({{ ... }} from the store, a claim, or a registered metric) or put a name in a code span"
        for line, word in typed_numbers(text)
    ]


def check_template(source: str, name: str) -> list[str]:
    """Problems of a Jinja2 template: typed numbers in its text and numeric constants in its
    expressions (see the module docstring)."""
    from jinja2 import Environment, nodes
    from jinja2.exceptions import TemplateSyntaxError

    try:
        tree = Environment().parse(source)
    except TemplateSyntaxError as exc:
        return [f"{name} line {exc.lineno}: template syntax: {exc.message}"]
    problems: list[str] = []

    def visit(node: Any, allowed: bool) -> None:
        if isinstance(node, nodes.TemplateData):
            problems.extend(check_text(node.data, name, node.lineno))
            return
        if isinstance(node, nodes.Const):
            value = node.value
            if (
                isinstance(value, (int, float))
                and not isinstance(value, bool)
                and value not in (0, 1)
                and not allowed
            ):
                problems.append(
                    f"{name} line {node.lineno}: {value!r}: a number in a template expression; put thresholds in a "
                    "claim and formulas in a registered metric (keyword arguments such as seed=2 are allowed)"
                )
            elif isinstance(value, str) and any(c.isspace() for c in value.strip()):
                # metric expressions and labels carry indices in brackets: cct_ps[0:moe:dispatch]
                problems.extend(check_text(re.sub(r"\[[^\]]*\]", "", value), name, node.lineno))
            return
        if isinstance(node, nodes.Pair) and isinstance(node.key, nodes.Const) and node.key.value == "digits":
            visit(node.value, True)  # {"metric": ..., "digits": 2} in a table's column list
            return
        if isinstance(node, nodes.Keyword):
            visit(node.value, True)
            return
        if isinstance(node, nodes.Getitem):
            visit(node.node, False)
            visit(node.arg, True)
            return
        # a keyword's selector literal (where={"run.seed": 2}, only=[1, 2]) keeps the allowance
        literal = isinstance(node, (nodes.Dict, nodes.List, nodes.Tuple, nodes.Pair))
        for child in node.iter_child_nodes():
            visit(child, allowed and literal)

    visit(tree, False)
    return problems


def check_study(study: Any) -> None:
    """Raise :class:`ScenarioError` (one line per problem) if the study's template or prose
    fields carry typed numbers."""
    problems = []
    template: Path = study.template
    problems += check_template(template.read_text(), str(template))
    problems += check_text(study.title, f"{study.source}: title")
    for claim in study.claims:
        problems += check_text(claim.text, f"{study.source}: claim {claim.id}: text")
        problems += check_text(claim.if_not_met, f"{study.source}: claim {claim.id}: if_not_met")
    if problems:
        raise ScenarioError(problems)
