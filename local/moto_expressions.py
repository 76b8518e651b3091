"""How the local stack's moto evaluates DynamoDB expressions: the same parsers and processors,
each expression parsed once per request and the update AST walked without per-node overhead.

An UpdateItem (the worker's claim and completion, every steering write) was the emulator's most
expensive request, about 7.6 ms in-process: moto's handler parses the update expression and the
condition to check the request, then its backend parses both again to apply it; and each of the
update validator's eight processors walks the AST calling `isinstance` against abstract classes
and rebuilding its processing map at every node. Here:

* an update expression is parsed once per text: moto's validator works on a deep copy of the AST;
* a condition's operator tree, which holds the request's values, is parsed once per request: the
  handler's parse is handed to the backend in the same thread, matched by the very expression,
  names and values objects the handler passed on (evaluating a tree changes nothing);
* `DepthFirstTraverser.traverse` and `Node.find_clauses` do what moto's do, visiting the same nodes
  in the same order and calling the same processors, with each node class's processor found once.

Written for moto 5.2.5 (`MOTO_VERSION`); `FINGERPRINTS` records the moto functions the patch
replaces or relies on, checked by tests/unit/test_motopatches.py.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

import moto.dynamodb.comparisons as moto_comparisons
import moto.dynamodb.models as moto_models
import moto.dynamodb.responses as moto_responses
from moto.dynamodb.comparisons import ConditionExpressionParser
from moto.dynamodb.parsing.ast_nodes import (  # type: ignore[attr-defined]
    DepthFirstTraverser,
    Expression,
    Node,
    UpdateExpressionFunction,
)
from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]
from moto.dynamodb.parsing.validators import Validator

MOTO_VERSION = "5.2.5"

_moto_traverse = DepthFirstTraverser.traverse
_moto_find_clauses = Node.find_clauses
_moto_make = UpdateExpressionParser.make
_moto_condition_parser = moto_comparisons.create_condition_expression_parser

# sha256 of the source of each moto function replaced, or whose behaviour the replacement
# reproduces or relies on: the traversal and its per-node steps, the clause search, the validator
# that copies the AST it rewrites, the parser entry points, and the handler and backend functions
# whose double parse is folded into one.
FINGERPRINTS: dict[str, tuple[Callable[..., Any], str]] = {
    "moto.dynamodb.parsing.ast_nodes.DepthFirstTraverser.traverse": (
        _moto_traverse,
        "c78f8583f1961be7000602ba3b9fcb6c8f4a03eb61c09de2fc0defa40157c72d",
    ),
    "moto.dynamodb.parsing.ast_nodes.DepthFirstTraverser.traverse_node_recursively": (
        DepthFirstTraverser.traverse_node_recursively,
        "d7f01d9b45cf9f64ac84751ec4c8cab3114e7c179350eb1b81ffe5f0a114aa78",
    ),
    "moto.dynamodb.parsing.ast_nodes.DepthFirstTraverser.process": (
        DepthFirstTraverser.process,
        "58328ec7c2f9b1f96244bf498dd0ca6d91e2fd83ea57a82f6190997b8d1f9d51",
    ),
    "moto.dynamodb.parsing.ast_nodes.DepthFirstTraverser.nodes_to_be_processed": (
        DepthFirstTraverser.nodes_to_be_processed,
        "1c2c84c8097e35172d289d2cc30029d2d1c518f7680232a3f3c9f09e56a5e9b0",
    ),
    "moto.dynamodb.parsing.ast_nodes.Node.find_clauses": (
        _moto_find_clauses,
        "b77be7ac447d7617ea68e818e2bceb652a8a14257001715c64b36b3244a04c55",
    ),
    "moto.dynamodb.parsing.validators.Validator.__init__": (
        Validator.__init__,
        "9489b532dd0fb359e273711c1a67971f1b73af47ddbaa91868e9cc42a26ddbb3",
    ),
    "moto.dynamodb.parsing.expressions.UpdateExpressionParser.make": (
        _moto_make,
        "2c00ed96d6e191f243b449166e75bfb38f307b2e19405bc0981847061e0dbee3",
    ),
    "moto.dynamodb.comparisons.create_condition_expression_parser": (
        _moto_condition_parser,
        "a667986752c086a5a6f0f24c794a591ea68e9b56785a706faa277d09b81161cd",
    ),
    "moto.dynamodb.comparisons.ConditionExpressionParser.parse": (
        ConditionExpressionParser.parse,
        "5c9b63c5f49ed5d5d644eb0ac7422fb3c2ac4bbd310374f4161686bc4e10c453",
    ),
    "moto.dynamodb.comparisons.get_filter_expression": (
        moto_comparisons.get_filter_expression,
        "0bb9e2d345c7f17fe70bed6b07659499eb35cf8f7421ddc3b82c036508ca83aa",
    ),
    "moto.dynamodb.responses.DynamoHandler.update_item": (
        moto_responses.DynamoHandler.update_item,
        "638893af1afd43d274f3788d61ac13b447729de915c6f5ad3bbf008b92dd8e80",
    ),
    "moto.dynamodb.responses.DynamoHandler.put_item": (
        moto_responses.DynamoHandler.put_item,
        "4c9efb73275195eccc6268d6c3952decc1b240da158661ad59421ccec55a74e0",
    ),
    "moto.dynamodb.responses.DynamoHandler.delete_item": (
        moto_responses.DynamoHandler.delete_item,
        "677cb014c5c455d9fa3088aa5213b34b514a9773156f62847f114159b9a75d05",
    ),
    "moto.dynamodb.models.DynamoDBBackend.update_item": (
        moto_models.DynamoDBBackend.update_item,
        "218984588dd689a5de81678ce11e6a40d05c91e7b6c21b44c4ed4122fe74aa9f",
    ),
}


def _traverse(self: DepthFirstTraverser, node: Any) -> Any:
    """moto's depth-first, bottom-up rewrite of the AST under `node`: the processor of a node is
    the first of `_processing_map` whose class it is an instance of (found once per class), and a
    processed node takes its place in its parent."""
    processors = tuple(self._processing_map().items())
    hook = self.pre_processing_of_child
    plain = type(self).pre_processing_of_child is DepthFirstTraverser.pre_processing_of_child
    chosen: dict[type, Callable[[Any], Any] | None] = {}
    is_node: dict[type, bool] = {}

    def visit(current: Any, child_id: int) -> Any:
        cls = type(current)
        known = is_node.get(cls)
        if known is None:
            known = is_node[cls] = issubclass(cls, Node)
        if not known:
            return current
        parent = current.parent
        children = current.children
        if children is not None:
            for index, child in enumerate(children):
                if not plain:
                    hook(current, index)
                visit(child, index)
        if cls in chosen:
            processor = chosen[cls]
        else:
            processor = chosen[cls] = next((p for k, p in processors if issubclass(cls, k)), None)
        if processor is not None:
            current = processor(current)
            current.parent = parent
            if parent:
                parent.children[child_id] = current
        return current

    return visit(node, -1)


_DESCEND: dict[type, bool] = {}


def _descends(cls: type) -> bool:
    known = _DESCEND.get(cls)
    if known is None:
        known = _DESCEND[cls] = issubclass(cls, (Expression, UpdateExpressionFunction))
    return known


def _find_clauses(self: Node, clause_types: list[type]) -> list[Any]:
    """moto's search for the nodes of `clause_types` among a node's descendants, in order,
    descending through expressions and functions only."""
    clauses: list[Any] = []
    for child in self.children or []:
        cls = type(child)
        if cls in clause_types:
            clauses.append(child)
        elif _descends(cls):
            clauses.extend(_find_clauses(child, clause_types))
    return clauses


# An update expression's AST, per expression: moto's validator rewrites a deep copy of it, never
# the AST itself, and the handler only reads it, so one AST serves every request with that text
# (the store's writes are a handful of texts with different values).
_parsed_update = functools.lru_cache(maxsize=1024)(_moto_make)


class _Handed(threading.local):
    """What a handler parsed in this thread, for its backend to take: the condition's parser (its
    expression, names and values) and the operator tree it parsed."""

    condition: tuple[ConditionExpressionParser, Any] | None = None


_HANDED = _Handed()


class _HandlerConditionParser(ConditionExpressionParser):
    """The handler's condition parser: parses, and hands the operator tree on."""

    def parse(self) -> Any:
        operator = super().parse()
        _HANDED.condition = (self, operator)
        return operator


Names = dict[str, str] | None
Values = dict[str, dict[str, str]] | None


def _handler_condition_parser(expr: str | None, names: Names, values: Values) -> ConditionExpressionParser:
    return _HandlerConditionParser(expr, names, values)


def _backend_condition_parser(expr: str | None, names: Names, values: Values) -> ConditionExpressionParser:
    """The backend's condition parser: the handler's, when it parsed this condition with these very
    names and values objects (an operator tree is only read when evaluated); else a new one."""
    handed = _HANDED.condition
    if handed is not None:
        parser, operator = handed
        if (
            parser.condition_expression == expr
            and parser.expression_attribute_names is names
            and parser.expression_attribute_values is values
        ):
            _HANDED.condition = None
            return _Parsed(parser, operator)
    return _moto_condition_parser(expr, names, values)


class _Parsed(ConditionExpressionParser):
    """A condition parser whose parse is already done."""

    def __init__(self, parsed: ConditionExpressionParser, operator: Any) -> None:
        super().__init__(
            parsed.condition_expression, parsed.expression_attribute_names, parsed.expression_attribute_values
        )
        self.expr_attr_names_found = list(parsed.expr_attr_names_found)
        self.expr_attr_values_found = list(parsed.expr_attr_values_found)
        self._operator = operator

    def parse(self) -> Any:
        return self._operator


def evaluate_expressions_once() -> None:
    """Parse each request's expressions once and walk update ASTs directly (above). Idempotent."""
    DepthFirstTraverser.traverse = _traverse
    Node.find_clauses = _find_clauses
    UpdateExpressionParser.make = staticmethod(_parsed_update)
    moto_responses.create_condition_expression_parser = _handler_condition_parser
    moto_models.create_condition_expression_parser = _backend_condition_parser
    moto_comparisons.create_condition_expression_parser = _backend_condition_parser
