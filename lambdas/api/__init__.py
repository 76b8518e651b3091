"""The API Lambda (API Gateway REST proxy integration)."""
