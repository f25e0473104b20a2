"""What every room of nnvm shares: errors and diagnostics, IR printing and helpers, the params
store and file format, pass statistics, and the Target and plugin interfaces."""

from nnvm.support import xdsl_fixes as _xdsl_fixes  # noqa: E402,F401  (patches the parser)
