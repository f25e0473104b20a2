"""An `onnx.backend.base.Backend` over from_onnx + the numpy reference executor, so ONNX's
official backend tests (`onnx.backend.test.BackendTest`) can measure the frontend; and a
compiled mode (`NNVMCompiledBackend`) that builds each model with nnvm.compiler.build and runs
it through the graph runtime, so the same tests measure the whole compiler.

Shapes are static in the graph dialect, so inputs that feed shape/axes/pads positions (and
inputs with symbolic dims) are specialized on: the model is imported when the values arrive,
with those inputs folded as constants, and cached per distinct value."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep
from xdsl.dialects.builtin import ModuleOp

from nnvm.frontend.onnx.importer import (
    MissingShapeError,
    OnnxImportError,
    from_onnx,
)
from nnvm.reference import run_reference
from nnvm.support.ir import argument_names, find_function

Imported = tuple[ModuleOp, dict[str, np.ndarray]]


class NNVMBackendRep(BackendRep):
    """A prepared model: imported once, or per value of its shape-like inputs."""

    def __init__(
        self,
        model: onnx.ModelProto,
        dtype: str = "float32",
        compiled: bool = False,
        opt_level: int = 3,
    ):
        self.model = model
        self.dtype = dtype
        self.compiled = compiled
        self.opt_level = opt_level
        self._runtimes: dict[int, Any] = {}
        initialized = {t.name for t in model.graph.initializer}
        self.input_names = [vi.name for vi in model.graph.input if vi.name not in initialized]
        self.specialize: list[str] = []
        self.shape_from_inputs = False
        self._cache: dict[Any, Imported] = {}
        try:
            self._static: Imported | None = from_onnx(model, dtype=dtype)
        except MissingShapeError:
            self._static = None
            self.shape_from_inputs = True
        except OnnxImportError as err:
            if not err.needs_known_inputs:
                raise
            self._static = None
            self.specialize = list(err.needs_known_inputs)

    def _import_for(self, feed: Mapping[str, np.ndarray]) -> Imported:
        shapes = {n: feed[n].shape for n in self.input_names} if self.shape_from_inputs else None
        while True:
            key = (
                tuple(
                    (n, feed[n].dtype.str, feed[n].shape, feed[n].tobytes())
                    for n in self.specialize
                ),
                tuple(sorted(shapes.items())) if shapes else None,
            )
            cached = self._cache.get(key)
            if cached is not None:
                return cached
            known = {n: feed[n] for n in self.specialize}
            try:
                imported = from_onnx(
                    self.model,
                    shape={k: v for k, v in (shapes or {}).items() if k not in known},
                    dtype=self.dtype,
                    known_inputs=known,
                )
            except OnnxImportError as err:
                more = [n for n in err.needs_known_inputs if n not in self.specialize]
                if not more:
                    raise
                self.specialize += more
                continue
            self._cache[key] = imported
            return imported

    def run(self, inputs: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        """Inputs by position (graph-input order, initializers excluded) or by name."""
        if isinstance(inputs, Mapping):
            feed = {k: np.asarray(v) for k, v in inputs.items()}
        else:
            values = [inputs] if isinstance(inputs, np.ndarray) else list(inputs)
            feed = {n: np.asarray(v) for n, v in zip(self.input_names, values, strict=False)}
        module, params = self._static if self._static is not None else self._import_for(feed)
        names = argument_names(find_function(module, "main"))
        if not self.compiled:
            return tuple(run_reference(module, params, {n: feed[n] for n in names}))
        runtime = self._runtime_for(module, params)
        for info in runtime.graph.inputs:
            runtime.set_input(info["name"], np.asarray(feed[info["name"]], dtype=info["dtype"]))
        runtime.run()
        return tuple(runtime.get_output(k) for k in range(runtime.get_num_outputs()))

    def _runtime_for(self, module: ModuleOp, params: dict[str, np.ndarray]) -> Any:
        """Build once per imported module (specializations each get their own build)."""
        runtime = self._runtimes.get(id(module))
        if runtime is None:
            from nnvm.compiler import build
            from nnvm.runtime import graph_runtime

            graph, lib, built_params = build(module, params=params, opt_level=self.opt_level)
            runtime = graph_runtime.create(graph, lib)
            runtime.set_input(**built_params)
            self._runtimes[id(module)] = runtime
        return runtime


class NNVMBackend(Backend):
    """ONNX backend API entry point: `NNVMBackend.prepare(model).run(inputs)`."""

    @classmethod
    def is_compatible(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> bool:
        return True

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> NNVMBackendRep:
        # No onnx.checker here: the importer reports what it cannot read, with names.
        return NNVMBackendRep(model, dtype=kwargs.get("dtype", "float32"))

    @classmethod
    def run_model(
        cls, model: onnx.ModelProto, inputs: Any, device: str = "CPU", **kwargs: Any
    ) -> tuple[np.ndarray, ...]:
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device == "CPU"


class NNVMCompiledBackend(NNVMBackend):
    """The same backend, but every model is compiled (opt level 3) and run as machine code."""

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str = "CPU", **kwargs: Any) -> NNVMBackendRep:
        return NNVMBackendRep(
            model,
            dtype=kwargs.get("dtype", "float32"),
            compiled=True,
            opt_level=kwargs.get("opt_level", 3),
        )


prepare = NNVMBackend.prepare
run_model = NNVMBackend.run_model
supports_device = NNVMBackend.supports_device


def run(model: onnx.ModelProto, inputs: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
    """Convenience: prepare and run in one call."""
    return NNVMBackend.prepare(model).run(list(inputs))
