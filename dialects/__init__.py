"""Dialects of nnvm: `nnvm` (graph level); later `te` (tensor expressions) and target dialects."""
