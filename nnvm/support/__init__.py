"""What every room of nnvm shares: errors and diagnostics, IR printing and helpers, the params
store and file format, pass statistics, and the Target and plugin interfaces."""
