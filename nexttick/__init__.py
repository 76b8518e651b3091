"""nexttick: a serverless scheduler — DynamoDB task queue, one EventBridge rule, a worker Lambda."""
