"""nnvm: a deep-learning compiler in the spirit of NNVM + TVM, built on xDSL."""

__version__ = "0.1.0"
