"""The one codec of the retrieval request (retrieve/request.py): kg retrieve --server encodes, kg serve decodes."""

from __future__ import annotations

import pytest

from processkg.errors import EmptyQueryError, ProcessKGError, RetrievalRequestError
from processkg.retrieve.request import PARAMETERS, RetrievalRequest
from processkg.retrieve.retriever import DEFAULT_HOPS, RetrievalSettings

NOT_DEFAULT = RetrievalRequest(
    "which entity sets follow a purchase requisition?",
    k=12,
    settings=RetrievalSettings("tokens", 3, mapping_edges=False, sequence_edges=False, verify_seeds=True),
    context=True,
)


@pytest.mark.parametrize("request_", [NOT_DEFAULT, RetrievalRequest("sales orders")], ids=["changed", "defaults"])
def test_a_request_survives_its_encoding(request_: RetrievalRequest) -> None:
    params = request_.to_params()
    assert list(params) == list(PARAMETERS) and all(isinstance(v, str) for v in params.values())
    assert RetrievalRequest.from_params(params) == request_


def test_left_out_parameters_take_kg_retrieves_defaults() -> None:
    decoded = RetrievalRequest.from_params({"q": "sales orders"})
    assert decoded == RetrievalRequest("sales orders", 5, RetrievalSettings("hybrid", DEFAULT_HOPS), context=False)
    assert RetrievalRequest.from_params({"q": "x", "verify_seeds": "1", "context": "TRUE"}).settings.verify_seeds


@pytest.mark.parametrize(
    ("params", "error", "line"),
    [
        ({"q": "x", "methdo": "tokens"}, RetrievalRequestError, "unknown parameter 'methdo'; known: q, k, method,"),
        ({"q": "x", "k": "0"}, RetrievalRequestError, "k must be at least 1, not 0"),
        ({"q": "x", "k": "five"}, RetrievalRequestError, "k must be an integer, not 'five'"),
        ({"q": "x", "hops": "1.5"}, RetrievalRequestError, "hops must be an integer, not '1.5'"),
        ({"q": "x", "context": "yes"}, RetrievalRequestError, "context must be true or false, not 'yes'"),
        ({"q": "x", "method": "nope"}, ProcessKGError, "unknown method 'nope'"),
        ({"k": "3"}, EmptyQueryError, "the query is empty"),
    ],
)
def test_a_bad_request_is_one_line_naming_the_parameter(params: dict[str, str], error: type, line: str) -> None:
    with pytest.raises(error) as raised:
        RetrievalRequest.from_params(params)
    assert str(raised.value).startswith(line) and "\n" not in str(raised.value)
