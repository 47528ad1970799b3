"""The local Hub: model and dataset repos, buckets, pull requests and the Xet store behind them."""
