"""The fake filesystem's plugs into other libraries: fsspec (the racefs:// protocol) and torch.serialization."""
