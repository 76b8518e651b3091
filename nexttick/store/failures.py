"""What a store call raises when AWS fails it, for the layers above, which never import PynamoDB."""

from __future__ import annotations

from botocore.exceptions import BotoCoreError, ClientError
from pynamodb.exceptions import PynamoDBException

# A failed or unanswered AWS call, raised by botocore directly or wrapped by PynamoDB.
AWS_FAILURES: tuple[type[Exception], ...] = (ClientError, BotoCoreError, PynamoDBException)


def aws_cause(exc: BaseException) -> BaseException:
    """The botocore error behind a store failure (PynamoDB wraps it), else `exc` itself."""
    if isinstance(exc, PynamoDBException) and exc.cause is not None:
        return exc.cause
    return exc
