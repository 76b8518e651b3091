"""The HTTP API: a Powertools REST resolver over the editor library, plus a local API Gateway adapter."""
