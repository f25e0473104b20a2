"""Dialects of nnvm: `nnvm` (graph level) and `te` (tensor expressions and schedules); the tools
find them through nnvm.universe."""
