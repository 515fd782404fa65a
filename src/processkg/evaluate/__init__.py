"""Evaluation (``kg eval``): retrieval metrics and paired tests, SOCBench-D, leave-processes-out,
the training of the routed ranker, and the agent on every task under each condition."""
