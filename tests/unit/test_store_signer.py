"""The light path's SigV4 (nexttick/store/transport.py, `Signer`) writes the Authorization botocore's
`SigV4Auth` writes for the same DynamoDB request at the same instant."""

from __future__ import annotations

from datetime import UTC, datetime
from unittest import mock

import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from nexttick.store.transport import Signer

NOW = datetime(2030, 1, 7, 9, 0, 30, tzinfo=UTC)
BODY = b'{"TableName": "t", "Key": {"pk": {"S": "T#a"}, "sk": {"S": "T"}}}'


@pytest.mark.parametrize("token", [None, "session-token"])
@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("https://dynamodb.eu-west-1.amazonaws.com/", "dynamodb.eu-west-1.amazonaws.com"),
        ("http://127.0.0.1:5000/", "127.0.0.1:5000"),
    ],
)
def test_the_signature_is_botocores(token: str | None, url: str, host: str) -> None:
    headers = {
        "X-Amz-Target": "DynamoDB_20120810.GetItem",
        "Content-Type": "application/x-amz-json-1.0",
        "User-Agent": "Botocore/1  extra  spaces",  # never signed
        "X-Amzn-Trace-Id": "Root=1-abc",  # never signed
    }
    request = AWSRequest(method="POST", url=url, headers=dict(headers), data=BODY)
    with mock.patch("botocore.auth.get_current_datetime", return_value=NOW.replace(tzinfo=None)):
        SigV4Auth(Credentials("AKID", "secret", token), "dynamodb", "eu-west-1").add_auth(request)

    ours = dict(headers)
    Signer("dynamodb", "eu-west-1").sign(ours, host, "/", BODY, ("AKID", "secret", token), now=NOW)

    assert ours["Authorization"] == request.headers["Authorization"]
    assert ours["X-Amz-Date"] == request.headers["X-Amz-Date"]
    assert ours.get("X-Amz-Security-Token") == request.headers.get("X-Amz-Security-Token")


def test_the_derived_key_follows_the_day_and_the_secret() -> None:
    signer = Signer("dynamodb", "us-east-1")
    signatures = []
    for secret, now in [("a", NOW), ("a", NOW), ("b", NOW), ("b", NOW.replace(day=8))]:
        headers = {"Content-Type": "application/x-amz-json-1.0"}
        signer.sign(headers, "h", "/", b"{}", ("AKID", secret, None), now=now.replace(hour=0))
        signatures.append(headers["Authorization"])
    assert signatures[0] == signatures[1]
    assert len(set(signatures)) == 3
